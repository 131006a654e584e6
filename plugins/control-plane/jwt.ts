import { constants, createPublicKey, verify, type JsonWebKey, type KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { LRUCache } from 'lru-cache';

/** The signature algorithms a verifier can accept. */
export type JwtAlgorithm = 'RS256' | 'ES256';

/** Why a token was rejected; stable, so callers can map codes to responses. */
export type JwtErrorCode =
  | 'malformed'
  | 'unsupported_algorithm'
  | 'unknown_key'
  | 'bad_signature'
  | 'expired'
  | 'not_yet_valid'
  | 'wrong_issuer'
  | 'wrong_audience'
  | 'missing_claim';

/**
 * A rejected token. The message is meant for the API client: it says what is
 * wrong (with claim values such as the expiry time, or the expected and actual
 * issuer) but never contains the token.
 */
export class JwtError extends Error {
  /** Machine-readable reason. */
  readonly code: JwtErrorCode;

  constructor(code: JwtErrorCode, message: string) {
    super(message);
    this.name = 'JwtError';
    this.code = code;
  }
}

/** Options of {@link createJwtVerifier}. At least one key (PEM or JWKS) is required. */
export interface JwtVerifierOptions {
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
  /** Accepted `iss` values. When set, a token without `iss` is rejected (`missing_claim`). */
  issuer?: string | readonly string[];
  /** Accepted audiences; a token passes when its `aud` (string or array) contains one. When set, `aud` is required. */
  audience?: string | readonly string[];
  /** Accepted algorithms; default both. `none` and HS* are always refused. */
  algorithms?: readonly JwtAlgorithm[];
  /** Allowed clock skew, in seconds, for `exp`, `nbf` and `iat`; default 30. */
  clockToleranceS?: number;
  /** Top-level claims that must be present and not null, e.g. `['workspace_id']`. */
  requiredClaims?: readonly string[];
  /** Current time in milliseconds (a fake clock in tests); default `Date.now`. */
  now?: () => number;
}

/** The claims of a verified token. */
export type JwtPayload = Record<string, unknown>;

type KeyKind = 'rsa' | 'ec-p256';

interface VerificationKey {
  readonly kid: string | undefined;
  /** From a JWK's `alg`: the only algorithm this key may verify. */
  readonly alg: JwtAlgorithm | undefined;
  readonly kind: KeyKind;
  readonly key: KeyObject;
}

interface ClaimPolicy {
  readonly issuers: readonly string[] | undefined;
  readonly audiences: readonly string[] | undefined;
  readonly requiredClaims: readonly string[];
}

// Caps the base64 decoding and JSON parsing an unauthenticated client can
// cause; real access tokens are a few KiB at most.
const MAX_TOKEN_LENGTH = 16 * 1024;
const DEFAULT_CLOCK_TOLERANCE_S = 30;
const CACHE_MAX_ENTRIES = 10_000;
// Entries can hold tokens up to 16 KiB, so the entry count alone would allow
// ~160 MiB of keys; bound the total token characters as well.
const CACHE_MAX_TOKEN_CHARS = 32 * 1024 * 1024;
// RFC 7518 §3.3: RS256 keys must be at least 2048 bits.
const MIN_RSA_BITS = 2048;
const ES256_SIGNATURE_BYTES = 64;
const ALL_ALGORITHMS: readonly JwtAlgorithm[] = ['RS256', 'ES256'];
const KIND_FOR_ALG: Readonly<Record<JwtAlgorithm, KeyKind>> = { RS256: 'rsa', ES256: 'ec-p256' };
const KIND_LABEL: Readonly<Record<KeyKind, string>> = { rsa: 'an RSA key', 'ec-p256': 'an EC P-256 key' };
const BASE64URL_PATTERN = /^[A-Za-z0-9_-]*$/;
const JWT_SHAPE = /^eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;
const PRIVATE_PEM = /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/;
// Fatal, so invalid UTF-8 is reported as malformed rather than silently
// turned into U+FFFD and then parsed.
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Builds a verifier for RS256/ES256 JWTs. Keys are imported once, here; a bad
 * key or option throws an `Error` naming it.
 *
 * The returned function verifies a token and returns its payload, or throws a
 * {@link JwtError}. Checks, in order: shape and size, algorithm, key and
 * signature, claim types, `iss`, `aud`, required claims, then `exp`, `nbf`
 * and `iat` against `now()`. Successful results are cached by token string
 * (bounded LRU); a cached token still has its time claims checked on every
 * call, so it expires on time. The payload is frozen and shared between calls
 * for the same token.
 */
export function createJwtVerifier(options: JwtVerifierOptions): (token: string) => JwtPayload {
  const keys = importKeys(options);
  const algorithms = new Set(readAlgorithms(options.algorithms));
  const policy: ClaimPolicy = {
    issuers: readStringList('issuer', options.issuer),
    audiences: readStringList('audience', options.audience),
    requiredClaims: readRequiredClaims(options.requiredClaims),
  };
  const toleranceS = options.clockToleranceS ?? DEFAULT_CLOCK_TOLERANCE_S;
  if (typeof toleranceS !== 'number' || !Number.isFinite(toleranceS) || toleranceS < 0) {
    throw new Error('JWT verifier: clockToleranceS must be a finite number of seconds, 0 or more');
  }
  const now = options.now ?? Date.now;
  if (typeof now !== 'function') throw new Error('JWT verifier: now must be a function returning milliseconds');

  // Indexed once, so selecting keys is a lookup rather than a scan per token.
  const byKid = new Map<string, VerificationKey[]>();
  const byAlg = new Map<JwtAlgorithm, VerificationKey[]>();
  const withoutKidByAlg = new Map<JwtAlgorithm, VerificationKey[]>();
  for (const entry of keys) {
    if (entry.kid !== undefined) pushTo(byKid, entry.kid, entry);
    for (const alg of ALL_ALGORITHMS) {
      if (!canVerify(entry, alg)) continue;
      pushTo(byAlg, alg, entry);
      if (entry.kid === undefined) pushTo(withoutKidByAlg, alg, entry);
    }
  }

  const selectKeys = (alg: JwtAlgorithm, kid: string | undefined): readonly VerificationKey[] => {
    if (kid === undefined) {
      const candidates = byAlg.get(alg);
      if (candidates === undefined) throw new JwtError('unknown_key', `No configured key can verify ${alg} tokens.`);
      return candidates;
    }
    const named = byKid.get(kid);
    if (named !== undefined) {
      const fit = named.filter((entry) => canVerify(entry, alg));
      if (fit.length === 0) {
        throw new JwtError('unknown_key', `Key ${quote(kid)} is ${KIND_LABEL[named[0]!.kind]} and cannot verify ${alg} tokens.`);
      }
      return fit;
    }
    // Keys configured without a kid (a single PEM, a one-key JWKS) are
    // trusted for any kid, or every kid-carrying token would need a kid in
    // the configuration just to be matched.
    const anonymous = withoutKidByAlg.get(alg);
    if (anonymous === undefined) throw new JwtError('unknown_key', `No key with kid ${quote(kid)} is configured.`);
    return anonymous;
  };

  const cache = new LRUCache<string, JwtPayload>({
    max: CACHE_MAX_ENTRIES,
    maxSize: CACHE_MAX_TOKEN_CHARS,
    sizeCalculation: (_payload, token) => Math.max(1, token.length),
  });

  return function verifyJwt(token: string): JwtPayload {
    const cached = typeof token === 'string' ? cache.get(token) : undefined;
    if (cached !== undefined) {
      checkTimes(cached, now() / 1000, toleranceS);
      return cached;
    }

    const parts = splitToken(token);
    const header = parseJsonSegment(parts.header, 'header');
    const alg = readAlgorithm(header.alg, algorithms);
    const kid = header.kid;
    if (kid !== undefined && typeof kid !== 'string') throw malformed('The token header "kid" is not a string.');
    // RFC 7515 §4.1.11: extensions listed as critical must be understood, and
    // this verifier understands none.
    if (header.crit !== undefined) throw malformed('The token header lists critical extensions ("crit"), which are not supported.');
    const payload = parseJsonSegment(parts.payload, 'payload');
    if (parts.signature === '') throw malformed('The token has no signature.');
    const signature = decodeBase64url(parts.signature);
    if (signature === undefined) throw malformed('The token signature is not valid base64url.');

    const candidates = selectKeys(alg, kid);
    if (alg === 'ES256' && signature.length !== ES256_SIGNATURE_BYTES) {
      throw new JwtError('bad_signature', `An ES256 signature is ${ES256_SIGNATURE_BYTES} bytes; this one is ${signature.length}.`);
    }
    const signingInput = Buffer.from(parts.signingInput, 'ascii');
    if (!candidates.some((entry) => verifyWith(entry.key, alg, signingInput, signature))) {
      throw new JwtError(
        'bad_signature',
        kid === undefined
          ? 'The token signature does not match any configured key.'
          : `The token signature does not match key ${quote(kid)}.`,
      );
    }

    // Claims are only looked at once the signature holds, so a forged token
    // learns nothing about the policy.
    checkClaims(payload, policy);
    checkTimes(payload, now() / 1000, toleranceS);
    deepFreeze(payload);
    cache.set(token, payload);
    return payload;
  };
}

/**
 * Cheap test for "this credential is a JWT, not an opaque API key": three
 * base64url segments, the first starting `eyJ` (base64url of `{"`). Nothing is
 * decoded or verified. The signature segment may be empty, so unsigned tokens
 * are routed to the verifier and refused there with a clear message.
 */
export function looksLikeJwt(value: string): boolean {
  return typeof value === 'string' && JWT_SHAPE.test(value);
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

function importKeys(options: JwtVerifierOptions): VerificationKey[] {
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

function canVerify(entry: VerificationKey, alg: JwtAlgorithm): boolean {
  return entry.kind === KIND_FOR_ALG[alg] && (entry.alg === undefined || entry.alg === alg);
}

function verifyWith(key: KeyObject, alg: JwtAlgorithm, data: Buffer, signature: Buffer): boolean {
  try {
    return alg === 'ES256'
      ? // JOSE carries r||s, not the DER structure OpenSSL defaults to.
        verify('sha256', data, { key, dsaEncoding: 'ieee-p1363' }, signature)
      : // Pinned: RS256 is PKCS#1 v1.5, whatever padding the key might default to.
        verify('sha256', data, { key, padding: constants.RSA_PKCS1_PADDING }, signature);
  } catch {
    return false;
  }
}

function readAlgorithms(value: readonly JwtAlgorithm[] | undefined): readonly JwtAlgorithm[] {
  if (value === undefined) return ALL_ALGORITHMS;
  if (!Array.isArray(value) || value.length === 0) throw new Error('JWT verifier: algorithms must be a non-empty array');
  for (const alg of value as unknown[]) {
    if (typeof alg !== 'string' || !isAlgorithm(alg)) {
      throw new Error(`JWT verifier: algorithm ${quote(alg)} is not supported; use ${ALL_ALGORITHMS.join(' or ')}`);
    }
  }
  return value;
}

function readStringList(name: string, value: string | readonly string[] | undefined): readonly string[] | undefined {
  if (value === undefined) return undefined;
  const list: unknown[] = typeof value === 'string' ? [value] : Array.isArray(value) ? value : [value];
  if (list.length === 0 || !list.every((item) => typeof item === 'string' && item !== '')) {
    throw new Error(`JWT verifier: ${name} must be a non-empty string or a non-empty array of them`);
  }
  return list as string[];
}

function readRequiredClaims(value: readonly string[] | undefined): readonly string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || !value.every((item: unknown) => typeof item === 'string' && item !== '')) {
    throw new Error('JWT verifier: requiredClaims must be an array of claim names');
  }
  return [...value];
}

function splitToken(token: unknown): { header: string; payload: string; signature: string; signingInput: string } {
  if (typeof token !== 'string') throw malformed('The token is not a string.');
  if (token === '') throw malformed('The token is empty.');
  if (token.length > MAX_TOKEN_LENGTH) {
    throw malformed(`The token is ${token.length} characters long; the limit is ${MAX_TOKEN_LENGTH}.`);
  }
  const first = token.indexOf('.');
  const second = first < 0 ? -1 : token.indexOf('.', first + 1);
  if (second < 0 || token.includes('.', second + 1)) {
    throw malformed(`A JWT has 3 dot-separated parts; this token has ${token.split('.').length}.`);
  }
  return {
    header: token.slice(0, first),
    payload: token.slice(first + 1, second),
    signature: token.slice(second + 1),
    signingInput: token.slice(0, second),
  };
}

function parseJsonSegment(segment: string, name: 'header' | 'payload'): Record<string, unknown> {
  if (segment === '') throw malformed(`The token ${name} is empty.`);
  const bytes = decodeBase64url(segment);
  if (bytes === undefined) throw malformed(`The token ${name} is not valid base64url.`);
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw malformed(`The token ${name} is not valid UTF-8.`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw malformed(`The token ${name} is not valid JSON.`);
  }
  if (!isPlainObject(value)) throw malformed(`The token ${name} is not a JSON object.`);
  return value;
}

/** Strict base64url: Buffer.from would silently skip stray characters. */
function decodeBase64url(text: string): Buffer | undefined {
  // A length of 4n+1 cannot come from any byte string.
  if (!BASE64URL_PATTERN.test(text) || text.length % 4 === 1) return undefined;
  return Buffer.from(text, 'base64url');
}

function readAlgorithm(alg: unknown, accepted: ReadonlySet<JwtAlgorithm>): JwtAlgorithm {
  if (typeof alg !== 'string' || alg === '') throw malformed('The token header has no "alg".');
  if (alg.toLowerCase() === 'none') {
    throw new JwtError('unsupported_algorithm', 'Unsigned tokens (alg "none") are not accepted.');
  }
  // Shared-secret algorithms are refused outright: with public keys
  // configured they are the classic key-confusion attack.
  if (/^HS\d+$/i.test(alg)) {
    throw new JwtError(
      'unsupported_algorithm',
      `Algorithm ${quote(alg)} (shared-secret HMAC) is not accepted; accepted: ${[...accepted].join(', ')}.`,
    );
  }
  if (!isAlgorithm(alg) || !accepted.has(alg)) {
    throw new JwtError('unsupported_algorithm', `Algorithm ${quote(alg)} is not accepted; accepted: ${[...accepted].join(', ')}.`);
  }
  return alg;
}

function checkClaims(payload: JwtPayload, policy: ClaimPolicy): void {
  for (const name of ['exp', 'nbf', 'iat']) numericClaim(payload, name);

  if (policy.issuers !== undefined) {
    const iss = ownClaim(payload, 'iss');
    if (iss === undefined) {
      throw new JwtError('missing_claim', `The token has no "iss" claim; expected issuer ${describeList(policy.issuers)}.`);
    }
    if (typeof iss !== 'string' || !policy.issuers.includes(iss)) {
      throw new JwtError('wrong_issuer', `The token issuer ${quote(iss)} is not accepted; expected ${describeList(policy.issuers)}.`);
    }
  }

  if (policy.audiences !== undefined) {
    const aud = ownClaim(payload, 'aud');
    if (aud === undefined) {
      throw new JwtError('missing_claim', `The token has no "aud" claim; expected audience ${describeList(policy.audiences)}.`);
    }
    const audiences = typeof aud === 'string' ? [aud] : aud;
    if (!Array.isArray(audiences) || !audiences.every((item) => typeof item === 'string')) {
      throw malformed('The token "aud" claim is neither a string nor an array of strings.');
    }
    if (!audiences.some((item) => policy.audiences!.includes(item))) {
      throw new JwtError(
        'wrong_audience',
        `The token audience ${describeList(audiences)} is not accepted; expected ${describeList(policy.audiences)}.`,
      );
    }
  }

  for (const name of policy.requiredClaims) {
    const value = ownClaim(payload, name);
    if (value === undefined || value === null) {
      throw new JwtError('missing_claim', `The token has no ${quote(name)} claim, which is required.`);
    }
  }
}

function checkTimes(payload: JwtPayload, nowS: number, toleranceS: number): void {
  const exp = numericClaim(payload, 'exp');
  if (exp !== undefined && nowS >= exp + toleranceS) {
    throw new JwtError('expired', `The token expired at ${isoTime(exp)}.`);
  }
  const nbf = numericClaim(payload, 'nbf');
  if (nbf !== undefined && nowS + toleranceS < nbf) {
    throw new JwtError('not_yet_valid', `The token is not valid before ${isoTime(nbf)}.`);
  }
  const iat = numericClaim(payload, 'iat');
  if (iat !== undefined && iat > nowS + toleranceS) {
    throw new JwtError('not_yet_valid', `The token was issued in the future (iat ${isoTime(iat)}); check the issuer's clock.`);
  }
}

function numericClaim(payload: JwtPayload, name: string): number | undefined {
  const value = ownClaim(payload, name);
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw malformed(`The token "${name}" claim is not a number of seconds since the epoch.`);
  }
  return value;
}

