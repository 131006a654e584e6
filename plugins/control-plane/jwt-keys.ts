import { createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';

/*
 * The keys a JWT verifier trusts: PEM public keys and certificates, and JWKS
 * documents, checked when the gateway starts so that a bad key fails the boot
 * with a message naming it. node:crypto parses them (it tells a key's type,
 * curve and size, which those messages give); `jose` verifies with the
 * resulting key objects (jwt.ts).
 */

/** The signature algorithms a verifier can accept. */
export type JwtAlgorithm = 'RS256' | 'ES256';

export type KeyKind = 'rsa' | 'ec-p256';

/** A configured key, as key selection sees it. */
export interface VerificationKey {
  readonly kid: string | undefined;
  /** From a JWK's `alg`: the only algorithm this key may verify. */
  readonly alg: JwtAlgorithm | undefined;
  readonly kind: KeyKind;
  readonly key: KeyObject;
}

export const ALL_ALGORITHMS: readonly JwtAlgorithm[] = ['RS256', 'ES256'];
export const KIND_FOR_ALG: Readonly<Record<JwtAlgorithm, KeyKind>> = { RS256: 'rsa', ES256: 'ec-p256' };
export const KIND_LABEL: Readonly<Record<KeyKind, string>> = { rsa: 'an RSA key', 'ec-p256': 'an EC P-256 key' };
// RFC 7518 §3.3: RS256 keys must be at least 2048 bits.
const MIN_RSA_BITS = 2048;
const PRIVATE_PEM = /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/;

/** The configured keys; at least one (PEM or JWKS) is required. */
export interface KeySources {
  /**
   * PEM public keys (SPKI "PUBLIC KEY" or X.509 certificate), optionally with
   * a kid. A key without a kid also verifies tokens whose kid matches no
   * configured key.
   */
  publicKeys?: ReadonlyArray<{ kid?: string; pem: string }>;
  /**
   * A JWKS document (`{ keys: [...] }`) with RSA and EC P-256 keys; `kid` is
   * used for selection, and `alg`/`use`/`key_ops` are honoured when present.
   * Keys of other types, curves or algorithms, or not meant for signatures,
   * are skipped.
   */
  jwks?: { keys: ReadonlyArray<Record<string, unknown>> };
}

/** Imports every configured key; throws an `Error` naming a bad one, or when none is usable. */
export function importKeys(options: KeySources): VerificationKey[] {
  if (!isPlainObject(options)) throw new Error('JWT verifier: options must be an object');
  const keys: VerificationKey[] = [];
  const { publicKeys, jwks } = options;
  if (publicKeys !== undefined) {
    if (!Array.isArray(publicKeys)) throw new Error('JWT verifier: publicKeys must be an array');
    publicKeys.forEach((entry: unknown, index) => keys.push(withPrefix(() => importPem(entry, index))));
  }
  let skipped = 0;
  if (jwks !== undefined) {
    if (!isPlainObject(jwks) || !Array.isArray(jwks.keys)) throw new Error('JWT verifier: jwks must be an object with a "keys" array');
    jwks.keys.forEach((jwk: unknown, index) => {
      const where = `jwks.keys[${index}]`;
      if (!isPlainObject(jwk)) throw new Error(`JWT verifier: ${where} is not an object`);
      const entry = withPrefix(() => importJwk(jwk, where));
      if (entry === undefined) skipped++;
      else keys.push(entry);
    });
  }
  if (keys.length === 0) {
    throw new Error(
      skipped > 0
        ? `JWT verifier: none of the ${skipped} JWKS keys is an RSA or EC P-256 signing key for RS256 or ES256`
        : 'JWT verifier: no keys configured; give publicKeys or jwks',
    );
  }
  return keys;
}

/**
 * Reads a JWKS JSON file and checks it: a JSON object with a `keys` array of
 * objects, every RSA/EC key importable, and at least one key usable for
 * RS256 or ES256. Throws an `Error` naming the file when it is unreadable,
 * not JSON, or not such a JWKS.
 */
export async function loadJwksFile(path: string): Promise<{ keys: Record<string, unknown>[] }> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new Error(`cannot read JWKS file ${path}: ${errorMessage(err)}`, { cause: err });
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (err) {
    throw new Error(`JWKS file ${path} is not valid JSON: ${errorMessage(err)}`, { cause: err });
  }
  if (!isPlainObject(document) || !Array.isArray(document.keys)) {
    throw new Error(`JWKS file ${path} is not a JWKS: expected a JSON object with a "keys" array`);
  }
  const keys: Record<string, unknown>[] = [];
  let usable = 0;
  for (const [index, jwk] of document.keys.entries()) {
    if (!isPlainObject(jwk)) throw new Error(`JWKS file ${path}: keys[${index}] is not an object`);
    try {
      if (importJwk(jwk, `keys[${index}]`) !== undefined) usable++;
    } catch (err) {
      throw new Error(`JWKS file ${path}: ${errorMessage(err)}`, { cause: err });
    }
    keys.push(jwk);
  }
  if (usable === 0) throw new Error(`JWKS file ${path} has no RSA or EC P-256 signing key usable for RS256 or ES256`);
  return { keys };
}

