import { generateKeyPairSync, verify } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, test, vi } from 'vitest';
import { GatewayError, UpstreamClient } from '../../../../core/index.js';
import { LOOPBACK_HOSTS } from '../../../helpers/outbound.js';
import { EXPIRY_MARGIN_MS, SCOPE, TokenCache, signAssertion, tokenSender } from '../../../../plugins/providers/vertex-ai/auth.js';
import { startVertexContractMock, type VertexContractMock } from '../../../mocks/contract/vertex.js';

const EMAIL = 'sa@proj.iam.gserviceaccount.com';
const KID = 'kid-1';
const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const PEM = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

let mock: VertexContractMock;
let client: UpstreamClient;
beforeAll(async () => {
  mock = await startVertexContractMock({ publicKey, clientEmail: EMAIL, keyId: KID, expiresIn: 3600 });
  client = new UpstreamClient({ connections: 4, headersTimeoutMs: 5000, bodyTimeoutMs: 5000, outbound: { allowHosts: LOOPBACK_HOSTS } });
});
afterAll(async () => {
  await client.close();
  await mock.close();
});
afterEach(() => {
  vi.useRealTimers();
  mock.failTokens(null);
  mock.tokenDelayMs = 0;
});

const sa = (extra: Record<string, unknown> = {}) => ({ type: 'service_account', client_email: EMAIL, private_key_id: KID, private_key: PEM, token_uri: mock.tokenURL, ...extra });
const cache = () => new TokenCache(tokenSender(client));

describe('JWT assertion', () => {
  test('RS256 over base64url header.claims, with kid, iss/sub, scope, aud = token_uri, one-hour lifetime', () => {
    const jwt = signAssertion({ client_email: EMAIL, private_key: PEM, private_key_id: KID, token_uri: 'https://oauth2.googleapis.com/token' }, PEM, 1_735_689_600_500);
    const [h, c, s] = jwt.split('.') as [string, string, string];
    expect(jwt).not.toContain('=');
    expect(JSON.parse(Buffer.from(h, 'base64url').toString())).toEqual({ alg: 'RS256', typ: 'JWT', kid: KID });
    expect(JSON.parse(Buffer.from(c, 'base64url').toString())).toEqual({
      iss: EMAIL,
      sub: EMAIL,
      scope: SCOPE,
      aud: 'https://oauth2.googleapis.com/token',
      iat: 1_735_689_600,
      exp: 1_735_693_200,
    });
    expect(verify('sha256', Buffer.from(`${h}.${c}`), publicKey, Buffer.from(s, 'base64url'))).toBe(true);
  });

  test('the mock token endpoint verifies the assertion and refuses one signed with another key', async () => {
    const tokens = cache();
    await expect(tokens.token(sa())).resolves.toMatch(/^ya29\.mock-/);
    expect(mock.lastTokenError).toBeNull();
    const err = await tokens.token(sa({ private_key: other })).catch((e: unknown) => e);
    expect(mock.lastTokenError).toBe('Invalid JWT Signature.');
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).status).toBe(401);
  });
});

describe('TokenCache', () => {
  test('concurrent requests share one exchange; later ones use the cached token', async () => {
    const tokens = cache();
    mock.tokenDelayMs = 50;
    const before = mock.tokenRequests;
    const account = sa();
    const got = await Promise.all([tokens.token(account), tokens.token({ ...account }), tokens.token(account)]);
    expect(new Set(got).size).toBe(1);
    expect(mock.tokenRequests - before).toBe(1);
    await tokens.token(account);
    expect(mock.tokenRequests - before).toBe(1);
  });

  test('refetched once the token is within 5 minutes of expiry (fake clock)', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date('2030-01-01T00:00:00Z'));
    const tokens = cache();
    const before = mock.tokenRequests;
    const first = await tokens.token(sa());
    vi.setSystemTime(Date.now() + 3600_000 - EXPIRY_MARGIN_MS - 1000);
    expect(await tokens.token(sa())).toBe(first);
    expect(mock.tokenRequests - before).toBe(1);
    vi.setSystemTime(Date.now() + 2000);
    const second = await tokens.token(sa());
    expect(second).not.toBe(first);
    expect(mock.tokenRequests - before).toBe(2);
    expect(mock.lastTokenError).toBeNull();
  });

  test('tokens are kept per account: same email and key id with another private key is another entry', async () => {
    const tokens = cache();
    const before = mock.tokenRequests;
    await tokens.token(sa());
    await tokens.token(sa({ private_key: other })).catch(() => undefined);
    expect(mock.tokenRequests - before).toBe(2);
    expect(tokens.size).toBe(1);
  });

  test('a refused exchange is a 401 that names neither the key nor the assertion; failures are not cached', async () => {
    const tokens = cache();
    mock.failTokens('invalid_grant');
    const err = (await tokens.token(sa()).catch((e: unknown) => e)) as GatewayError;
    expect(err.status).toBe(401);
    expect(err.message).toContain('invalid_grant');
    expect(err.message).not.toContain('PRIVATE KEY');
    expect(err.message).not.toContain('eyJ');
    mock.failTokens(null);
    await expect(tokens.token(sa())).resolves.toMatch(/^ya29\./);
  });

  test('a token endpoint failure is a 502', async () => {
    mock.failTokens(500);
    const err = (await cache().token(sa()).catch((e: unknown) => e)) as GatewayError;
    expect(err.status).toBe(502);
  });

  test('unusable key files are 401s naming the field, never its value', async () => {
    const tokens = cache();
    const missing = (await tokens.token({ private_key: PEM }).catch((e: unknown) => e)) as GatewayError;
    expect(missing.status).toBe(401);
    expect(missing.param).toBe('vertex_service_account_json');
    expect(missing.message).toContain('client_email');
    const bad = (await tokens.token(sa({ private_key: '-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----' })).catch((e: unknown) => e)) as GatewayError;
    expect(bad.status).toBe(401);
    expect(bad.message).not.toContain('not a key');
    const uri = (await tokens.token(sa({ token_uri: 'file:///etc/passwd' })).catch((e: unknown) => e)) as GatewayError;
    expect(uri.status).toBe(401);
  });
});
