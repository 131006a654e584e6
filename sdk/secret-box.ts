import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { mkdir, open, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Seals and opens secrets. `aad` binds a ciphertext to its record (e.g. the
 * integration id) so ciphertexts can't be swapped between rows.
 */
export interface SecretBox {
  /**
   * Encrypts `plaintext` with a fresh random IV and returns
   * `v1:<keyId>:<iv>:<tag>:<ciphertext>` (base64url parts, plain ASCII, safe
   * to store in any text column). Sealing the same value twice gives
   * different strings.
   */
  seal(plaintext: string, aad?: string): string;
  /**
   * Decrypts a string produced by {@link SecretBox.seal} with the same key and
   * `aad`. Throws when the data was sealed with another key (naming both key
   * ids) and otherwise, on any failure, throws
   * `secret could not be decrypted: wrong encryption key or tampered data`;
   * errors never include the sealed data or the plaintext.
   */
  open(sealed: string, aad?: string): string;
  /**
   * Short non-secret fingerprint of the key (first 8 hex of sha256(key)),
   * stored with each ciphertext so a key change is diagnosable.
   */
  readonly keyId: string;
}

/** Where a key returned by {@link loadEncryptionKey} came from. */
export interface LoadedKey {
  /** The 32-byte AES-256 key. */
  key: Buffer;
  /** `env`: GATEWAY_ENCRYPTION_KEY; `file`: an existing key file; `generated`: a key file created by this call. */
  source: 'env' | 'file' | 'generated';
  /** The key file's path, or null when the key came from the environment. */
  file: string | null;
}

const KEY_BYTES = 32;
// 96-bit IVs are GCM's native size: other lengths are hashed into a counter
// block, which costs more and weakens the random-IV collision bound.
const IV_BYTES = 12;
// Always the full 128-bit tag; a shorter tag makes forgeries cheaper.
const TAG_BYTES = 16;
const VERSION = 'v1';
const KEY_ID_PATTERN = /^[0-9a-f]{8}$/;
const BASE64URL_PATTERN = /^[A-Za-z0-9_-]*$/;
const DECRYPT_FAILED = 'secret could not be decrypted: wrong encryption key or tampered data';
const KEY_FILE_NAME = 'encryption.key';
const ENV_NAME = 'GATEWAY_ENCRYPTION_KEY';
const KEY_FORMS =
  `${ENV_NAME} must be a 32-byte key written as 64 hex characters, or as base64 or base64url ` +
  '(43 characters, optionally followed by one "=" padding character). ' +
  'Generate one with: openssl rand -hex 32';

/**
 * Creates a {@link SecretBox} that encrypts with AES-256-GCM under `key`.
 * Throws when `key` is not exactly 32 bytes.
 */
export function createSecretBox(key: Buffer): SecretBox {
  if (!Buffer.isBuffer(key) || key.length !== KEY_BYTES) {
    throw new Error(`encryption key must be exactly ${KEY_BYTES} bytes`);
  }
  // Own copy, so a caller that later reuses or zeroes its buffer can't change
  // the key under us.
  const ownKey = Buffer.from(key);
  const keyId = fingerprint(ownKey);
  const header = `${VERSION}:${keyId}`;

  // The header goes into the authenticated data too, so the version and key id
  // are covered by the tag rather than being trusted plain text. The header has
  // a fixed shape, so prefixing it keeps the (header, aad) pair unambiguous.
  const additionalData = (aad: string | undefined) => Buffer.from(`${header}:${aad ?? ''}`, 'utf8');

  return {
    keyId,
    seal(plaintext, aad) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', ownKey, iv, { authTagLength: TAG_BYTES });
      cipher.setAAD(additionalData(aad));
      const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      const tag = cipher.getAuthTag();
      return `${header}:${iv.toString('base64url')}:${tag.toString('base64url')}:${ciphertext.toString('base64url')}`;
    },
    open(sealed, aad) {
      const parts = typeof sealed === 'string' ? sealed.split(':') : [];
      if (parts.length !== 5 || parts[0] !== VERSION) throw new Error(DECRYPT_FAILED);
      const [, sealedKeyId, ivText, tagText, ciphertextText] = parts as [string, string, string, string, string];
      if (sealedKeyId !== keyId) {
        // Only echo the id when it has the shape of one: anything else is
        // arbitrary stored data, which errors must not carry.
        if (!KEY_ID_PATTERN.test(sealedKeyId)) throw new Error(DECRYPT_FAILED);
        throw new Error(
          `secret could not be decrypted: it was sealed with encryption key ${sealedKeyId}, ` +
            `but the current key is ${keyId} (was ${ENV_NAME} or ${KEY_FILE_NAME} changed?)`,
        );
      }
      const iv = decodeBase64url(ivText);
      const tag = decodeBase64url(tagText);
      const ciphertext = decodeBase64url(ciphertextText);
      if (iv?.length !== IV_BYTES || tag?.length !== TAG_BYTES || ciphertext === null) throw new Error(DECRYPT_FAILED);
      try {
        const decipher = createDecipheriv('aes-256-gcm', ownKey, iv, { authTagLength: TAG_BYTES });
        decipher.setAAD(additionalData(aad));
        decipher.setAuthTag(tag);
        const plaintext = Buffer.concat([decipher.update(ciphertext), decipher.final()]);
        return plaintext.toString('utf8');
      } catch {
        // Node's own message ("Unsupported state or unable to authenticate
        // data") says nothing useful to an operator; replace it, without a
        // cause, so nothing about the data leaks through error chains.
        throw new Error(DECRYPT_FAILED);
      }
    },
  };
}

