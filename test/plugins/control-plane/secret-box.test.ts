import { createHash, randomBytes } from 'node:crypto';
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import {
  createSecretBox,
  loadEncryptionKey,
  maskSecret,
  parseEncryptionKey,
} from '../../../sdk/secret-box.js';

const DECRYPT_FAILED = 'secret could not be decrypted: wrong encryption key or tampered data';
const posixOnly = process.platform === 'win32' ? test.skip : test;

/** Replaces one character of `text` at `index` with a different base64url character. */
function flipChar(text: string, index: number): string {
  const replacement = text[index] === 'A' ? 'B' : 'A';
  return text.slice(0, index) + replacement + text.slice(index + 1);
}

describe('createSecretBox', () => {
  const box = createSecretBox(randomBytes(32));

  test('round-trips ASCII, unicode and the empty string', () => {
    for (const plaintext of ['sk-live-0123456789abcdef', 'pässwörd 🔑 秘密', '']) {
      const sealed = box.seal(plaintext);
      expect(box.open(sealed)).toBe(plaintext);
      expect(box.open(box.seal(plaintext, 'integration-1'), 'integration-1')).toBe(plaintext);
    }
  });

  test('produces the documented ASCII format', () => {
    const sealed = box.seal('secret');
    expect(sealed).toMatch(/^v1:[0-9a-f]{8}:[A-Za-z0-9_-]{16}:[A-Za-z0-9_-]{22}:[A-Za-z0-9_-]+$/);
    expect(sealed.split(':')[1]).toBe(box.keyId);
    expect(sealed).not.toContain('secret');
  });

  test('keyId is the first 8 hex characters of sha256(key)', () => {
    const key = Buffer.alloc(32, 7);
    expect(createSecretBox(key).keyId).toBe(createHash('sha256').update(key).digest('hex').slice(0, 8));
  });

  test('two seals of one plaintext differ', () => {
    const a = box.seal('same value', 'row');
    const b = box.seal('same value', 'row');
    expect(a).not.toBe(b);
    expect(a.split(':')[2]).not.toBe(b.split(':')[2]);
  });

  test('tampering with any part fails', () => {
    const sealed = box.seal('a credential worth protecting', 'row-1');
    const parts = sealed.split(':');
    const tampered: string[] = [
      ['v2', ...parts.slice(1)].join(':'),
      ...[2, 3, 4].flatMap((i) => [
        // First and last character of each encoded part: the last one also
        // checks that non-canonical encodings are refused.
        parts.map((p, j) => (j === i ? flipChar(p, 0) : p)).join(':'),
        parts.map((p, j) => (j === i ? flipChar(p, p.length - 1) : p)).join(':'),
        parts.map((p, j) => (j === i ? p.slice(0, -2) : p)).join(':'),
        parts.map((p, j) => (j === i ? `${p}AA` : p)).join(':'),
        parts.map((p, j) => (j === i ? `${p}!` : p)).join(':'),
      ]),
      sealed.slice(0, -1),
      `${sealed}:extra`,
      parts.slice(0, 4).join(':'),
      '',
      'garbage',
    ];
    for (const value of tampered) {
      expect(value).not.toBe(sealed);
      expect(() => box.open(value, 'row-1'), value).toThrow(DECRYPT_FAILED);
    }
  });

  test('a tampered key id is not echoed when it does not look like one', () => {
    const parts = box.seal('x').split(':');
    parts[1] = 'sk-live-leaked';
    expect(() => box.open(parts.join(':'))).toThrow(DECRYPT_FAILED);
  });

  test('a different key fails', () => {
    const sealed = box.seal('secret');
    const other = createSecretBox(randomBytes(32));
    // Force the key ids to agree so the cryptographic check itself is exercised.
    const forged = ['v1', other.keyId, ...sealed.split(':').slice(2)].join(':');
    expect(() => other.open(forged)).toThrow(DECRYPT_FAILED);
  });

  test('a key id mismatch says the data was sealed with another key', () => {
    const sealed = box.seal('secret');
    const other = createSecretBox(randomBytes(32));
    let message = '';
    try {
      other.open(sealed);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain(box.keyId);
    expect(message).toContain(other.keyId);
    expect(message).toMatch(/sealed with encryption key/);
    expect(message).not.toContain(sealed.split(':')[4]);
  });

  test('aad mismatch fails', () => {
    const sealed = box.seal('secret', 'integration-a');
    expect(() => box.open(sealed, 'integration-b')).toThrow(DECRYPT_FAILED);
    expect(() => box.open(sealed)).toThrow(DECRYPT_FAILED);
    expect(() => box.open(box.seal('secret'), 'integration-a')).toThrow(DECRYPT_FAILED);
  });

  test('errors never include the plaintext', () => {
    const sealed = box.seal('super-secret-value', 'a');
    try {
      box.open(sealed, 'b');
      expect.unreachable();
    } catch (err) {
      expect(String((err as Error).message)).not.toContain('super-secret-value');
      expect((err as Error).cause).toBeUndefined();
    }
  });

  test('rejects keys that are not 32 bytes', () => {
    expect(() => createSecretBox(randomBytes(16))).toThrow(/32 bytes/);
    expect(() => createSecretBox(randomBytes(33))).toThrow(/32 bytes/);
    expect(() => createSecretBox(Buffer.alloc(0))).toThrow(/32 bytes/);
  });

  test('copies the key, so later changes to the caller buffer do not matter', () => {
    const key = randomBytes(32);
    const own = createSecretBox(key);
    const sealed = own.seal('value');
    key.fill(0);
    expect(own.open(sealed)).toBe('value');
  });
});

describe('parseEncryptionKey', () => {
  const key = randomBytes(32);

  test('accepts hex, base64 and base64url of 32 bytes', () => {
    expect(parseEncryptionKey(key.toString('hex'))).toEqual(key);
    expect(parseEncryptionKey(key.toString('hex').toUpperCase())).toEqual(key);
    expect(parseEncryptionKey(key.toString('base64'))).toEqual(key);
    expect(parseEncryptionKey(key.toString('base64').replace(/=$/, ''))).toEqual(key);
    expect(parseEncryptionKey(key.toString('base64url'))).toEqual(key);
    expect(parseEncryptionKey(`  ${key.toString('base64')}\n`)).toEqual(key);
  });

  test('accepts keys that use the alphabet-specific characters', () => {
    const special = Buffer.alloc(32, 0xff); // encodes to "////..." / "____..."
    expect(parseEncryptionKey(special.toString('base64'))).toEqual(special);
    expect(parseEncryptionKey(special.toString('base64url'))).toEqual(special);
  });

  test('rejects wrong lengths and garbage without echoing the input', () => {
    const bad = [
      '',
      '   ',
      randomBytes(16).toString('hex'),
      randomBytes(31).toString('hex'),
      `${key.toString('hex')}00`,
      randomBytes(16).toString('base64'),
      randomBytes(31).toString('base64'),
      randomBytes(33).toString('base64'),
      randomBytes(48).toString('base64'),
      `${key.toString('base64').slice(0, 43)}==`,
      `${key.toString('base64').slice(0, 42)}!`,
      'correct horse battery staple correct horse',
      'not-a-key-at-all-but-long-enough-to-be-mistaken-for-one-0000',
      key.toString('hex').replace(/^./, 'g'),
    ];
    for (const value of bad) {
      let message = '';
      expect(() => {
        try {
          parseEncryptionKey(value);
        } catch (err) {
          message = (err as Error).message;
          throw err;
        }
      }, value).toThrow(/64 hex characters.*base64/);
      if (value.trim() !== '') expect(message).not.toContain(value.trim());
    }
  });

  test('rejects a base64 key with non-zero spare bits', () => {
    // 43 characters carry 258 bits; the last character's low 2 bits must be 0.
    const canonical = key.toString('base64url');
    const last = canonical[42]!;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const nonCanonical = canonical.slice(0, 42) + alphabet[alphabet.indexOf(last) | 1]!;
    expect(() => parseEncryptionKey(nonCanonical)).toThrow(/64 hex characters/);
  });

  test('rejects mixed base64 and base64url alphabets', () => {
    const mixed = `+_${key.toString('base64url').slice(2)}`;
    expect(() => parseEncryptionKey(mixed)).toThrow(/64 hex characters/);
  });
});

describe('loadEncryptionKey', () => {
  const dirs: string[] = [];
  async function tempDir(): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'secret-box-'));
    dirs.push(dir);
    return dir;
  }
  afterEach(async () => {
    await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
  });

  test('the environment wins over the file', async () => {
    const dataDir = await tempDir();
    const generated = await loadEncryptionKey({ dataDir });
    const envKey = randomBytes(32);
    const loaded = await loadEncryptionKey({ envValue: envKey.toString('hex'), dataDir });
    expect(loaded).toEqual({ key: envKey, source: 'env', file: null });
    expect(loaded.key).not.toEqual(generated.key);
  });

  test('an invalid environment value throws and does not fall back to the file', async () => {
    const dataDir = await tempDir();
    await expect(loadEncryptionKey({ envValue: 'too-short', dataDir })).rejects.toThrow(/GATEWAY_ENCRYPTION_KEY/);
  });

  test('an empty environment value counts as unset', async () => {
    const dataDir = await tempDir();
    const loaded = await loadEncryptionKey({ envValue: '', dataDir });
    expect(loaded.source).toBe('generated');
  });

  posixOnly('generates a 0600 key file on first use and reuses it', async () => {
    const dataDir = join(await tempDir(), 'nested', 'data');
    const first = await loadEncryptionKey({ dataDir });
    const file = join(dataDir, 'encryption.key');
    expect(first.source).toBe('generated');
    expect(first.file).toBe(file);
    expect(first.key).toHaveLength(32);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(Buffer.from((await readFile(file, 'utf8')).trim(), 'base64')).toEqual(first.key);

    const second = await loadEncryptionKey({ dataDir });
    expect(second).toEqual({ key: first.key, source: 'file', file });
  });

  posixOnly('refuses a key file readable by group or others', async () => {
    const dataDir = await tempDir();
    const file = join(dataDir, 'encryption.key');
    const secretText = randomBytes(32).toString('base64');
    await writeFile(file, secretText);
    await chmod(file, 0o644);
    const error = await loadEncryptionKey({ dataDir }).then(
      () => null,
      (err: Error) => err,
    );
    expect(error?.message).toMatch(/chmod 600/);
    expect(error?.message).toContain(file);
    expect(error?.message).not.toContain(secretText);

    await chmod(file, 0o600);
    expect((await loadEncryptionKey({ dataDir })).key).toEqual(Buffer.from(secretText, 'base64'));
  });

  test('two concurrent loads in a fresh directory agree on one key', async () => {
    const dataDir = join(await tempDir(), 'fresh');
    const results = await Promise.all([loadEncryptionKey({ dataDir }), loadEncryptionKey({ dataDir })]);
    expect(results[0].key).toEqual(results[1].key);
    expect(results.map((r) => r.source).sort()).toEqual(['file', 'generated']);
    const onDisk = Buffer.from((await readFile(join(dataDir, 'encryption.key'), 'utf8')).trim(), 'base64');
    expect(onDisk).toEqual(results[0].key);
  });

  test('a key file with invalid content is reported, not overwritten', async () => {
    const dataDir = await tempDir();
    const file = join(dataDir, 'encryption.key');
    await writeFile(file, 'not a key', { mode: 0o600 });
    await expect(loadEncryptionKey({ dataDir })).rejects.toThrow(/does not contain a valid encryption key/);
    expect(await readFile(file, 'utf8')).toBe('not a key');
  });
});

describe('maskSecret', () => {
  test('shows only the last 4 characters of long secrets', () => {
    expect(maskSecret('sk-abcdefgh1234')).toBe('****1234');
    expect(maskSecret('123456789012')).toBe('****9012');
  });

  test('hides short secrets entirely', () => {
    expect(maskSecret('')).toBe('****');
    expect(maskSecret('abc')).toBe('****');
    expect(maskSecret('12345678901')).toBe('****');
  });
});

