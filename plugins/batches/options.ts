import * as v from 'valibot';

const int = (min: number) => v.pipe(v.number(), v.integer(), v.minValue(min, `must be an integer of at least ${min}`));

const S3Schema = v.strictObject({
  bucket: v.pipe(v.string(), v.minLength(3, 'must name the bucket')),
  /** Prefix of every key, e.g. `gateway/files/`. */
  prefix: v.optional(v.string(), ''),
  region: v.optional(v.string(), 'us-east-1'),
  /** An S3-compatible endpoint (MinIO, R2, …); default AWS's. */
  endpoint: v.optional(v.pipe(v.string(), v.url('must be a URL'))),
  /** Path-style addressing, which most S3-compatible servers need. Default: true with an endpoint, false without. */
  forcePathStyle: v.optional(v.boolean()),
  /** Default: the AWS SDK's credential chain (AWS_ACCESS_KEY_ID…, a profile, an instance role). */
  accessKeyId: v.optional(v.string()),
  secretAccessKey: v.optional(v.string()),
  /** Where uploads are written while they arrive. Default: the system's temp directory. */
  tmpDir: v.optional(v.string()),
});

export const OptionsSchema = v.strictObject({
  /** The SQL store in `api.stores` (the `sqlite` or `postgres` plugin, listed before this one). Default `sql`. */
  store: v.optional(v.string(), 'sql'),
  /** The data directory (the server passes GATEWAY_DATA_DIR): default home of the files and the encryption key. */
  dataDir: v.optional(v.string(), './data'),
  /** GATEWAY_ENCRYPTION_KEY, which seals the credentials a batch keeps (else `<dataDir>/encryption.key`, shared with the control plane). */
  encryptionKey: v.optional(v.string()),
  /** Where the gateway keeps files: a directory (default `<dataDir>/files`) or an S3-compatible bucket. */
  files: v.optional(
    v.strictObject({
      dir: v.optional(v.string()),
      s3: v.optional(S3Schema),
    }),
    {},
  ),
  /** Largest upload, in bytes. Default 200 MiB (OpenAI's limit for a batch input file). */
  maxFileBytes: v.optional(int(1), 200 * 1024 * 1024),
  /** Longest line of a JSONL file, in bytes. Default 8 MiB. */
  maxLineBytes: v.optional(int(64), 8 * 1024 * 1024),
  /** Most requests in one batch file. Default 50 000, as OpenAI. */
  maxBatchLines: v.optional(int(1), 50_000),
  /** Lines of gateway-run batches in flight at once on one instance. Default 8. */
  concurrency: v.optional(int(1), 8),
  /** How long a claim on a line or a batch holds without renewal, in ms. Default 60 000. */
  leaseMs: v.optional(int(50), 60_000),
  /** How often an idle instance looks at the queue, in ms. Default 1000. */
  pollMs: v.optional(int(10), 1000),
  /** On shutdown, how long lines in flight may finish before they are handed back, in ms. Default 5000. */
  drainMs: v.optional(int(0), 5000),
  /** A line claimed this many times without an outcome (its instance died each time) fails. Default 3. */
  maxLineRuns: v.optional(int(1), 3),
  /** Run gateway batches on this instance. Default true; false serves the API and leaves the work to other instances. */
  worker: v.optional(v.boolean(), true),
  /** Clock in epoch ms, for tests (expiry, leases). */
  now: v.optional(v.custom<() => number>((f) => typeof f === 'function', 'must be a function')),
});

export type BatchesOptions = v.InferInput<typeof OptionsSchema>;
export type ParsedOptions = v.InferOutput<typeof OptionsSchema>;
