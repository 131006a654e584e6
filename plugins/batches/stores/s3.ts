import { createReadStream } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import type { Readable } from 'node:stream';
import { checkKey, type FileStore } from './types.js';

/** Where and how to reach the bucket. Credentials fall back to the AWS SDK's default chain (environment, profile, instance role). */
export interface S3StoreOptions {
  bucket: string;
  /** Prefix of every key, e.g. `gateway/files/`. */
  prefix: string;
  region: string;
  /** An S3-compatible endpoint (MinIO, R2, a local test server); default AWS's. */
  endpoint?: string;
  /** Path-style URLs (`endpoint/bucket/key`), which most S3-compatible servers need. */
  forcePathStyle: boolean;
  accessKeyId?: string;
  secretAccessKey?: string;
  /** Directory for uploads in progress (default the system's temp directory). */
  tmpDir?: string;
}

/**
 * Files in an S3-compatible bucket, through the AWS SDK's S3 client (loaded
 * on first use: a gateway that keeps its files on disk never loads it). An
 * upload is validated into a temp file first, then put with its length, so
 * nothing is held whole in memory and a bad upload never reaches the bucket.
 */
export async function s3FileStore(options: S3StoreOptions): Promise<FileStore> {
  const s3 = await import('@aws-sdk/client-s3');
  const credentials = options.accessKeyId !== undefined && options.secretAccessKey !== undefined ? { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey } : undefined;
  const client = new s3.S3Client({
    region: options.region,
    forcePathStyle: options.forcePathStyle,
    // Checksums only where S3 requires them: the SDK's default sends streamed bodies aws-chunked with a trailing
    // CRC, which many S3-compatible servers store as it is (framing and all) instead of decoding.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
    ...(credentials === undefined ? {} : { credentials }),
  });
  const Key = (key: string) => options.prefix + checkKey(key);
  return {
    kind: 's3',
    tmpDir: options.tmpDir ?? tmpdir(),
    async put(key, tempPath, bytes) {
      try {
        await client.send(new s3.PutObjectCommand({ Bucket: options.bucket, Key: Key(key), Body: createReadStream(tempPath), ContentLength: bytes }));
      } finally {
        await unlink(tempPath).catch(() => undefined);
      }
    },
    async read(key) {
      const out = await client.send(new s3.GetObjectCommand({ Bucket: options.bucket, Key: Key(key) }));
      return out.Body as Readable;
    },
    async readRange(key, offset, length) {
      const out = await client.send(new s3.GetObjectCommand({ Bucket: options.bucket, Key: Key(key), Range: `bytes=${offset}-${offset + length - 1}` }));
      return Buffer.from(await out.Body!.transformToByteArray());
    },
    async delete(key) {
      await client.send(new s3.DeleteObjectCommand({ Bucket: options.bucket, Key: Key(key) }));
    },
    close() {
      client.destroy();
    },
  };
}
