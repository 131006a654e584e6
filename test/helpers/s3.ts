import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';

/**
 * A local S3-compatible server (s3rver, a dev dependency: it installs from npm
 * and runs on Node 20 with nothing downloaded), with one bucket, on loopback.
 */
export async function startS3(bucket = 'gateway-files'): Promise<{ endpoint: string; bucket: string; credentials: { accessKeyId: string; secretAccessKey: string }; close(): Promise<void> }> {
  const directory = await mkdtemp(join(tmpdir(), 'gw-s3-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, resetOnClose: true, configureBuckets: [{ name: bucket }] });
  const { port } = await server.run();
  return { endpoint: `http://127.0.0.1:${port}`, bucket, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' }, close: () => server.close() };
}