function importPem(entry: unknown, index: number): VerificationKey {
  let where = `publicKeys[${index}]`;
  if (!isPlainObject(entry) || typeof entry.pem !== 'string') throw new Error(`${where} must be an object with a "pem" string`);
  const kid = entry.kid;
  if (kid !== undefined && (typeof kid !== 'string' || kid === '')) throw new Error(`${where}.kid must be a non-empty string`);
  if (kid !== undefined) where += ` (kid ${quote(kid)})`;
  // createPublicKey would happily derive the public half, but a private key
  // in verifier configuration means a secret is somewhere it should not be.
  if (PRIVATE_PEM.test(entry.pem)) throw new Error(`${where} is a private key; configure the public key or certificate`);
  let key: KeyObject;
  try {
    // An SPKI "PUBLIC KEY" or an X.509 certificate (its subject's key).
    key = createPublicKey(entry.pem);
  } catch (err) {
    throw new Error(`${where} is not a PEM public key or X.509 certificate: ${errorMessage(err)}`, { cause: err });
  }
  return { kid, alg: undefined, kind: keyKind(key, where), key };
}

/** Imports one JWK; undefined when the key is legitimately not ours to use (other type, curve, algorithm or use). */
function importJwk(jwk: Record<string, unknown>, where: string): VerificationKey | undefined {
  const { kty, kid, alg, use } = jwk;
  if (typeof kty !== 'string') throw new Error(`${where} has no "kty"`);
  if (kid !== undefined && (typeof kid !== 'string' || kid === '')) throw new Error(`${where}.kid must be a non-empty string`);
  const label = kid === undefined ? where : `${where} (kid ${quote(kid)})`;
  if (alg !== undefined && typeof alg !== 'string') throw new Error(`${label}.alg must be a string`);
  if (use !== undefined && typeof use !== 'string') throw new Error(`${label}.use must be a string`);
  if (use !== undefined && use !== 'sig') return undefined;
  if (jwk.key_ops !== undefined && !(Array.isArray(jwk.key_ops) && jwk.key_ops.includes('verify'))) return undefined;
  if (alg !== undefined && !isAlgorithm(alg)) return undefined;

  let kind: KeyKind;
  let publicJwk: JsonWebKey;
  // Only the public members are passed on: a JWKS that leaks "d" must not
  // turn into a private key object here.
  if (kty === 'RSA') {
    if (typeof jwk.n !== 'string' || typeof jwk.e !== 'string') throw new Error(`${label} is an RSA key without "n" and "e" strings`);
    kind = 'rsa';
    publicJwk = { kty, n: jwk.n, e: jwk.e };
  } else if (kty === 'EC') {
    if (jwk.crv !== 'P-256') return undefined;
    if (typeof jwk.x !== 'string' || typeof jwk.y !== 'string') throw new Error(`${label} is an EC key without "x" and "y" strings`);
    kind = 'ec-p256';
    publicJwk = { kty, crv: jwk.crv, x: jwk.x, y: jwk.y };
  } else {
    return undefined;
  }
  if (alg !== undefined && KIND_FOR_ALG[alg] !== kind) throw new Error(`${label} has alg ${alg} but is ${KIND_LABEL[kind]}`);

  let key: KeyObject;
  try {
    key = createPublicKey({ key: publicJwk, format: 'jwk' });
  } catch (err) {
    throw new Error(`${label} is not a valid ${kty} key: ${errorMessage(err)}`, { cause: err });
  }
  return { kid, alg, kind: keyKind(key, label), key };
}

function keyKind(key: KeyObject, where: string): KeyKind {
  const type = key.asymmetricKeyType;
  if (type === 'rsa') {
    const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
    if (bits < MIN_RSA_BITS) throw new Error(`${where} is a ${bits}-bit RSA key; RS256 needs at least ${MIN_RSA_BITS} bits`);
    return 'rsa';
  }
  if (type === 'ec') {
    const curve = key.asymmetricKeyDetails?.namedCurve;
    if (curve === 'prime256v1') return 'ec-p256';
    throw new Error(`${where} is an EC key on curve ${curve ?? 'unknown'}; ES256 needs P-256`);
  }
  throw new Error(`${where} is a ${type ?? 'unknown'} key; only RSA (RS256) and EC P-256 (ES256) keys are supported`);
}

function withPrefix<T>(importKey: () => T): T {
  try {
    return importKey();
  } catch (err) {
    throw new Error(`JWT verifier: ${errorMessage(err)}`, { cause: err });
  }
}

export function isAlgorithm(value: string): value is JwtAlgorithm {
  return (ALL_ALGORITHMS as readonly string[]).includes(value);
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Quotes a value for a message, truncated, since it may come from the token and is echoed to the client. */
export function quote(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value) ?? String(value);
  return JSON.stringify(text.length > 100 ? `${text.slice(0, 100)}…` : text);
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
