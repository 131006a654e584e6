import { createHmac, createPrivateKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  JwtError,
  createJwtVerifier,
  loadJwksFile,
  looksLikeJwt,
  type JwtErrorCode,
  type JwtVerifierOptions,
} from '../../../plugins/control-plane/jwt.js';

interface KeyPair {
  publicKey: KeyObject;
  privateKey: KeyObject;
}

const rsa: KeyPair = generateKeyPairSync('rsa', { modulusLength: 2048 });
const rsaOther: KeyPair = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ec: KeyPair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const ecOther: KeyPair = generateKeyPairSync('ec', { namedCurve: 'P-256' });

// A throwaway self-signed P-256 certificate (CN=jwt-test) and its key, made
// for this test only: node:crypto can't issue certificates itself.
const CERTIFICATE_PEM = `-----BEGIN CERTIFICATE-----
MIIBfTCCASOgAwIBAgIUM559jTuxYvKHcEy2Vf5vAfAmIGUwCgYIKoZIzj0EAwIw
EzERMA8GA1UEAwwIand0LXRlc3QwIBcNMjYxMTIxMTgwODE5WhgPMjEyNjEwMjgx
ODA4MTlaMBMxETAPBgNVBAMMCGp3dC10ZXN0MFkwEwYHKoZIzj0CAQYIKoZIzj0D
AQcDQgAE/1/ANL7RKWA4ZhJsYb4FjLkuXkjqfG89CudC77c6eF6CqGaVgBHFLraX
WchSb87LhANx7bShb+yQCS/qH7fhe6NTMFEwHQYDVR0OBBYEFK0VJoRFMgXUVUNc
AJARqlwPsMfVMB8GA1UdIwQYMBaAFK0VJoRFMgXUVUNcAJARqlwPsMfVMA8GA1Ud
EwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIhAPn/yCJUUJSNWjLTLCVSflSa
Q99OdfOBho4In3NJkAfiAiB7bbyg4G/0r6cj0yMArX9rTSgp3MaQ/J0dj66J15Gq
Qg==
-----END CERTIFICATE-----
`;
const certificateKey = createPrivateKey({
  format: 'jwk',
  key: {
    kty: 'EC',
    crv: 'P-256',
    x: '_1_ANL7RKWA4ZhJsYb4FjLkuXkjqfG89CudC77c6eF4',
    y: 'gqhmlYARxS62l1nIUm_Oy4QDce20oW_skAkv6h-34Xs',
    d: 'gXqWhg3gsdymgsT-PvoEvyua9iSFRcUyO3vlv1GJ8vI',
  },
});

const T0 = Date.UTC(2025, 0, 15, 12, 0, 0);
const T0_S = T0 / 1000;
const fixedNow = () => T0;

