import { readdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { GatewayError, withoutUserInfo, type AuthInfo, type GatewayPlugin } from '../../../core/index.js';
import { config } from '../../../plugins/config/index.js';
import { BodySegments } from '../../../plugins/logs/bodies/segments.js';
import { entrySize } from '../../../plugins/logs/entry.js';
import { finishEntry } from '../../../plugins/logs/finish.js';
import { CUT_MARKER, headersForLog, MAX_HEADER_CHARS, MAX_HEADERS, WITHOUT_HELPER } from '../../../plugins/logs/headers.js';
import { logStore } from '../../../plugins/logs/index.js';
import { logApi } from '../../../plugins/logs/routes/index.js';
import { openai } from '../../../plugins/providers/openai/index.js';
import { providerHeaders } from '../../../plugins/provider-headers/index.js';
import { providerRegistry } from '../../../plugins/provider-registry/index.js';
import { proxy } from '../../../plugins/proxy/index.js';
import { sqliteStore } from '../../../plugins/stores/sqlite/index.js';
import { trace } from '../../../plugins/trace/index.js';
import { validation } from '../../../plugins/validation/index.js';
import { segmentText } from '../../helpers/log-segments.js';
import { serveGateway } from '../../helpers/serve.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';
import { openSqlite, sampleEntry, tempFile, waitFor } from './helpers.js';

/** Every secret the requests below send; none may be stored anywhere. */
const SECRETS = {
  gatewayKey: 'gw-hdr-SECRETgatewaykey0001',
  providerKey: 'sk-hdrSECRETproviderkey000000001',
  xApiKey: 'SECREThdrxapikey0001',
  cookie: 'SECREThdrcookie0001',
  configKey: 'SECREThdrconfigkey0001',
  urlPassword: 'SECREThdrurlpassword0001',
  urlUser: 'SECREThdrurluser0001',
  wrongField: 'SECREThdrwrongfield0001',
} as const;

describe('headersForLog', () => {
  const none = new Set<string>();

  test('ordinary headers as sent; credential headers keep their name, not their value', () => {
    const out = headersForLog(
      {
        'user-agent': 'OpenAI/JS 4.67.3',
        'x-gateway-trace-id': 'abc-123',
        accept: 'application/json',
        authorization: 'Bearer sk-abcdefghijklmnopqrstuvwxyz',
        'proxy-authorization': 'Basic dXNlcjpwYXNz',
        cookie: 'session=abc',
        'x-gateway-api-key': 'gw-1',
        'api-key': 'azure-1',
        'x-api-key': 'anthropic-1',
        'x-goog-api-key': 'AIza-1',
        'x-gateway-virtual-key': 'vk',
        'x-amz-security-token': 't',
        'x-client-secret': 's',
        'x-db-password': 'p',
        'x-request-signature': 'sig',
        'x-credential-id': 'c',
        'mcp-session-id': 'm',
        'x-gateway-csrf': 'csrf',
        'x-empty-token': '',
      },
      true,
      none,
      withoutUserInfo,
    );
    expect(out).toEqual({
      'user-agent': 'OpenAI/JS 4.67.3',
      'x-gateway-trace-id': 'abc-123',
      accept: 'application/json',
      authorization: '[REDACTED]',
      'proxy-authorization': '[REDACTED]',
      cookie: '[REDACTED]',
      'x-gateway-api-key': '[REDACTED]',
      'api-key': '[REDACTED]',
      'x-api-key': '[REDACTED]',
      'x-goog-api-key': '[REDACTED]',
      'x-gateway-virtual-key': '[REDACTED]',
      'x-amz-security-token': '[REDACTED]',
      'x-client-secret': '[REDACTED]',
      'x-db-password': '[REDACTED]',
      'x-request-signature': '[REDACTED]',
      'x-credential-id': '[REDACTED]',
      'mcp-session-id': '[REDACTED]',
      'x-gateway-csrf': '[REDACTED]',
      'x-empty-token': '',
    });
  });

  test('an inline config keeps its fields but not its credentials (the name rule and the declared fields); a saved id stays', () => {
    const inline = JSON.stringify({ provider: 'openai', api_key: 'k1', virtual_key: 'vk1', targets: [{ provider: 'bedrock', aws_secret_access_key: 'a1', weight: 1 }] });
    const declared = new Set(['api_key', 'virtual_key', 'aws_secret_access_key']);
    expect(JSON.parse(headersForLog({ 'x-gateway-config': inline }, true, declared, withoutUserInfo)['x-gateway-config']!)).toEqual({
      provider: 'openai',
      api_key: '[REDACTED]',
      virtual_key: '[REDACTED]',
      targets: [{ provider: 'bedrock', aws_secret_access_key: '[REDACTED]', weight: 1 }],
    });
    // Without the declared set, `virtual_key` is not a credential by its name: the declared fields are what catch it.
    expect(headersForLog({ 'x-gateway-config': inline }, true, null, withoutUserInfo)['x-gateway-config']).toContain('"virtual_key":"vk1"');
    // Not accepted by the gateway (refused, or never read): a credential may sit in any field, so none of it is kept.
    expect(headersForLog({ 'x-gateway-config': inline }, false, declared, withoutUserInfo)).toEqual({ 'x-gateway-config': '[REDACTED]' });
    expect(headersForLog({ 'x-gateway-config': ' {"api_key": "k1"' }, true, declared, withoutUserInfo)).toEqual({ 'x-gateway-config': '[REDACTED]' });
    expect(headersForLog({ 'x-gateway-config': 'cfg-prod-1' }, false, declared, withoutUserInfo)).toEqual({ 'x-gateway-config': 'cfg-prod-1' });
    // URL user info inside an accepted config goes too.
    const withUserInfo = JSON.stringify({ provider: 'openai', custom_host: 'https://u:pw@llm.example.com/v1' });
    expect(headersForLog({ 'x-gateway-config': withUserInfo }, true, declared, withoutUserInfo)['x-gateway-config']).toBe('{"provider":"openai","custom_host":"https://llm.example.com/v1"}');
  });

  test('URL user info and key-shaped text are taken out of any value; without the helper, a value with an @ is not kept', () => {
    const raw = { 'x-upstream': 'see https://user:secret@host.example/path and ftp://a@b.example', 'x-note': 'mine is sk-abcdefghijklmnopqrstuvwxyz ok', from: 'ops@example.com' };
    expect(headersForLog(raw, true, null, withoutUserInfo)).toEqual({
      'x-upstream': 'see https://host.example/path and ftp://b.example',
      'x-note': 'mine is [REDACTED] ok',
      from: 'ops@example.com',
    });
    expect(headersForLog(raw, true, null, WITHOUT_HELPER)).toEqual({ 'x-upstream': '[REDACTED]', 'x-note': 'mine is [REDACTED] ok', from: '[REDACTED]' });
  });

  test('at most 64 headers and 1,024 characters a value, cut after redaction with a marker; names in lower case; repeated values joined', () => {
    const many: Record<string, string> = {};
    for (let i = 0; i < 100; i++) many[`x-h-${i}`] = String(i);
    const kept = headersForLog(many, true, null, withoutUserInfo);
    expect(Object.keys(kept)).toHaveLength(MAX_HEADERS);
    expect(Object.keys(kept).at(-1)).toBe(`x-h-${MAX_HEADERS - 1}`);

    const long = `${'a'.repeat(1010)} sk-abcdefghijklmnopqrstuvwxyz ${'b'.repeat(2000)}`;
    const cut = headersForLog({ 'x-long': long, 'X-Mixed-Case': 'v', 'x-list': ['a', 'b'] as unknown as string }, true, null, withoutUserInfo);
    expect(cut['x-long']).toHaveLength(MAX_HEADER_CHARS);
    expect(cut['x-long']!.endsWith(CUT_MARKER)).toBe(true);
    expect(cut['x-long']).not.toContain('sk-abc');
    expect(cut['x-mixed-case']).toBe('v');
    expect(cut['x-list']).toBe('a, b');
    // A surrogate pair is never cut in half.
    const emoji = headersForLog({ 'x-e': '😀'.repeat(1000) }, true, null, withoutUserInfo)['x-e']!;
    expect(emoji.length).toBeLessThanOrEqual(MAX_HEADER_CHARS);
    expect(emoji.slice(0, -CUT_MARKER.length)).toBe('😀'.repeat((emoji.length - CUT_MARKER.length) / 2));
  });

  test('finishEntry fills request_headers from the received headers once: a batch finished again is unchanged', () => {
    const received = { 'x-gateway-config': JSON.stringify({ provider: 'openai', api_key: 'k', note: 'x'.repeat(3000) }), authorization: 'Bearer abc' };
    const e = sampleEntry({ received_headers: received, config_accepted: true });
    const size = entrySize(e);
    expect(size).toBeGreaterThan(entrySize(sampleEntry()) + 6000); // the held headers count against the queue's bound
    finishEntry(e, { capture: 'truncated', captureBytes: 1024, scanLimit: 4096, credentialFields: ['api_key'] }, withoutUserInfo);
    const first = structuredClone(e.request_headers);
    expect(e.received_headers).toBeNull();
    expect(first!.authorization).toBe('[REDACTED]');
    expect(first!['x-gateway-config']!.startsWith('{"provider":"openai","api_key":"[REDACTED]","note":"xxx')).toBe(true);
    expect(first!['x-gateway-config']!.endsWith(CUT_MARKER)).toBe(true);
    finishEntry(e, { capture: 'truncated', captureBytes: 1024, scanLimit: 4096, credentialFields: ['api_key'] }, withoutUserInfo);
    expect(e.request_headers).toEqual(first);
    // Headers are the request's own object until then: building the entry copies nothing.
    expect(sampleEntry({ received_headers: received }).received_headers).toBe(received);
  });
});

/** A test auth plugin whose key id does not contain the key, so the key has no reason to be stored. */
const auth: GatewayPlugin = {
  name: 'test-hdr-auth',
  apply(api) {
    api.hooks.auth.tap('test-hdr-auth', (ctx) => {
      if (ctx.header('x-gateway-api-key') !== SECRETS.gatewayKey) throw new GatewayError('unauthorized', 'unknown test key');
      return { keyId: 'key-hdr-1', workspaceId: null, scopes: ['*'] } satisfies AuthInfo;
    });
  },
};

describe.each(['thread', 'inline'] as const)('stored request headers, %s writer', (writer) => {
  let mock: MockUpstream;
  let gw: Awaited<ReturnType<typeof serveGateway>>;
  let file: string;
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await gw.close();
  };

  beforeAll(async () => {
    mock = await startMockOpenAI();
    file = await tempFile(`headers-${writer}.db`);
    gw = await serveGateway({
      plugins: [
        trace(),
        auth,
        providerHeaders(),
        validation(),
        openai(),
        proxy(),
        config(),
        providerRegistry({ providers: { 'vk-slug': { provider: 'openai', api_key: 'sk-slug-key-abcdefghijklmn', custom_host: mock.baseURL } } }),
        sqliteStore({ file }),
        logStore({ flushIntervalMs: 20, retentionDays: 0, writer }),
        logApi(),
      ],
    });
  });

  afterAll(async () => {
    await close();
    await mock.close();
  });

  const get = (path: string) => fetch(`${gw.url}${path}`, { headers: { 'x-gateway-api-key': SECRETS.gatewayKey } });
  const chat = async (headers: Record<string, string>): Promise<number> => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': SECRETS.gatewayKey, ...headers },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] }),
    });
    await res.text();
    return res.status;
  };
  /** The list item and the full entry of a trace id, once written. */
  const stored = async (traceId: string) => {
    const item = await waitFor(async () => ((await (await get(`/v1/logs?trace_id=${traceId}`)).json()) as { data: Record<string, any>[] }).data[0], 5000, traceId);
    const res = await get(`/v1/logs/${String(item.id)}`);
    expect(res.status).toBe(200);
    return { item, entry: (await res.json()) as Record<string, any> };
  };

  test('a request with every kind of secret header: ordinary headers as sent, secrets redacted, none of them anywhere in the row', async () => {
    const traceId = `hdr-${writer}-1`;
    const status = await chat({
      'x-gateway-trace-id': traceId,
      'user-agent': 'hdr-test/1.0',
      authorization: `Bearer ${SECRETS.providerKey}`,
      'x-api-key': SECRETS.xApiKey,
      cookie: `session=${SECRETS.cookie}; theme=dark`,
      'x-gateway-config': JSON.stringify({ provider: 'openai', api_key: SECRETS.configKey, custom_host: mock.baseURL }),
      'x-upstream-note': `mirror at https://${SECRETS.urlUser}:${SECRETS.urlPassword}@mirror.example/v1`,
    });
    expect(status).toBe(200);
    const { item, entry } = await stored(traceId);
    expect(item).not.toHaveProperty('request_headers');
    expect(item).not.toHaveProperty('request_body');
    expect(entry.request_headers).toMatchObject({
      'x-gateway-trace-id': traceId,
      'user-agent': 'hdr-test/1.0',
      'content-type': 'application/json',
      'x-gateway-api-key': '[REDACTED]',
      authorization: '[REDACTED]',
      'x-api-key': '[REDACTED]',
      cookie: '[REDACTED]',
      'x-upstream-note': 'mirror at https://mirror.example/v1',
    });
    expect(JSON.parse(entry.request_headers['x-gateway-config'])).toEqual({ provider: 'openai', api_key: '[REDACTED]', custom_host: mock.baseURL });
    expect(entry.request_headers.host).toMatch(/^127\.0\.0\.1:\d+$/);

    // The row itself, read from the SQLite file: no secret in any column, nor in the metadata table.
    const db = openSqlite(file);
    try {
      const row = db.prepare('SELECT * FROM gateway_logs WHERE trace_id = ?').get(traceId) as Record<string, unknown>;
      // The headers are kept out of the row, in the body segments beside the file (store/bodies.ts).
      expect(row.request_headers).toBeNull();
      const body = new BodySegments(`${file}.bodies`).read(String(row.body_ref)) as unknown[];
      expect(body[0]).toEqual(entry.request_headers);
      const text = JSON.stringify(row) + JSON.stringify(body) + JSON.stringify(db.prepare('SELECT * FROM gateway_log_metadata WHERE log_id = ?').all(row.id));
      for (const [name, secret] of Object.entries(SECRETS)) expect(text.includes(secret), name).toBe(false);
    } finally {
      db.close();
    }
  });

  test('a config the gateway refused is not kept (a key in a wrongly typed field); a declared credential field is redacted; a saved id is not a config', async () => {
    const refused = `hdr-${writer}-refused`;
    expect(await chat({ 'x-gateway-trace-id': refused, 'x-gateway-config': JSON.stringify({ provider: 'openai', api_key: 'k', weight: SECRETS.wrongField }) })).toBe(400);
    expect((await stored(refused)).entry.request_headers['x-gateway-config']).toBe('[REDACTED]');

    const virtual = `hdr-${writer}-vk`;
    expect(await chat({ 'x-gateway-trace-id': virtual, 'x-gateway-config': JSON.stringify({ virtual_key: 'vk-slug' }) })).toBe(200);
    expect(JSON.parse((await stored(virtual)).entry.request_headers['x-gateway-config'])).toEqual({ virtual_key: '[REDACTED]' });

    const saved = `hdr-${writer}-saved`;
    expect(await chat({ 'x-gateway-trace-id': saved, 'x-gateway-config': 'no-such-config' })).toBe(404);
    expect((await stored(saved)).entry.request_headers['x-gateway-config']).toBe('no-such-config');
  });

  test('after close, no secret is in any file of the database (WAL included) nor in its body segments', async () => {
    await close();
    const dir = dirname(file);
    const names = (await readdir(dir)).filter((n) => n.startsWith(`headers-${writer}.db`) && n !== `headers-${writer}.db.bodies`);
    expect(names).toContain(`headers-${writer}.db`);
    const segments = await readdir(`${file}.bodies`);
    expect(segments.length).toBeGreaterThan(0);
    const bytes = Buffer.concat([
      ...(await Promise.all(names.map((n) => readFile(join(dir, n))))),
      // Segments hold deflated blocks: searched as the text they hold.
      await segmentText(`${file}.bodies`),
    ]);
    expect(bytes.includes('hdr-test/1.0')).toBe(true); // the headers were stored, so the search means something
    for (const [name, secret] of Object.entries(SECRETS)) expect(bytes.includes(secret), name).toBe(false);
  });
});