/**
 * Parses GATEWAY_ENCRYPTION_KEY: 64 hex chars or base64/base64url of exactly
 * 32 bytes (surrounding whitespace is ignored); anything else throws an Error
 * explaining the accepted forms (never echoing the value).
 */
export function parseEncryptionKey(text: string): Buffer {
  const key = decodeKey(text);
  if (key === null) throw new Error(`invalid ${ENV_NAME}: ${KEY_FORMS}`);
  return key;
}

/**
 * The key from `envValue` (GATEWAY_ENCRYPTION_KEY) when set; otherwise from `<dataDir>/encryption.key`
 * (base64 text), generated on first use with mode 0600 (create with flag 'wx' so two processes racing don't both write;
 * the loser reads the winner's file). An existing file readable by group/other (mode & 0o077) is refused with an
 * error telling the operator to chmod 600 it. Creates dataDir (recursive) when missing. Async fs only.
 *
 * An empty or whitespace-only `envValue` counts as unset, as `GATEWAY_ENCRYPTION_KEY=` in an env file usually means
 * "no value" rather than "an invalid key".
 */
export async function loadEncryptionKey(options: { envValue?: string; dataDir: string }): Promise<LoadedKey> {
  const { envValue, dataDir } = options;
  if (envValue !== undefined && envValue.trim() !== '') {
    return { key: parseEncryptionKey(envValue), source: 'env', file: null };
  }
  await mkdir(dataDir, { recursive: true });
  const file = join(dataDir, KEY_FILE_NAME);

  const existing = await readKeyFile(file);
  if (existing !== null) return { key: existing, source: 'file', file };
  const generated = await createKeyFile(file);
  if (generated !== null) return { key: generated, source: 'generated', file };
  // Another process (or a concurrent call in this one) created the file between
  // our read and our create: use its key, which it may still be writing.
  const winner = await readKeyFile(file);
  if (winner === null) throw new Error(`${file} disappeared while it was being created; start the gateway again`);
  return { key: winner, source: 'file', file };
}

/** Masks a secret for display: '****' + last 4 chars when length >= 12, else '****'. */
export function maskSecret(secret: string): string {
  // Code points, not UTF-16 units, so the tail never ends in half a surrogate pair.
  const chars = Array.from(secret);
  return chars.length >= 12 ? `****${chars.slice(-4).join('')}` : '****';
}

function fingerprint(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 8);
}

/**
 * Strict base64url: Node's decoder silently skips invalid characters and
 * ignores leftover bits, so several strings would decode to the same bytes.
 * Requiring the canonical encoding makes any edit to a stored part an error.
 */