function encodeJson(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/** Signs like an issuer would: ES256 as raw r||s, RS256 as PKCS#1 v1.5. */
function signJwt(alg: 'RS256' | 'ES256', privateKey: KeyObject, payload: unknown, header: Record<string, unknown> = {}): string {
  const input = `${encodeJson({ alg, typ: 'JWT', ...header })}.${encodeJson(payload)}`;
  const signature =
    alg === 'ES256'
      ? sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' })
      : sign('sha256', Buffer.from(input), privateKey);
  return `${input}.${signature.toString('base64url')}`;
}

/** A token with arbitrary header and payload segments and a dummy signature. */
function rawToken(header: string, payload: string, signature = 'c2ln'): string {
  return `${header}.${payload}.${signature}`;
}

function pemOf(pair: KeyPair): string {
  return pair.publicKey.export({ type: 'spki', format: 'pem' }) as string;
}

function jwkOf(pair: KeyPair, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { ...pair.publicKey.export({ format: 'jwk' }), ...extra };
}

function claims(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { sub: 'user-1', iat: T0_S - 10, exp: T0_S + 3600, ...extra };
}

function verifierFor(options: Partial<JwtVerifierOptions> = {}) {
  return createJwtVerifier({
    publicKeys: [{ pem: pemOf(rsa) }, { pem: pemOf(ec) }],
    now: fixedNow,
    ...options,
  });
}

/**
 * Asserts `verify(token)` rejects with a JwtError with `code` whose message holds
 * every fragment, and never echoes the token (or its payload segment) back.
 */
async function expectRejected(verify: (token: string) => Promise<unknown>, token: string, code: JwtErrorCode, ...fragments: string[]): Promise<JwtError> {
  let caught: unknown;
  try {
    await verify(token);
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(JwtError);
  const error = caught as JwtError;
  expect(error.code).toBe(code);
  expect(error.name).toBe('JwtError');
  for (const fragment of fragments) expect(error.message).toContain(fragment);
  if (token.length > 0) expect(error.message).not.toContain(token);
  const payloadSegment = token.split('.')[1];
  if (payloadSegment !== undefined && payloadSegment.length > 8) expect(error.message).not.toContain(payloadSegment);
  return error;
}

describe('createJwtVerifier: keys and signatures', () => {
  it('verifies RS256 and ES256 tokens against PEM keys', async () => {
    const verify = verifierFor();
    expect(await verify(signJwt('RS256', rsa.privateKey, claims({ sub: 'rs' })))).toMatchObject({ sub: 'rs' });
    expect(await verify(signJwt('ES256', ec.privateKey, claims({ sub: 'es' })))).toMatchObject({ sub: 'es' });
  });

  it('verifies RS256 and ES256 tokens against a JWKS', async () => {
    const verify = createJwtVerifier({
      jwks: { keys: [jwkOf(rsa, { kid: 'r1', alg: 'RS256', use: 'sig' }), jwkOf(ec, { kid: 'e1', alg: 'ES256', use: 'sig' })] },
      now: fixedNow,
    });
    expect(await verify(signJwt('RS256', rsa.privateKey, claims(), { kid: 'r1' }))).toMatchObject({ sub: 'user-1' });
    expect(await verify(signJwt('ES256', ec.privateKey, claims(), { kid: 'e1' }))).toMatchObject({ sub: 'user-1' });
    // JWKS keys without a kid are tried by type.
    const anonymous = createJwtVerifier({ jwks: { keys: [jwkOf(rsa), jwkOf(ec)] }, now: fixedNow });
    expect(await anonymous(signJwt('ES256', ec.privateKey, claims()))).toMatchObject({ sub: 'user-1' });
  });

  it('accepts an X.509 certificate as the public key', async () => {
    const verify = createJwtVerifier({ publicKeys: [{ kid: 'cert', pem: CERTIFICATE_PEM }], now: fixedNow });
    expect(await verify(signJwt('ES256', certificateKey, claims(), { kid: 'cert' }))).toMatchObject({ sub: 'user-1' });
    await expectRejected(verify, signJwt('ES256', ec.privateKey, claims(), { kid: 'cert' }), 'bad_signature', 'signature', '"cert"');
  });

  it('selects the key named by kid', async () => {
    const verify = createJwtVerifier({
      jwks: { keys: [jwkOf(rsa, { kid: 'a' }), jwkOf(rsaOther, { kid: 'b' })] },
      now: fixedNow,
    });
    expect(await verify(signJwt('RS256', rsaOther.privateKey, claims(), { kid: 'b' }))).toMatchObject({ sub: 'user-1' });
    // Signed by b's key but naming a: only a is tried.
    await expectRejected(verify, signJwt('RS256', rsaOther.privateKey, claims(), { kid: 'a' }), 'bad_signature', 'does not match key "a"');
  });

  it('rejects an unknown kid, naming it', async () => {
    const verify = createJwtVerifier({ jwks: { keys: [jwkOf(rsa, { kid: 'a' })] }, now: fixedNow });
    await expectRejected(verify, signJwt('RS256', rsa.privateKey, claims(), { kid: 'rotated-2031' }), 'unknown_key', '"rotated-2031"', 'No key');
  });

  it('lets keys configured without a kid verify tokens with any kid', async () => {
    const verify = createJwtVerifier({ publicKeys: [{ kid: 'a', pem: pemOf(rsaOther) }, { pem: pemOf(rsa) }], now: fixedNow });
    expect(await verify(signJwt('RS256', rsa.privateKey, claims(), { kid: 'issuer-key-7' }))).toMatchObject({ sub: 'user-1' });
  });

  it('without a kid, tries every key of the matching type', async () => {
    const verify = createJwtVerifier({
      publicKeys: [{ pem: pemOf(rsaOther) }, { pem: pemOf(ecOther) }, { pem: pemOf(ec) }, { pem: pemOf(rsa) }],
      now: fixedNow,
    });
    expect(await verify(signJwt('RS256', rsa.privateKey, claims()))).toMatchObject({ sub: 'user-1' });
    expect(await verify(signJwt('ES256', ec.privateKey, claims()))).toMatchObject({ sub: 'user-1' });
  });

  it('rejects a tampered payload', async () => {
    const verify = verifierFor();
    for (const token of [signJwt('RS256', rsa.privateKey, claims()), signJwt('ES256', ec.privateKey, claims())]) {
      const [header, , signature] = token.split('.');
      const forged = `${header}.${encodeJson(claims({ sub: 'admin' }))}.${signature}`;
      await expectRejected(verify, forged, 'bad_signature', 'signature does not match');
    }
  });

  it('rejects a token signed by another key', async () => {
    const verify = verifierFor();
    await expectRejected(verify, signJwt('RS256', rsaOther.privateKey, claims()), 'bad_signature', 'signature does not match any configured key');
    await expectRejected(verify, signJwt('ES256', ecOther.privateKey, claims()), 'bad_signature', 'signature does not match any configured key');
  });

  it('rejects an ES256 signature that is not 64 raw bytes (e.g. DER)', async () => {
    const verify = verifierFor();
    const input = `${encodeJson({ alg: 'ES256' })}.${encodeJson(claims())}`;
    const der = sign('sha256', Buffer.from(input), ec.privateKey);
    await expectRejected(verify, `${input}.${der.toString('base64url')}`, 'bad_signature', '64 bytes');
  });

  it('refuses alg "none" whatever the case', async () => {
    const verify = verifierFor();
    for (const alg of ['none', 'None', 'NONE']) {
      await expectRejected(verify, `${encodeJson({ alg })}.${encodeJson(claims())}.`, 'unsupported_algorithm', 'alg "none"', 'not accepted');
    }
  });

  it('refuses HS256, including one keyed with the public key (key confusion)', async () => {
    const verify = verifierFor();
    const input = `${encodeJson({ alg: 'HS256', typ: 'JWT' })}.${encodeJson(claims())}`;
    const mac = createHmac('sha256', pemOf(rsa)).update(input).digest('base64url');
    await expectRejected(verify, `${input}.${mac}`, 'unsupported_algorithm', '"HS256"', 'not accepted');
  });

  it('refuses algorithms outside the configured list, and unknown ones', async () => {
    const esOnly = verifierFor({ algorithms: ['ES256'] });
    await expectRejected(esOnly, signJwt('RS256', rsa.privateKey, claims()), 'unsupported_algorithm', '"RS256"', 'accepted: ES256');
    expect(await esOnly(signJwt('ES256', ec.privateKey, claims()))).toMatchObject({ sub: 'user-1' });
    const verify = verifierFor();
    await expectRejected(verify, rawToken(encodeJson({ alg: 'PS256' }), encodeJson(claims())), 'unsupported_algorithm', '"PS256"');
  });

  it('does not verify an RS256 token with EC keys only', async () => {
    const verify = createJwtVerifier({ publicKeys: [{ pem: pemOf(ec) }], jwks: { keys: [jwkOf(ecOther, { kid: 'e' })] }, now: fixedNow });
    await expectRejected(verify, signJwt('RS256', rsa.privateKey, claims()), 'unknown_key', 'No configured key can verify RS256');
    await expectRejected(verify, signJwt('RS256', rsa.privateKey, claims(), { kid: 'e' }), 'unknown_key', '"e"', 'EC P-256', 'cannot verify RS256');
  });

  it('honours a JWK alg: a key pinned to RS256 is not used for ES256', async () => {
    const verify = createJwtVerifier({ jwks: { keys: [jwkOf(rsa, { alg: 'RS256' })] }, now: fixedNow });
    await expectRejected(verify, signJwt('ES256', ec.privateKey, claims()), 'unknown_key', 'ES256');
  });

  it('skips JWKS keys meant for encryption or other algorithms', async () => {
    const verify = createJwtVerifier({
      jwks: {
        keys: [
          jwkOf(rsa, { kid: 'enc', use: 'enc' }),
          jwkOf(rsaOther, { kid: 'ps', alg: 'PS256' }),
          jwkOf(ec, { kid: 'sig', use: 'sig' }),
          { kty: 'oct', k: 'c2VjcmV0', kid: 'hmac' },
          { kty: 'OKP', crv: 'Ed25519', x: 'AAAA', kid: 'ed' },
        ],
      },
      now: fixedNow,
    });
    expect(await verify(signJwt('ES256', ec.privateKey, claims(), { kid: 'sig' }))).toMatchObject({ sub: 'user-1' });
    await expectRejected(verify, signJwt('RS256', rsa.privateKey, claims(), { kid: 'enc' }), 'unknown_key', '"enc"');
    await expectRejected(verify, signJwt('RS256', rsa.privateKey, claims()), 'unknown_key', 'RS256');
  });

  it('uses only the public members of a JWK that carries private material', async () => {
    const privateJwk = ec.privateKey.export({ format: 'jwk' });
    const verify = createJwtVerifier({ jwks: { keys: [{ ...privateJwk }] }, now: fixedNow });
    expect(await verify(signJwt('ES256', ec.privateKey, claims()))).toMatchObject({ sub: 'user-1' });
  });
});

describe('createJwtVerifier: configuration errors', () => {
  it('needs at least one key', async () => {
    expect(() => createJwtVerifier({})).toThrow(/no keys configured/);
    expect(() => createJwtVerifier({ publicKeys: [], jwks: { keys: [] } })).toThrow(/no keys configured/);
    expect(() => createJwtVerifier({ jwks: { keys: [jwkOf(rsa, { use: 'enc' })] } })).toThrow(/none of the 1 JWKS keys/);
  });

  it('names a PEM entry that is not a public key', async () => {
    expect(() => createJwtVerifier({ publicKeys: [{ pem: pemOf(rsa) }, { kid: 'k2', pem: 'not a pem' }] })).toThrow(
      /publicKeys\[1\] \(kid "k2"\) is not a PEM public key or X\.509 certificate/,
    );
    const privatePem = rsa.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
    expect(() => createJwtVerifier({ publicKeys: [{ pem: privatePem }] })).toThrow(/publicKeys\[0\] is a private key/);
  });

  it('refuses keys too weak or of the wrong kind', async () => {
    const small = generateKeyPairSync('rsa', { modulusLength: 1024 });
    expect(() => createJwtVerifier({ publicKeys: [{ pem: pemOf(small) }] })).toThrow(/1024-bit RSA key; RS256 needs at least 2048 bits/);
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' });
    expect(() => createJwtVerifier({ publicKeys: [{ pem: pemOf(p384) }] })).toThrow(/curve secp384r1; ES256 needs P-256/);
    const ed = generateKeyPairSync('ed25519');
    expect(() => createJwtVerifier({ publicKeys: [{ pem: pemOf(ed) }] })).toThrow(/ed25519 key; only RSA \(RS256\) and EC P-256 \(ES256\)/);
  });

  it('names a broken or contradictory JWK', async () => {
    expect(() => createJwtVerifier({ jwks: { keys: [{ kty: 'RSA', kid: 'x', e: 'AQAB' }] } })).toThrow(
      /jwks\.keys\[0\] \(kid "x"\) is an RSA key without "n" and "e"/,
    );
    expect(() => createJwtVerifier({ jwks: { keys: [jwkOf(rsa), { kid: 'nokty' }] } })).toThrow(/jwks\.keys\[1\] has no "kty"/);
    expect(() => createJwtVerifier({ jwks: { keys: [jwkOf(rsa, { alg: 'ES256' })] } })).toThrow(/has alg ES256 but is an RSA key/);
    expect(() => createJwtVerifier({ jwks: { keys: [{ kty: 'EC', crv: 'P-256', x: 'AAAA', y: 'AAAA' }] } })).toThrow(
      /jwks\.keys\[0\] is not a valid EC key/,
    );
  });

  it('validates the other options', async () => {
    const publicKeys = [{ pem: pemOf(rsa) }];
    expect(() => createJwtVerifier({ publicKeys, algorithms: [] })).toThrow(/algorithms must be a non-empty array/);
    expect(() => createJwtVerifier({ publicKeys, algorithms: ['HS256' as never] })).toThrow(/algorithm "HS256" is not supported/);
    expect(() => createJwtVerifier({ publicKeys, issuer: [] })).toThrow(/issuer must be/);
    expect(() => createJwtVerifier({ publicKeys, audience: '' })).toThrow(/audience must be/);
    expect(() => createJwtVerifier({ publicKeys, clockToleranceS: -1 })).toThrow(/clockToleranceS/);
    expect(() => createJwtVerifier({ publicKeys, requiredClaims: [''] })).toThrow(/requiredClaims/);
  });
});

describe('createJwtVerifier: claims', () => {
  it('rejects an expired token, saying when it expired', async () => {
    const verify = verifierFor();
    const exp = T0_S - 120;
    await expectRejected(verify, signJwt('RS256', rsa.privateKey, claims({ exp })), 'expired', 'expired at 2025-01-15T11:58:00.000Z');
  });

  it('applies the clock tolerance to exp, nbf and iat', async () => {
    const lenient = verifierFor();
    const strict = verifierFor({ clockToleranceS: 0 });
    const justExpired = signJwt('ES256', ec.privateKey, claims({ exp: T0_S - 10 }));
    expect(await lenient(justExpired)).toMatchObject({ sub: 'user-1' });
    await expectRejected(strict, justExpired, 'expired', 'expired at 2025-01-15T11:59:50.000Z');
    // exp equal to now is already expired with no tolerance.
    await expectRejected(strict, signJwt('ES256', ec.privateKey, claims({ exp: T0_S })), 'expired');

    const almostValid = signJwt('ES256', ec.privateKey, claims({ nbf: T0_S + 20 }));
    expect(await lenient(almostValid)).toMatchObject({ sub: 'user-1' });
    await expectRejected(strict, almostValid, 'not_yet_valid', 'not valid before 2025-01-15T12:00:20.000Z');

    const issuedAhead = signJwt('ES256', ec.privateKey, claims({ iat: T0_S + 20 }));
    expect(await lenient(issuedAhead)).toMatchObject({ sub: 'user-1' });
    await expectRejected(strict, issuedAhead, 'not_yet_valid', 'issued in the future');
  });

  it('rejects a token whose nbf is in the future', async () => {
    const verify = verifierFor();
    await expectRejected(verify, signJwt('RS256', rsa.privateKey, claims({ nbf: T0_S + 600 })), 'not_yet_valid', 'not valid before 2025-01-15T12:10:00.000Z');
  });

  it('rejects a token issued in the future beyond the tolerance', async () => {
    const verify = verifierFor();
    await expectRejected(
      verify,
      signJwt('RS256', rsa.privateKey, claims({ iat: T0_S + 3600 })),
      'not_yet_valid',
      'issued in the future (iat 2025-01-15T13:00:00.000Z)',
    );
  });

  it('checks the issuer, naming the expected and actual values', async () => {
    const verify = verifierFor({ issuer: 'https://id.example.com' });
    expect(await verify(signJwt('RS256', rsa.privateKey, claims({ iss: 'https://id.example.com' })))).toMatchObject({ sub: 'user-1' });
    await expectRejected(
      verify,
      signJwt('RS256', rsa.privateKey, claims({ iss: 'https://evil.example.net' })),
      'wrong_issuer',
      '"https://evil.example.net"',
      'expected "https://id.example.com"',
    );
    await expectRejected(verify, signJwt('RS256', rsa.privateKey, claims()), 'missing_claim', '"iss"', '"https://id.example.com"');
    const either = verifierFor({ issuer: ['https://a.example', 'https://b.example'] });
    expect(await either(signJwt('RS256', rsa.privateKey, claims({ iss: 'https://b.example' })))).toMatchObject({ sub: 'user-1' });
    await expectRejected(either, signJwt('RS256', rsa.privateKey, claims({ iss: 'https://c.example' })), 'wrong_issuer', 'one of "https://a.example", "https://b.example"');
  });

  it('checks a string aud', async () => {
    const verify = verifierFor({ audience: 'gateway' });
    expect(await verify(signJwt('ES256', ec.privateKey, claims({ aud: 'gateway' })))).toMatchObject({ aud: 'gateway' });
    await expectRejected(verify, signJwt('ES256', ec.privateKey, claims({ aud: 'billing' })), 'wrong_audience', '"billing"', 'expected "gateway"');
    await expectRejected(verify, signJwt('ES256', ec.privateKey, claims()), 'missing_claim', '"aud"', '"gateway"');
  });

  it('checks an array aud against one or more accepted audiences', async () => {
    const verify = verifierFor({ audience: ['gateway', 'gateway-admin'] });
    expect(await verify(signJwt('RS256', rsa.privateKey, claims({ aud: ['billing', 'gateway-admin'] })))).toMatchObject({ sub: 'user-1' });
    await expectRejected(
      verify,
      signJwt('RS256', rsa.privateKey, claims({ aud: ['billing', 'reports'] })),
      'wrong_audience',
      'one of "billing", "reports"',
      'expected one of "gateway", "gateway-admin"',
    );
    await expectRejected(verify, signJwt('RS256', rsa.privateKey, claims({ aud: [] })), 'wrong_audience', 'not accepted');
    await expectRejected(verify, signJwt('RS256', rsa.privateKey, claims({ aud: [42] })), 'malformed', '"aud"');
  });

  it('requires the configured claims, naming the missing one', async () => {
    const verify = verifierFor({ requiredClaims: ['workspace_id', 'constructor'] });
    expect(await verify(signJwt('RS256', rsa.privateKey, claims({ workspace_id: 'ws_1', constructor: 'x' })))).toMatchObject({ workspace_id: 'ws_1' });
    await expectRejected(verify, signJwt('RS256', rsa.privateKey, claims({ constructor: 'x' })), 'missing_claim', '"workspace_id"', 'required');
    await expectRejected(verify, signJwt('RS256', rsa.privateKey, claims({ workspace_id: null, constructor: 'x' })), 'missing_claim', '"workspace_id"');
    // Object.prototype.constructor must not count as the claim.
    await expectRejected(verify, signJwt('RS256', rsa.privateKey, claims({ workspace_id: 'ws_1' })), 'missing_claim', '"constructor"');
  });

  it('rejects non-numeric time claims as malformed', async () => {
    const verify = verifierFor();
    await expectRejected(verify, signJwt('RS256', rsa.privateKey, claims({ exp: '2030-01-01' })), 'malformed', '"exp"', 'not a number');
    await expectRejected(verify, signJwt('RS256', rsa.privateKey, claims({ nbf: null })), 'malformed', '"nbf"');
  });

  it('does not look at claims before the signature holds', async () => {
    const verify = verifierFor({ issuer: 'https://id.example.com' });
    await expectRejected(verify, signJwt('RS256', rsaOther.privateKey, claims({ iss: 'nope', exp: 1 })), 'bad_signature');
  });
});

describe('createJwtVerifier: malformed tokens', () => {
  const validHeader = encodeJson({ alg: 'RS256', typ: 'JWT' });
  const validPayload = encodeJson(claims());
  const cases: Array<[string, string, string]> = [
    ['empty', '', 'empty'],
    ['one part', 'abcdef', 'has 1'],
    ['two parts', `${validHeader}.${validPayload}`, 'has 2'],
    ['four parts', `${validHeader}.${validPayload}.c2ln.c2ln`, 'has 4'],
    ['empty header', rawToken('', validPayload), 'header is empty'],
    ['header not base64url', rawToken('eyJ+YWxn', validPayload), 'header is not valid base64url'],
    ['header with padding', rawToken(`${validHeader}=`, validPayload), 'header is not valid base64url'],
    ['header of impossible length', rawToken('eyJhb', validPayload), 'header is not valid base64url'],
    ['header not JSON', rawToken(Buffer.from('{alg:RS256}').toString('base64url'), validPayload), 'header is not valid JSON'],
    ['header not UTF-8', rawToken(Buffer.from([0x7b, 0xff, 0x7d]).toString('base64url'), validPayload), 'header is not valid UTF-8'],
    ['header an array', rawToken(encodeJson(['RS256']), validPayload), 'header is not a JSON object'],
    ['header without alg', rawToken(encodeJson({ typ: 'JWT' }), validPayload), 'no "alg"'],
    ['kid not a string', rawToken(encodeJson({ alg: 'RS256', kid: 7 }), validPayload), '"kid" is not a string'],
    ['critical extensions', rawToken(encodeJson({ alg: 'RS256', crit: ['b64'], b64: false }), validPayload), '"crit"'],
    ['empty payload', rawToken(validHeader, ''), 'payload is empty'],
    ['payload not JSON', rawToken(validHeader, Buffer.from('sub=me').toString('base64url')), 'payload is not valid JSON'],
    ['payload a string', rawToken(validHeader, encodeJson('claims')), 'payload is not a JSON object'],
    ['payload null', rawToken(validHeader, encodeJson(null)), 'payload is not a JSON object'],
    ['payload an array', rawToken(validHeader, encodeJson([1, 2])), 'payload is not a JSON object'],
    ['no signature', `${validHeader}.${validPayload}.`, 'no signature'],
    ['signature not base64url', rawToken(validHeader, validPayload, 'c2ln!'), 'signature is not valid base64url'],
  ];

  for (const [name, token, fragment] of cases) {
    it(`rejects: ${name}`, async () => {
      await expectRejected(verifierFor(), token, 'malformed', fragment);
    });
  }

  it('rejects a non-string token', async () => {
    const verify = verifierFor() as (token: unknown) => Promise<unknown>;
    for (const token of [undefined, null, 42, { alg: 'none' }]) {
      await expect(verify(token)).rejects.toThrow(expect.objectContaining({ code: 'malformed', message: 'The token is not a string.' }));
    }
  });

  it('refuses tokens longer than 16 KiB before decoding them', async () => {
    const verify = verifierFor();
    const huge = signJwt('RS256', rsa.privateKey, claims({ padding: 'x'.repeat(16 * 1024) }));
    expect(huge.length).toBeGreaterThan(16 * 1024);
    await expectRejected(verify, huge, 'malformed', `${huge.length} characters long`, 'limit is 16384');
    await expectRejected(verify, 'a'.repeat(16 * 1024 + 1), 'malformed', 'limit is 16384');
    // Just under the limit is fine.
    const big = signJwt('RS256', rsa.privateKey, claims({ padding: 'x'.repeat(11_000) }));
    expect(big.length).toBeLessThanOrEqual(16 * 1024);
    expect(await verify(big)).toMatchObject({ sub: 'user-1' });
  });
});

describe('createJwtVerifier: cache', () => {
  it('returns the cached payload but still expires it on the fake clock', async () => {
    let now = T0;
    const verify = verifierFor({ now: () => now, clockToleranceS: 5 });
    const token = signJwt('ES256', ec.privateKey, claims({ exp: T0_S + 60 }));
    const first = await verify(token);
    expect(first).toMatchObject({ sub: 'user-1' });
    now += 30_000;
    // Same frozen object: the second call is a cache hit.
    expect(await verify(token)).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    now += 40_000; // T0 + 70 s: past exp + tolerance
    await expectRejected(verify, token, 'expired', 'expired at 2025-01-15T12:01:00.000Z');
    // Turning the clock back (the cache kept the entry) is accepted again.
    now = T0;
    expect(await verify(token)).toBe(first);
  });

  it('freezes nested claims so callers cannot alter the cached payload', async () => {
    const verify = verifierFor();
    const payload = await verify(signJwt('RS256', rsa.privateKey, claims({ roles: ['reader'], org: { id: 'o1' } })));
    expect(Object.isFrozen(payload.roles)).toBe(true);
    expect(Object.isFrozen(payload.org)).toBe(true);
  });

  it('does not share verified tokens between verifiers', async () => {
    const token = signJwt('RS256', rsa.privateKey, claims({ iss: 'https://a.example' }));
    expect(await verifierFor({ issuer: 'https://a.example' })(token)).toMatchObject({ iss: 'https://a.example' });
    await expectRejected(verifierFor({ issuer: 'https://b.example' }), token, 'wrong_issuer');
  });
});

describe('looksLikeJwt', () => {
  it('recognises signed and unsigned JWTs', async () => {
    expect(looksLikeJwt(signJwt('RS256', rsa.privateKey, claims()))).toBe(true);
    expect(looksLikeJwt(signJwt('ES256', ec.privateKey, claims()))).toBe(true);
    expect(looksLikeJwt(`${encodeJson({ alg: 'none' })}.${encodeJson(claims())}.`)).toBe(true);
  });

  it('rejects opaque keys and near misses', async () => {
    for (const value of [
      '',
      'sk-live-0123456789abcdef',
      'gw_3f9a8b7c6d5e4f3a2b1c',
      'abc.def.ghi',
      'eyJhbGciOiJSUzI1NiJ9',
      'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0',
      'eyJhbGciOiJSUzI1NiJ9..c2ln',
      'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln.c2ln',
      'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln ',
      'Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln',
      'eyJhbGci+OiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln',
    ]) {
      expect(looksLikeJwt(value), value).toBe(false);
    }
  });
});

describe('loadJwksFile', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'jwt-test-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function fileWith(name: string, content: string): Promise<string> {
    const path = join(dir, name);
    await writeFile(path, content);
    return path;
  }

  it('loads a JWKS that the verifier can use', async () => {
    const path = await fileWith('good.json', JSON.stringify({ keys: [jwkOf(rsa, { kid: 'r' }), jwkOf(ec, { kid: 'e' }), { kty: 'oct', k: 'c2VjcmV0' }] }));
    const jwks = await loadJwksFile(path);
    expect(jwks.keys).toHaveLength(3);
    const verify = createJwtVerifier({ jwks, now: fixedNow });
    expect(await verify(signJwt('RS256', rsa.privateKey, claims(), { kid: 'r' }))).toMatchObject({ sub: 'user-1' });
    expect(await verify(signJwt('ES256', ec.privateKey, claims(), { kid: 'e' }))).toMatchObject({ sub: 'user-1' });
  });

  it('names a missing file', async () => {
    const path = join(dir, 'absent.json');
    await expect(loadJwksFile(path)).rejects.toThrow(`cannot read JWKS file ${path}`);
    await expect(loadJwksFile(path)).rejects.toThrow(/ENOENT/);
  });

  it('names a file that is not JSON', async () => {
    const path = await fileWith('not-json.json', '-----BEGIN PUBLIC KEY-----\n');
    await expect(loadJwksFile(path)).rejects.toThrow(`JWKS file ${path} is not valid JSON`);
  });

  it('names a file without a keys array', async () => {
    for (const [name, content] of [
      ['no-keys.json', '{"issuer":"https://id.example.com"}'],
      ['keys-object.json', '{"keys":{"kty":"RSA"}}'],
      ['array.json', '[]'],
    ] as const) {
      const path = await fileWith(name, content);
      await expect(loadJwksFile(path)).rejects.toThrow(`JWKS file ${path} is not a JWKS: expected a JSON object with a "keys" array`);
    }
  });

  it('names a bad key entry, or a JWKS with nothing usable', async () => {
    const notObject = await fileWith('not-object.json', JSON.stringify({ keys: [jwkOf(rsa), 'oops'] }));
    await expect(loadJwksFile(notObject)).rejects.toThrow(`JWKS file ${notObject}: keys[1] is not an object`);
    const broken = await fileWith('broken.json', JSON.stringify({ keys: [{ kty: 'RSA', n: 'AQAB' }] }));
    await expect(loadJwksFile(broken)).rejects.toThrow(`JWKS file ${broken}: keys[0] is an RSA key without "n" and "e"`);
    const unusable = await fileWith('unusable.json', JSON.stringify({ keys: [{ kty: 'oct', k: 'c2VjcmV0' }] }));
    await expect(loadJwksFile(unusable)).rejects.toThrow(`JWKS file ${unusable} has no RSA or EC P-256 signing key`);
  });
});
