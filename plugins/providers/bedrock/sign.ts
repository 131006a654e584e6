import { createRequire } from 'node:module';
import type { Sha256 as Sha256Type } from '@aws-crypto/sha256-js';
import type { SignatureV4 } from '@smithy/signature-v4';

/**
 * AWS Signature Version 4 for Bedrock requests (shared/providers/bedrock.md §2b),
 * done by `@smithy/signature-v4` with `@aws-crypto/sha256-js`. Signers are
 * cached per credential set and region (a signer caches its signing keys per day).
 */

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface SignInput {
  method: string;
  /** Absolute URL as it will be sent; its path must already be percent-encoded (model ids: `:` → `%3A`). */
  url: string;
  /** Extra headers to sign (e.g. content-type). `host` is always signed, from the URL. */
  headers?: Record<string, string>;
  body: Buffer | string | null;
  credentials: AwsCredentials;
  region: string;
  /** Signing name: `bedrock` for bedrock-runtime and bedrock-agent-runtime. */
  service?: string;
  /** Signing time (default now). */
  date?: Date;
  /** Sign `x-amz-content-sha256` too (default true, as the AWS SDKs do for Bedrock). */
  applyChecksum?: boolean;
}

const require = createRequire(import.meta.url);
/** The signing libraries, loaded on the first signature: a gateway that never calls Bedrock never holds them (a few MB). */
let signing: { SignatureV4: typeof SignatureV4; Sha256: typeof Sha256Type } | null = null;
function signingLibraries(): NonNullable<typeof signing> {
  signing ??= {
    SignatureV4: (require('@smithy/signature-v4') as typeof import('@smithy/signature-v4')).SignatureV4,
    Sha256: (require('@aws-crypto/sha256-js') as typeof import('@aws-crypto/sha256-js')).Sha256,
  };
  return signing;
}

const MAX_SIGNERS = 256;
const signers = new Map<string, SignatureV4>();

function signerFor(credentials: AwsCredentials, region: string, service: string, applyChecksum: boolean): SignatureV4 {
  // The secret is part of the key only inside this process's memory, never logged.
  const key = [credentials.accessKeyId, credentials.secretAccessKey, credentials.sessionToken ?? '', region, service, applyChecksum ? '1' : '0'].join('\n');
  let signer = signers.get(key);
  if (signer === undefined) {
    if (signers.size >= MAX_SIGNERS) signers.delete(signers.keys().next().value!);
    const { SignatureV4, Sha256 } = signingLibraries();
    signer = new SignatureV4({ credentials, region, service, sha256: Sha256, applyChecksum, uriEscapePath: true });
    signers.set(key, signer);
  }
  return signer;
}

/**
 * Signs a request and returns the headers to send with it: `authorization`,
 * `x-amz-date`, `x-amz-content-sha256` (with `applyChecksum`),
 * `x-amz-security-token` (with a session token) and the extra headers given.
 * `host` is signed but not returned: the HTTP client derives the same value from the URL.
 */
export async function signRequest(input: SignInput): Promise<Record<string, string>> {
  const url = new URL(input.url);
  const query: Record<string, string | string[]> = {};
  for (const [k, v] of url.searchParams) {
    const prev = query[k];
    query[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  const headers: Record<string, string> = { ...(input.headers ?? {}), host: url.host };
  const signer = signerFor(input.credentials, input.region, input.service ?? 'bedrock', input.applyChecksum ?? true);
  const signed = await signer.sign(
    {
      method: input.method,
      protocol: url.protocol,
      hostname: url.hostname,
      port: url.port === '' ? undefined : Number(url.port),
      path: url.pathname,
      query,
      headers,
      body: input.body ?? undefined,
    },
    { signingDate: input.date ?? new Date() },
  );
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(signed.headers)) if (k.toLowerCase() !== 'host') out[k.toLowerCase()] = String(v);
  return out;
}
