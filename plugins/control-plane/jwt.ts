import { errors as jose, jwtVerify } from 'jose';
import { LRUCache } from 'lru-cache';
import { ALL_ALGORITHMS, importKeys, isAlgorithm, isPlainObject, KIND_FOR_ALG, KIND_LABEL, quote, type JwtAlgorithm, type KeySources, type VerificationKey } from './jwt-keys.js';

export { loadJwksFile, type JwtAlgorithm } from './jwt-keys.js';

/*
 * JWTs sent as the gateway key, verified with `jose` (signature, `iss`, `aud`,
 * `exp`, `nbf`). What is ours: the token's shape read first, so a malformed
 * token gets a message that says what is wrong; which configured keys a token
 * may name; the required claims; and a cache of verified tokens. Every
 * failure is a {@link JwtError} with a stable code and a message for the
 * client that never holds the token.
 */

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
export interface JwtVerifierOptions extends KeySources {
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

/** Verifies a token: its frozen claims, or a {@link JwtError}. */
export type JwtVerifier = (token: string) => Promise<JwtPayload>;

// Caps the base64 decoding and JSON parsing an unauthenticated client can
// cause; real access tokens are a few KiB at most.
const MAX_TOKEN_LENGTH = 16 * 1024;
const DEFAULT_CLOCK_TOLERANCE_S = 30;
const CACHE_MAX_ENTRIES = 10_000;
// Entries can hold tokens up to 16 KiB, so the entry count alone would allow
// ~160 MiB of keys; bound the total token characters as well.
const CACHE_MAX_TOKEN_CHARS = 32 * 1024 * 1024;
const ES256_SIGNATURE_BYTES = 64;
const TIME_CLAIMS = new Set(['exp', 'nbf', 'iat']);
const BASE64URL_PATTERN = /^[A-Za-z0-9_-]*$/;
const JWT_SHAPE = /^eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;
// Fatal, so invalid UTF-8 is reported as malformed rather than silently
// turned into U+FFFD and then parsed.
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Builds a verifier for RS256/ES256 JWTs. Keys are imported once, here; a bad
 * key or option throws an `Error` naming it.
 *
 * The returned function verifies a token and resolves to its payload, or
 * rejects with a {@link JwtError}. Checks, in order: shape and size,
 * algorithm, key, then (jose) signature, `iss`, `aud`, `exp` and `nbf`, then
 * required claims and `iat` against `now()`. Successful results are cached by
 * token string (bounded LRU); a cached token still has its time claims
 * checked on every call, so it expires on time. The payload is frozen and
 * shared between calls for the same token.
 */
export function createJwtVerifier(options: JwtVerifierOptions): JwtVerifier {
  const selectKeys = keySelector(importKeys(options));
  const algorithms = readAlgorithms(options.algorithms);
  const issuers = readStringList('issuer', options.issuer);
  const audiences = readStringList('audience', options.audience);
  const requiredClaims = readRequiredClaims(options.requiredClaims);
  const toleranceS = options.clockToleranceS ?? DEFAULT_CLOCK_TOLERANCE_S;
  if (typeof toleranceS !== 'number' || !Number.isFinite(toleranceS) || toleranceS < 0) {
    throw new Error('JWT verifier: clockToleranceS must be a finite number of seconds, 0 or more');
  }
  const now = options.now ?? Date.now;
  if (typeof now !== 'function') throw new Error('JWT verifier: now must be a function returning milliseconds');

  const cache = new LRUCache<string, JwtPayload>({
    max: CACHE_MAX_ENTRIES,
    maxSize: CACHE_MAX_TOKEN_CHARS,
    sizeCalculation: (_payload, token) => Math.max(1, token.length),
  });

  /** jose's verdict with one candidate key: the claims, or null when the signature is not this key's. */
  const verifyWith = async (token: string, alg: JwtAlgorithm, key: VerificationKey): Promise<JwtPayload | null> => {
    try {
      const { payload } = await jwtVerify(token, key.key, {
        algorithms: [alg],
        ...(issuers === undefined ? {} : { issuer: issuers as string[] }),
        ...(audiences === undefined ? {} : { audience: audiences as string[] }),
        // jose checks presence last to first: reversed, a token missing several is told of the first.
        requiredClaims: [...requiredClaims].reverse(),
        clockTolerance: toleranceS,
        currentDate: new Date(now()),
      });
      return payload as JwtPayload;
    } catch (err) {
      if (err instanceof jose.JWSSignatureVerificationFailed) return null;
      throw joseFailure(err, issuers, audiences);
    }
  };

  return async function verifyJwt(token: string): Promise<JwtPayload> {
    const cached = typeof token === 'string' ? cache.get(token) : undefined;
    if (cached !== undefined) {
      checkTimes(cached, now() / 1000, toleranceS);
      return cached;
    }
    const { alg, kid, signatureBytes } = readToken(token, algorithms);
    const candidates = selectKeys(alg, kid);
    if (alg === 'ES256' && signatureBytes !== ES256_SIGNATURE_BYTES) {
      throw new JwtError('bad_signature', `An ES256 signature is ${ES256_SIGNATURE_BYTES} bytes; this one is ${signatureBytes}.`);
    }
    let payload: JwtPayload | null = null;
    for (const candidate of candidates) if ((payload = await verifyWith(token, alg, candidate)) !== null) break;
    if (payload === null) {
      throw new JwtError(
        'bad_signature',
        kid === undefined ? 'The token signature does not match any configured key.' : `The token signature does not match key ${quote(kid)}.`,
      );
    }
    // jose checks that the required claims are there; a null one is as good as absent.
    for (const name of requiredClaims) if (payload[name] === null) throw missingClaim(name);
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
 * Which configured keys may verify a token of `alg` naming `kid`, indexed
 * once so that selecting is a lookup rather than a scan per token. A kid
 * names its key alone; keys configured without a kid (a single PEM, a one-key
 * JWKS) are trusted for any other kid, or every kid-carrying token would need
 * a kid in the configuration just to be matched.
 */
function keySelector(keys: readonly VerificationKey[]): (alg: JwtAlgorithm, kid: string | undefined) => readonly VerificationKey[] {
  const canVerify = (entry: VerificationKey, alg: JwtAlgorithm) => entry.kind === KIND_FOR_ALG[alg] && (entry.alg === undefined || entry.alg === alg);
  const byKid = new Map<string, VerificationKey[]>();
  for (const k of keys) if (k.kid !== undefined) byKid.set(k.kid, [...(byKid.get(k.kid) ?? []), k]);
  const byAlg = new Map(ALL_ALGORITHMS.map((alg) => [alg, keys.filter((k) => canVerify(k, alg))]));
  const withoutKidByAlg = new Map(ALL_ALGORITHMS.map((alg) => [alg, byAlg.get(alg)!.filter((k) => k.kid === undefined)]));
  return (alg, kid) => {
    if (kid === undefined) {
      const candidates = byAlg.get(alg)!;
      if (candidates.length === 0) throw new JwtError('unknown_key', `No configured key can verify ${alg} tokens.`);
      return candidates;
    }
    const named = byKid.get(kid);
    if (named !== undefined) {
      const fit = named.filter((entry) => canVerify(entry, alg));
      if (fit.length === 0) throw new JwtError('unknown_key', `Key ${quote(kid)} is ${KIND_LABEL[named[0]!.kind]} and cannot verify ${alg} tokens.`);
      return fit;
    }
    const anonymous = withoutKidByAlg.get(alg)!;
    if (anonymous.length === 0) throw new JwtError('unknown_key', `No key with kid ${quote(kid)} is configured.`);
    return anonymous;
  };
}

/**
 * Reads the token's shape before anything is verified, so that a malformed
 * token gets a message saying what is wrong with it: size, parts, the header
 * (its algorithm against the accepted ones, `kid`, `crit`), the payload's
 * syntax and the signature's encoding.
 */
function readToken(token: unknown, accepted: readonly JwtAlgorithm[]): { alg: JwtAlgorithm; kid: string | undefined; signatureBytes: number } {
  if (typeof token !== 'string') throw malformed('The token is not a string.');
  if (token === '') throw malformed('The token is empty.');
  if (token.length > MAX_TOKEN_LENGTH) throw malformed(`The token is ${token.length} characters long; the limit is ${MAX_TOKEN_LENGTH}.`);
  const parts = token.split('.');
  if (parts.length !== 3) throw malformed(`A JWT has 3 dot-separated parts; this token has ${parts.length}.`);
  const [headerPart, payloadPart, signaturePart] = parts as [string, string, string];
  const header = parseJsonSegment(headerPart, 'header');
  const alg = readAlgorithm(header.alg, accepted);
  const kid = header.kid;
  if (kid !== undefined && typeof kid !== 'string') throw malformed('The token header "kid" is not a string.');
  // RFC 7515 §4.1.11: extensions listed as critical must be understood, and
  // this verifier understands none.
  if (header.crit !== undefined) throw malformed('The token header lists critical extensions ("crit"), which are not supported.');
  parseJsonSegment(payloadPart, 'payload');
  if (signaturePart === '') throw malformed('The token has no signature.');
  const signature = decodeBase64url(signaturePart);
  if (signature === undefined) throw malformed('The token signature is not valid base64url.');
  return { alg, kid, signatureBytes: signature.length };
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

function readAlgorithm(alg: unknown, accepted: readonly JwtAlgorithm[]): JwtAlgorithm {
  if (typeof alg !== 'string' || alg === '') throw malformed('The token header has no "alg".');
  if (alg.toLowerCase() === 'none') throw new JwtError('unsupported_algorithm', 'Unsigned tokens (alg "none") are not accepted.');
  // Shared-secret algorithms are refused outright: with public keys
  // configured they are the classic key-confusion attack.
  if (/^HS\d+$/i.test(alg)) {
    throw new JwtError('unsupported_algorithm', `Algorithm ${quote(alg)} (shared-secret HMAC) is not accepted; accepted: ${accepted.join(', ')}.`);
  }
  if (!isAlgorithm(alg) || !accepted.includes(alg)) throw new JwtError('unsupported_algorithm', `Algorithm ${quote(alg)} is not accepted; accepted: ${accepted.join(', ')}.`);
  return alg;
}

/**
 * jose's refusal of a token whose signature holds, in this verifier's terms:
 * the claim it names, with the values the client needs to see what is wrong.
 */
function joseFailure(err: unknown, issuers: readonly string[] | undefined, audiences: readonly string[] | undefined): unknown {
  if (!(err instanceof jose.JWTClaimValidationFailed || err instanceof jose.JWTExpired)) {
    return err instanceof jose.JOSEError ? malformed(`The token is not a valid JWT (${err.message}).`) : err;
  }
  const { claim, reason, payload } = err;
  const value = payload[claim];
  if (TIME_CLAIMS.has(claim) && reason === 'invalid') return malformed(`The token "${claim}" claim is not a number of seconds since the epoch.`);
  if (claim === 'exp') return new JwtError('expired', `The token expired at ${isoTime(value as number)}.`);
  if (claim === 'nbf') return new JwtError('not_yet_valid', `The token is not valid before ${isoTime(value as number)}.`);
  if (claim === 'iss') {
    return reason === 'missing'
      ? new JwtError('missing_claim', `The token has no "iss" claim; expected issuer ${describeList(issuers!)}.`)
      : new JwtError('wrong_issuer', `The token issuer ${quote(value)} is not accepted; expected ${describeList(issuers!)}.`);
  }
  if (claim === 'aud') {
    if (reason === 'missing') return new JwtError('missing_claim', `The token has no "aud" claim; expected audience ${describeList(audiences!)}.`);
    const list = typeof value === 'string' ? [value] : value;
    if (!Array.isArray(list) || !list.every((item) => typeof item === 'string')) return malformed('The token "aud" claim is neither a string nor an array of strings.');
    return new JwtError('wrong_audience', `The token audience ${describeList(list)} is not accepted; expected ${describeList(audiences!)}.`);
  }
  return reason === 'missing' ? missingClaim(claim) : malformed(`The token "${claim}" claim is not accepted.`);
}

/** The time claims against the clock: on every call, a cached token's too. jose checked `exp` and `nbf` once; `iat` is ours. */
function checkTimes(payload: JwtPayload, nowS: number, toleranceS: number): void {
  const exp = payload.exp as number | undefined;
  if (exp !== undefined && nowS >= exp + toleranceS) throw new JwtError('expired', `The token expired at ${isoTime(exp)}.`);
  const nbf = payload.nbf as number | undefined;
  if (nbf !== undefined && nowS + toleranceS < nbf) throw new JwtError('not_yet_valid', `The token is not valid before ${isoTime(nbf)}.`);
  const iat = payload.iat as number | undefined;
  if (iat !== undefined && iat > nowS + toleranceS) {
    throw new JwtError('not_yet_valid', `The token was issued in the future (iat ${isoTime(iat)}); check the issuer's clock.`);
  }
}

function readAlgorithms(value: readonly JwtAlgorithm[] | undefined): readonly JwtAlgorithm[] {
  if (value === undefined) return ALL_ALGORITHMS;
  if (!Array.isArray(value) || value.length === 0) throw new Error('JWT verifier: algorithms must be a non-empty array');
  for (const alg of value as unknown[]) {
    if (typeof alg !== 'string' || !isAlgorithm(alg)) throw new Error(`JWT verifier: algorithm ${quote(alg)} is not supported; use ${ALL_ALGORITHMS.join(' or ')}`);
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

function isoTime(seconds: number): string {
  const date = new Date(seconds * 1000);
  return Number.isNaN(date.getTime()) ? `${seconds} (seconds since the epoch)` : date.toISOString();
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

const missingClaim = (name: string) => new JwtError('missing_claim', `The token has no ${quote(name)} claim, which is required.`);

function malformed(message: string): JwtError {
  return new JwtError('malformed', message);
}