function decodeBase64url(text: string): Buffer | null {
  if (!BASE64URL_PATTERN.test(text)) return null;
  const bytes = Buffer.from(text, 'base64url');
  return bytes.toString('base64url') === text ? bytes : null;
}

/** The 32-byte key written as hex, base64 or base64url, or null. */
function decodeKey(text: string): Buffer | null {
  if (typeof text !== 'string') return null;
  const trimmed = text.trim();
  // Hex first: 64 hex characters are also valid base64 (of 48 bytes).
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) return Buffer.from(trimmed, 'hex');
  // 32 bytes are 43 base64 characters plus one padding "=". One alphabet or
  // the other, not a mix, which would suggest a corrupted value.
  const match = /^([A-Za-z0-9+/]{43}|[A-Za-z0-9_-]{43})=?$/.exec(trimmed);
  if (match === null) return null;
  const body = match[1]!;
  const bytes = Buffer.from(body, 'base64url');
  // The last character carries 2 spare bits; a non-canonical value (spare bits
  // set) is more likely a typo than a key, so refuse it.
  if (bytes.length !== KEY_BYTES || bytes.toString('base64url') !== body.replace(/\+/g, '-').replace(/\//g, '_')) return null;
  return bytes;
}

// How long a reader waits for a key file that another process has created
// but not yet finished writing.
const PARTIAL_FILE_RETRIES = 40;
const PARTIAL_FILE_DELAY_MS = 25;

/**
 * The key in `file`, or null when it doesn't exist. Refuses a file that group
 * or others can read, and one whose content is not a key.
 */
async function readKeyFile(file: string): Promise<Buffer | null> {
  for (let attempt = 0; ; attempt++) {
    let handle: FileHandle;
    try {
      handle = await open(file, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    let key: Buffer | null;
    try {
      // fstat on the open handle, so the mode checked is that of the file read.
      const stats = await handle.stat();
      if (!stats.isFile()) throw new Error(`${file} is not a regular file`);
      // Windows has no POSIX mode bits; stat reports made-up values there.
      if (process.platform !== 'win32' && (stats.mode & 0o077) !== 0) {
        const mode = (stats.mode & 0o777).toString(8).padStart(4, '0');
        throw new Error(
          `${file} holds the gateway's encryption key but is readable by group or others (mode ${mode}); ` +
            `restrict it with: chmod 600 ${file}`,
        );
      }
      key = decodeKey(await handle.readFile('utf8'));
    } finally {
      await handle.close();
    }
    if (key !== null) return key;
    // Empty or incomplete: most likely a racing process is between creating
    // the file and writing it. Give it a moment before calling the file bad.
    if (attempt >= PARTIAL_FILE_RETRIES) {
      throw new Error(
        `${file} does not contain a valid encryption key (expected 32 bytes as base64). ` +
          'If it is empty and no secrets were stored yet, delete it and a new key is generated; ' +
          'otherwise restore it from a backup, as secrets sealed with the lost key cannot be decrypted.',
      );
    }
    await new Promise((resolve) => setTimeout(resolve, PARTIAL_FILE_DELAY_MS));
  }
}

/**
 * Creates `file` holding a fresh key, or returns null when the file already
 * exists. 'wx' (O_CREAT | O_EXCL) makes creation atomic, so of two racing
 * processes exactly one writes a key and the other reads it.
 */
async function createKeyFile(file: string): Promise<Buffer | null> {
  let handle: FileHandle;
  try {
    handle = await open(file, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return null;
    throw err;
  }
  const key = randomBytes(KEY_BYTES);
  try {
    // The creation mode is filtered through the umask; set it explicitly so
    // the file ends up exactly 0600 whatever the umask is.
    if (process.platform !== 'win32') await handle.chmod(0o600);
    await handle.writeFile(`${key.toString('base64')}\n`, 'utf8');
    // Flush to disk before anything is sealed with this key: losing the key
    // file in a crash would make those secrets unrecoverable.
    await handle.sync();
  } catch (err) {
    await handle.close().catch(() => undefined);
    // Don't leave an empty file behind, which would block every later start.
    await unlink(file).catch(() => undefined);
    throw err;
  }
  await handle.close();
  return key;
}