/** Own properties only: a claim named "constructor" must not find Object.prototype's. */
function ownClaim(payload: JwtPayload, name: string): unknown {
  return Object.hasOwn(payload, name) ? payload[name] : undefined;
}

function isoTime(seconds: number): string {
  const date = new Date(seconds * 1000);
  return Number.isNaN(date.getTime()) ? `${seconds} (seconds since the epoch)` : date.toISOString();
}

/** Quotes a value for a message, truncated, since it may come from the token and is echoed to the client. */
function quote(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value) ?? String(value);
  return JSON.stringify(text.length > 100 ? `${text.slice(0, 100)}…` : text);
}

function describeList(values: readonly unknown[]): string {
  if (values.length === 1) return quote(values[0]);
  const shown = values.slice(0, 10).map(quote);
  return `one of ${shown.join(', ')}${values.length > shown.length ? ', …' : ''}`;
}

/** Iterative, so a deeply nested (but size-capped) payload can't exhaust the stack. */
function deepFreeze(value: object): void {
  const pending: object[] = [value];
  while (pending.length > 0) {
    const current = pending.pop()!;
    Object.freeze(current);
    for (const child of Object.values(current)) {
      if (typeof child === 'object' && child !== null && !Object.isFrozen(child)) pending.push(child);
    }
  }
}

function pushTo<K>(map: Map<K, VerificationKey[]>, key: K, entry: VerificationKey): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [entry]);
  else list.push(entry);
}

function isAlgorithm(value: string): value is JwtAlgorithm {
  return (ALL_ALGORITHMS as readonly string[]).includes(value);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function malformed(message: string): JwtError {
  return new JwtError('malformed', message);
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
