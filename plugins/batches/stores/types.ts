import type { Readable } from 'node:stream';

/**
 * Where the gateway keeps the files it holds itself (uploads for providers
 * without a files API, batch outputs): a directory beside the SQLite file, or
 * an S3-compatible bucket that several instances share. Keys are file ids.
 */
export interface FileStore {
  readonly kind: 'local' | 's3';
  /** Directory for uploads in progress: on the store's own filesystem for `local`, so `put` is a rename. */
  readonly tmpDir: string;
  /** Moves a finished temp file of `bytes` bytes into the store under `key`; the temp file is gone afterwards. */
  put(key: string, tempPath: string, bytes: number): Promise<void>;
  /** The object's bytes as a stream. */
  read(key: string): Promise<Readable>;
  /** `length` bytes from `offset`, read whole (one batch line). */
  readRange(key: string, offset: number, length: number): Promise<Buffer>;
  /** Removes the object; a missing one is not an error. */
  delete(key: string): Promise<void>;
  close(): void;
}

const KEY = /^[A-Za-z0-9][A-Za-z0-9_-]{0,200}$/;

/** Keys are ids the gateway made; anything else is a bug, refused before it reaches a path or a bucket. */
export function checkKey(key: string): string {
  if (!KEY.test(key)) throw new Error(`file store: invalid key "${key.slice(0, 64)}"`);
  return key;
}
