import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import type { Stream } from 'openai/core/streaming';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { GatewayPlugin } from '../../../core/index.js';
import { cache } from '../../../plugins/cache/index.js';
import { cacheSimple } from '../../../plugins/cache/simple/index.js';
import { cacheMemory } from '../../../plugins/cache/stores/memory/index.js';
import { config } from '../../../plugins/config/index.js';
import { controlPlane } from '../../../plugins/control-plane/index.js';
import { guardrailChecks } from '../../../plugins/guardrails/checks/index.js';
import { guardrails } from '../../../plugins/guardrails/index.js';
import { limits } from '../../../plugins/limits/index.js';
import { logStore } from '../../../plugins/logs/index.js';
import { logApi } from '../../../plugins/logs/routes/index.js';
import { prompts } from '../../../plugins/prompts/index.js';
import { providerHeaders } from '../../../plugins/provider-headers/index.js';
import { providerRegistry } from '../../../plugins/provider-registry/index.js';
import { proxy } from '../../../plugins/proxy/index.js';
import { openai } from '../../../plugins/providers/openai/index.js';
import { postgresStore } from '../../../plugins/stores/postgres/index.js';
import { sqliteStore } from '../../../plugins/stores/sqlite/index.js';
import { fallbackStrategy } from '../../../plugins/strategies/fallback/index.js';
import { trace } from '../../../plugins/trace/index.js';
import { validation } from '../../../plugins/validation/index.js';
import { serveGateway } from '../../helpers/serve.js';
import { DATABASE_URL, dropSchema, requireService, uniqueSchema } from '../../helpers/services.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';

const ADMIN = 'prompts-admin-bootstrap-key-0001';
const START = Date.parse('2026-03-02T09:00:00Z');
const TTL = 10_000;

type Json = Record<string, any>;
interface Reply {
  status: number;
  body: Json;
  headers: Headers;
  text: string;
}

/** A gateway with the control plane on `store`, the prompts plugin and what a prompt completion goes through. */
function startGateway(store: () => GatewayPlugin, clock: { now: number }, dataDir: string) {
  return serveGateway({
    plugins: [
      trace(),
      store(),
      controlPlane({ bootstrapKey: ADMIN, dataDir, now: () => clock.now, cacheTtlMs: TTL, announce: () => undefined }),
      config(),
      prompts(),
      providerHeaders(),
      providerRegistry(),
      validation(),
      guardrailChecks(),
      guardrails(),
      limits({ now: () => clock.now }),
      cacheMemory(),
      cache(),
      cacheSimple(),
      fallbackStrategy(),
      openai(),
      logStore({ flushIntervalMs: 20, retentionDays: 0 }),
      logApi(),
      // As in the default config: the proxy claims x-gateway-proxy requests of every /v1 route, which must not
      // change which route a prompt completion matched (the prompts plugin compares ctx.route with its own).
      proxy(),
    ],
  });
}

function suite(name: string, makeStore: () => Promise<(() => GatewayPlugin) | null>) {
  describe(`stored prompts on ${name}`, () => {
    const clock = { now: START };
    let store: (() => GatewayPlugin) | null = null;
    let gw: Awaited<ReturnType<typeof startGateway>>;
    let mock: MockUpstream;
    let dataDir: string;
    const ids: Json = {};
    const keys: Record<string, string> = {};

    const call = async (method: string, path: string, key: string | null, body?: unknown, headers: Record<string, string> = {}, url = gw.url): Promise<Reply> => {
      const res = await fetch(`${url}/v1${path}`, {
        method,
        headers: { ...(key === null ? {} : { 'x-gateway-api-key': key }), ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      let parsed: Json = {};
      try {
        parsed = text === '' ? {} : JSON.parse(text);
      } catch {
        /* an SSE answer: read `text` */
      }
      return { status: res.status, body: parsed, headers: res.headers, text };
    };
    const expectOk = async (p: Promise<Reply>) => {
      const r = await p;
      expect(r.status, r.text).toBe(200);
      return r.body;
    };
    const expectError = async (p: Promise<Reply>, status: number, param?: string | null) => {
      const r = await p;
      expect(r.status, r.text).toBe(status);
      expect(Object.keys(r.body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
      if (param !== undefined) expect(r.body.error.param).toBe(param);
      return r.body.error as { message: string; type: string; param: string | null; code: string };
    };
    /** The chat bodies the mock provider received since `from`. */
    const sent = (from = 0): Json[] => mock.requests.slice(from).filter((r) => r.path === '/v1/chat/completions').map((r) => JSON.parse(r.body));
    const lastSent = () => sent().at(-1)!;
    const complete = (ref: string, body: Json, key = keys.A!, headers: Record<string, string> = {}) => call('POST', `/prompts/${ref}/completions`, key, body, headers);
    const chat = (body: Json, cfg: Json, key = keys.A!) => call('POST', '/chat/completions', key, body, { 'x-gateway-config': JSON.stringify(cfg) });
    const userText = (body: Json) => body.messages.at(-1).content as string;

    /** A prompt in workspace A through `@oa`; answers the created prompt. */
    const createPrompt = (fields: Json, key = keys.A!) => expectOk(call('POST', '/prompts', key, { provider: '@oa', ...fields }));

    beforeAll(async () => {
      store = await makeStore();
      if (store === null) return;
      dataDir = await mkdtemp(join(tmpdir(), 'gw-prompts-'));
      mock = await startMockOpenAI();
      gw = await startGateway(store, clock, dataDir);
      await gw.gateway.ready;

      const all = ['prompts.*', 'completions.write', 'logs.read', 'configs.*', 'providers.*', 'integrations.*'];
      for (const ws of ['A', 'B']) {
        ids[ws] = (await expectOk(call('POST', '/workspaces', ADMIN, { name: `Team ${ws}`, slug: `team-${ws.toLowerCase()}` }))).id;
        keys[ws] = (await expectOk(call('POST', '/api-keys', ADMIN, { type: 'workspace-service', name: `${ws} prompts`, workspace_id: ids[ws], scopes: all }))).key;
        await expectOk(
          call('POST', '/integrations', keys[ws]!, {
            name: `OpenAI ${ws}`,
            slug: `openai-${ws.toLowerCase()}`,
            ai_provider_id: 'openai',
            key: `sk-integration-${ws}-0123456789`,
            configurations: { custom_host: mock.baseURL },
            create_default_provider: true,
            default_provider_slug: `o${ws.toLowerCase()}`,
          }),
        );
      }
      keys.bare = (await expectOk(call('POST', '/api-keys', ADMIN, { type: 'workspace-service', name: 'completions only', workspace_id: ids.A, scopes: ['completions.write'] }))).key;
      keys.editor = (await expectOk(call('POST', '/api-keys', ADMIN, { type: 'workspace-service', name: 'editor', workspace_id: ids.A, scopes: ['prompts.create', 'prompts.read', 'prompts.update', 'completions.write'] }))).key;

      ids.signature = (await expectOk(call('POST', '/prompts/partials', keys.A!, { name: 'signature', content: '-- {{team}} team' }))).id;
      const greeting = await createPrompt({
        name: 'Greeting',
        slug: 'greeting',
        template: {
          model: 'gpt-4o-mini',
          temperature: 0.2,
          max_completion_tokens: 50,
          response_format: { type: 'text' },
          messages: [
            { role: 'system', content: 'You greet people.\n{{> signature}}' },
            { role: 'user', content: [{ type: 'text', text: 'Greet {{name}}{{#items}}, who bought {{.}}{{/items}}.{{^vip}} Offer a discount.{{/vip}}' }] },
          ],
        },
        variables: { team: { default: 'Support' } },
        description: 'First draft',
      });
      ids.greeting = greeting.id;
    });

    afterAll(async () => {
      if (store === null) return;
      await gw?.close();
      await mock?.close();
    });
    const skip = () => store === null;

    test('create answers the prompt with its id, version 1 published; GET shows the version, the list pages', async () => {
      if (skip()) return;
      const created = await createPrompt({ name: 'Short lived', template: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] } });
      expect(created).toMatchObject({ object: 'prompt', name: 'Short lived', version: 1, latest_version: 1, published_version: 1, status: 'active', workspace_id: ids.A, provider: '@oa' });
      expect(created.id).toMatch(/^pp-[a-z0-9]{16}$/);
      const got = await expectOk(call('GET', '/prompts/greeting', keys.A!));
      expect(got).toMatchObject({ id: ids.greeting, slug: 'greeting', version: 1, description: 'First draft', variables: { team: { default: 'Support' } }, partials: ['signature'] });
      expect(got.template.messages[0].content).toBe('You greet people.\n{{> signature}}');
      expect(Object.keys(got.template)).toEqual(['model', 'temperature', 'max_completion_tokens', 'response_format', 'messages']); // as written
      const page = await expectOk(call('GET', '/prompts?page_size=1', keys.A!));
      expect(page.total_count).toBe(2);
      expect(page.data).toHaveLength(1);
      expect(page.data[0].template).toBeUndefined(); // lists carry no templates
      const second = await expectOk(call('GET', '/prompts?page_size=1&current_page=1', keys.A!));
      expect(second.data[0].id).not.toBe(page.data[0].id);
      await expectOk(call('DELETE', `/prompts/${created.id}`, keys.A!));
    });

    test('variables: substitution, sections, inverted sections, a partial, a declared default; HTML is not escaped', async () => {
      if (skip()) return;
      const r = await complete('greeting', { variables: { name: 'Ann & <Bob>', items: ['a "lamp"', 'a desk'], vip: false } });
      expect(r.status, r.text).toBe(200);
      const body = lastSent();
      expect(body.messages[0].content).toBe('You greet people.\n-- Support team');
      expect(body.messages[1].content).toEqual([{ type: 'text', text: 'Greet Ann & <Bob>, who bought a "lamp", who bought a desk. Offer a discount.' }]);
      expect(body).not.toHaveProperty('variables');
      await complete('greeting', { variables: { name: 'Cy', vip: true, team: 'Sales' } });
      expect(lastSent().messages[0].content).toBe('You greet people.\n-- Sales team');
      expect(lastSent().messages[1].content[0].text).toBe('Greet Cy.');
    });

    test('a variable holding Mustache syntax is written as text, never expanded again', async () => {
      if (skip()) return;
      const tricky = '{{team}} {{> signature}} {{#x}}y{{/x}} {{{name}}}';
      expect((await complete('greeting', { variables: { name: tricky, vip: true } })).status).toBe(200);
      expect(lastSent().messages[1].content[0].text).toBe(`Greet ${tricky}.`);
    });

    test('a missing variable is a 400 naming every missing one; variables must be an object', async () => {
      if (skip()) return;
      const id = (await createPrompt({ name: 'Two vars', template: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: '{{first}} and {{second.part}} and {{#opt}}{{inner}}{{/opt}}' }] } })).id;
      const before = mock.requests.length;
      const error = await expectError(complete(id, { variables: {} }), 400, 'variables');
      expect(error).toMatchObject({ code: 'missing_variables', type: 'invalid_request_error' });
      expect(error.message).toContain('"first"');
      expect(error.message).toContain('"second"');
      expect(error.message).not.toContain('inner'); // inside a section, a name may come from the section's value
      expect(error.message).not.toContain('"opt"'); // an absent section is simply not rendered
      await expectError(complete(id, {}), 400, 'variables');
      await expectError(complete(id, { variables: ['first'] }), 400, 'variables');
      expect(mock.requests.length).toBe(before); // nothing was sent
      expect((await complete(id, { variables: { first: 1, second: { part: true } } })).status).toBe(200);
      expect(userText(lastSent())).toBe('1 and true and ');
    });

    test('the answer is the envelope {status, headers, body} with the chat completion as body', async () => {
      if (skip()) return;
      const r = await complete(`${ids.greeting}`, { variables: { name: 'Dee', vip: true } });
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toBe('application/json');
      expect(Object.keys(r.body).sort()).toEqual(['body', 'headers', 'status']);
      expect(r.body.status).toBe('success');
      expect(r.body.headers).toMatchObject({ 'x-request-id': 'req_mock', 'content-type': 'application/json' });
      expect(r.body.headers['content-length']).toBeUndefined();
      expect(r.body.body).toMatchObject({ object: 'chat.completion', model: 'gpt-4o-mini', choices: [{ message: { role: 'assistant', content: 'Hello from the mock!' } }], usage: { total_tokens: 11 } });
      expect(r.headers.get('x-gateway-provider')).toBe('openai');
      // Errors keep the gateway's one error envelope.
      const failed = await complete('greeting', { variables: { name: 'x' }, model: 'error-429' });
      expect(failed.status).toBe(429);
      expect(failed.body.error).toBeDefined();
      expect(failed.body.body).toBeUndefined();
    });

    test('hyperparameters at the root of the body override the saved ones; max_tokens is still accepted; messages are added after the template', async () => {
      if (skip()) return;
      await complete('greeting', { variables: { name: 'Eve', vip: true }, temperature: 0.9, max_tokens: 12, seed: 7, user: 'u-1' });
      const body = lastSent();
      expect(body).toMatchObject({ model: 'gpt-4o-mini', temperature: 0.9, max_tokens: 12, seed: 7, user: 'u-1', response_format: { type: 'text' } });
      expect(body).not.toHaveProperty('max_completion_tokens'); // providers refuse both bounds together
      await complete('greeting', { variables: { name: 'Eve', vip: true }, model: 'gpt-4o', max_completion_tokens: 5, messages: [{ role: 'assistant', content: 'Hi {{name}}' }, { role: 'user', content: 'And?' }] });
      const second = lastSent();
      expect(second).toMatchObject({ model: 'gpt-4o', max_completion_tokens: 5, temperature: 0.2 });
      expect(second.messages.map((m: Json) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
      expect(second.messages[2].content).toBe('Hi {{name}}'); // the request's own messages are never rendered
      // An override is validated like any chat parameter.
      await expectError(complete('greeting', { variables: { name: 'x' }, temperature: 7 }), 400, 'temperature');
    });

    test('streaming through the official openai SDK: the chat completions stream', async () => {
      if (skip()) return;
      const client = new OpenAI({ apiKey: 'unused-provider-key', baseURL: `${gw.url}/v1`, defaultHeaders: { 'x-gateway-api-key': keys.A! } });
      const stream = await client.post<Stream<ChatCompletionChunk>>('/prompts/greeting/completions', { body: { variables: { name: 'Flo', vip: true }, stream: true }, stream: true });
      let text = '';
      let chunks = 0;
      for await (const chunk of stream) {
        chunks++;
        expect(chunk.object).toBe('chat.completion.chunk');
        text += chunk.choices[0]?.delta.content ?? '';
      }
      expect(chunks).toBeGreaterThan(1);
      expect(text).toBe('Hello!');
      expect(lastSent().stream).toBe(true);
      const envelope = await client.post<Json>('/prompts/greeting/completions', { body: { variables: { name: 'Flo', vip: true } } });
      expect(envelope).toMatchObject({ status: 'success', body: { object: 'chat.completion' } });
      // The raw stream ends with [DONE], unwrapped.
      const raw = await complete('greeting', { variables: { name: 'Gil', vip: true }, stream: true });
      expect(raw.headers.get('content-type')).toContain('text/event-stream');
      expect(raw.text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    });

    test('version selection: the published version without a suffix, @latest, @N, an unknown @N; patch against a full update', async () => {
      if (skip()) return;
      const id = (await createPrompt({ name: 'Versions', template: { model: 'gpt-4o-mini', temperature: 0.1, messages: [{ role: 'user', content: 'v1 {{who}}' }] }, description: 'one' })).id;
      // A full update: the body is the whole version (no description given: none).
      const v2 = await expectOk(call('PUT', `/prompts/${id}`, keys.A!, { template: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'v2 {{who}}' }] }, provider: '@oa' }));
      expect(v2).toMatchObject({ version: 2, latest_version: 2, published_version: 1, description: null });
      expect(v2.template.temperature).toBeUndefined();
      // A patch: what is left out is the latest version's; the template given replaces the whole template.
      const v3 = await expectOk(call('PUT', `/prompts/${id}`, keys.A!, { patch: true, description: 'three', variables: { who: { default: 'you' } } }));
      expect(v3).toMatchObject({ version: 3, description: 'three', provider: '@oa', variables: { who: { default: 'you' } } });
      expect(v3.template).toEqual(v2.template);
      const v4 = await expectOk(call('PUT', `/prompts/${id}`, keys.A!, { patch: true, template: { model: 'gpt-4o', messages: [{ role: 'user', content: 'v4 {{who}}' }] } }));
      expect(v4).toMatchObject({ version: 4, description: 'three', variables: { who: { default: 'you' } }, template: { model: 'gpt-4o', messages: [{ role: 'user', content: 'v4 {{who}}' }] } });
      // Without patch, a body without the template or the provider is incomplete.
      await expectError(call('PUT', `/prompts/${id}`, keys.A!, { description: 'x' }), 400, 'template');
      await expectError(call('PUT', `/prompts/${id}`, keys.A!, { template: { model: 'm', messages: [{ role: 'user', content: 'x' }] } }), 400, 'provider');

      await complete(id, { variables: { who: 'A' } });
      expect(userText(lastSent())).toBe('v1 A');
      await complete(`${id}@latest`, { variables: {} });
      expect(lastSent()).toMatchObject({ model: 'gpt-4o', messages: [{ content: 'v4 you' }] });
      await complete(`${id}@2`, { variables: { who: 'B' } });
      expect(userText(lastSent())).toBe('v2 B');
      const unknown = await expectError(complete(`${id}@9`, { variables: {} }), 404, 'promptId');
      expect(unknown.message).toContain('no version 9');
      await expectError(complete(`${id}@0`, { variables: {} }), 400, 'promptId');
      await expectError(complete(`${id}@newest`, { variables: {} }), 400, 'promptId');
      expect((await expectOk(call('GET', `/prompts/${id}@latest`, keys.A!))).version).toBe(4);
      expect((await expectOk(call('GET', `/prompts/${id}@2`, keys.A!))).template.messages[0].content).toBe('v2 {{who}}');
      await expectError(call('GET', `/prompts/${id}@5`, keys.A!), 404);

      const versions = await expectOk(call('GET', `/prompts/${id}/versions?page_size=3`, keys.A!));
      expect(versions.total_count).toBe(4);
      expect(versions.data.map((x: Json) => [x.version, x.published])).toEqual([[4, false], [3, false], [2, false]]);

      // Publishing: the next call without a suffix gets the new version; this instance sees it at once.
      const published = await expectOk(call('POST', `/prompts/${id}/publish`, keys.A!, { version: 3 }));
      expect(published).toMatchObject({ version: 3, published_version: 3, latest_version: 4 });
      await complete(id, { variables: {} });
      expect(userText(lastSent())).toBe('v2 you');
      await expectError(call('POST', `/prompts/${id}/publish`, keys.A!, { version: 5 }), 404, 'version');
      await expectError(call('POST', `/prompts/${id}/publish`, keys.A!, { version: 'latest' }), 400, 'version');
      const refused = await expectError(call('POST', `/prompts/${id}/publish`, keys.editor!, { version: 4 }), 403);
      expect(refused.message).toContain('"prompts.publish"');
      ids.versions = id;
    });

    test('concurrent updates each get their own version number', async () => {
      if (skip()) return;
      const id = (await createPrompt({ name: 'Busy', template: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'v1' }] } })).id;
      const replies = await Promise.all(
        Array.from({ length: 8 }, (_, i) => call('PUT', `/prompts/${id}`, keys.A!, { patch: true, template: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: `v-${i}` }] } })),
      );
      expect(replies.map((r) => r.status)).toEqual(Array(8).fill(200));
      expect(replies.map((r) => r.body.version).sort((a, b) => a - b)).toEqual([2, 3, 4, 5, 6, 7, 8, 9]);
      const versions = await expectOk(call('GET', `/prompts/${id}/versions`, keys.A!));
      expect(versions.total_count).toBe(9);
      expect((await expectOk(call('GET', `/prompts/${id}`, keys.A!))).latest_version).toBe(9);
    });

    test('archive: the prompt answers 404 on the request path, stays readable by id, leaves the list and frees its slug', async () => {
      if (skip()) return;
      const first = await createPrompt({ name: 'Old', slug: 'reused', template: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'old' }] } });
      await expectError(call('POST', '/prompts', keys.A!, { name: 'Dup', slug: 'reused', provider: '@oa', template: { model: 'm', messages: [{ role: 'user', content: 'x' }] } }), 409, 'slug');
      const archived = await expectOk(call('DELETE', '/prompts/reused', keys.A!));
      expect(archived).toMatchObject({ id: first.id, status: 'archived' });
      expect(archived.archived_at).not.toBeNull();
      await expectError(complete(first.id, { variables: {} }), 404, 'promptId');
      await expectError(complete('reused', { variables: {} }), 404, 'promptId');
      expect((await expectOk(call('GET', `/prompts/${first.id}`, keys.A!))).status).toBe('archived');
      await expectError(call('PUT', `/prompts/${first.id}`, keys.A!, { patch: true }), 409);
      expect((await expectOk(call('GET', '/prompts', keys.A!))).data.map((p: Json) => p.id)).not.toContain(first.id);
      const archivedOnly = (await expectOk(call('GET', '/prompts?status=archived', keys.A!))).data as Json[];
      expect(archivedOnly.map((p) => p.id)).toContain(first.id);
      expect(archivedOnly.every((p) => p.status === 'archived')).toBe(true);
      const second = await createPrompt({ name: 'New', slug: 'reused', template: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'new' }] } });
      await complete('reused', { variables: {} });
      expect(userText(lastSent())).toBe('new');
      expect(second.id).not.toBe(first.id);
    });

    test('prompt_id in a chat config with a fallback target: rendered once, the fallback sends the same body', async () => {
      if (skip()) return;
      const from = mock.requests.length;
      const cfg = { prompt_id: 'greeting', strategy: { mode: 'fallback' }, targets: [{ provider: '@oa', override_params: { model: 'error-503' } }, { provider: '@oa' }] };
      const r = await chat({ variables: { name: 'Hal', vip: true }, temperature: 0.5 }, cfg);
      expect(r.status, r.text).toBe(200);
      expect(r.body.object).toBe('chat.completion'); // the chat route keeps the chat shape
      expect(r.headers.get('x-gateway-last-used-option-index')).toBe('1');
      const bodies = sent(from);
      expect(bodies.map((b) => b.model)).toEqual(['error-503', 'gpt-4o-mini']);
      for (const b of bodies) {
        expect(b.messages[1].content[0].text).toBe('Greet Hal.');
        expect(b.temperature).toBe(0.5);
        expect(b).not.toHaveProperty('variables');
      }
      // A config with prompt_id and no provider sends where the prompt says; a version suffix works there too.
      const alone = await chat({ variables: {} }, { prompt_id: `${ids.versions}@latest` });
      expect(alone.status, alone.text).toBe(200);
      expect(userText(lastSent())).toBe('v4 you');
      await expectError(chat({ variables: {} }, { prompt_id: 'no-such-prompt' }), 404, 'prompt_id');
      await expectError(chat({ variables: {} }, { strategy: { mode: 'fallback' }, targets: [{ provider: '@oa', prompt_id: 'greeting' }] }), 400, 'x-gateway-config');
    });

    test('the cache keys on the rendered body; guardrails check the rendered text', async () => {
      if (skip()) return;
      const cached = { prompt_id: 'greeting', cache: { mode: 'simple' } };
      const first = await chat({ variables: { name: 'Ivy', vip: true } }, cached);
      expect(first.headers.get('x-gateway-cache-status')).toBe('MISS');
      const again = await chat({ variables: { name: 'Ivy', vip: true } }, cached);
      expect(again.headers.get('x-gateway-cache-status')).toBe('HIT');
      const other = await chat({ variables: { name: 'Jo', vip: true } }, cached);
      expect(other.headers.get('x-gateway-cache-status')).toBe('MISS');
      // The prompt completions route goes through the same cache (same rendered body, same target): a hit, in the envelope.
      const viaRoute = await call('POST', '/prompts/greeting/completions', keys.A!, { variables: { name: 'Ivy', vip: true } });
      expect(viaRoute.status).toBe(200);
      expect(viaRoute.body).toMatchObject({ status: 'success', body: { object: 'chat.completion' } });

      const guarded = { prompt_id: 'greeting', input_guardrails: [{ id: 'no-lamps', deny: true, 'default.contains': { words: ['lamp'], operator: 'none' } }] };
      expect((await chat({ variables: { name: 'Kim', vip: true } }, guarded)).status).toBe(200);
      const denied = await chat({ variables: { name: 'Kim', items: ['a lamp'], vip: true } }, guarded);
      expect(denied.status).toBe(446);
    });

    test('a chat request without prompt_id is untouched: its bytes go upstream as sent', async () => {
      if (skip()) return;
      const raw = '{ "model" : "gpt-4o-mini",\n  "messages": [ {"role":"user","content":"{{not a template}}"} ], "variables": {"x": 1} }';
      const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-gateway-api-key': keys.A!, 'x-gateway-provider': '@oa' }, body: raw });
      expect(res.status).toBe(200);
      expect(mock.requests.at(-1)!.body).toBe(raw);
    });

    test('the render route answers the chat body that would be sent, without calling the provider', async () => {
      if (skip()) return;
      const before = mock.requests.length;
      const r = await expectOk(call('POST', '/prompts/greeting/render', keys.A!, { variables: { name: 'Lu', vip: true }, temperature: 1 }));
      expect(r).toMatchObject({ object: 'prompt.render', prompt_id: ids.greeting, version: 1, provider: '@oa', partials: { signature: 1 } });
      expect(r.body).toMatchObject({ model: 'gpt-4o-mini', temperature: 1, messages: [{ content: 'You greet people.\n-- Support team' }, { content: [{ text: 'Greet Lu.' }] }] });
      expect(mock.requests.length).toBe(before);
      await expectError(call('POST', '/prompts/greeting/render', keys.A!, { variables: {} }), 400, 'variables');
      const refused = await expectError(call('POST', '/prompts/greeting/render', keys.bare!, { variables: { name: 'x' } }), 403);
      expect(refused.message).toContain('"prompts.read"');
    });

    test('partials have versions and a published one; a partial cannot include itself; an archived one makes its prompts fail clearly', async () => {
      if (skip()) return;
      const v2 = await expectOk(call('PUT', '/prompts/partials/signature', keys.A!, { content: 'Regards, {{team}}' }));
      expect(v2).toMatchObject({ name: 'signature', version: 2, published_version: 1 });
      let r = await expectOk(call('POST', '/prompts/greeting/render', keys.A!, { variables: { name: 'Mo', vip: true } }));
      expect(r.body.messages[0].content).toBe('You greet people.\n-- Support team');
      await expectOk(call('POST', '/prompts/partials/signature/publish', keys.A!, { version: 2 }));
      r = await expectOk(call('POST', '/prompts/greeting/render', keys.A!, { variables: { name: 'Mo', vip: true } }));
      expect(r.body.messages[0].content).toBe('You greet people.\nRegards, Support');
      expect(r.partials).toEqual({ signature: 2 });
      expect((await expectOk(call('GET', '/prompts/partials/signature@1', keys.A!))).content).toBe('-- {{team}} team');
      expect((await expectOk(call('GET', '/prompts/partials/signature/versions', keys.A!))).data.map((x: Json) => x.version)).toEqual([2, 1]);

      await expectError(call('POST', '/prompts/partials', keys.A!, { name: 'outer', content: '[{{> inner}}]' }), 400, 'content'); // no partial "inner" yet
      await expectOk(call('POST', '/prompts/partials', keys.A!, { name: 'inner', content: 'in' }));
      await expectOk(call('POST', '/prompts/partials', keys.A!, { name: 'outer', content: '[{{> inner}}]' }));
      await expectError(call('PUT', '/prompts/partials/inner', keys.A!, { content: '{{> outer}}' }), 400, 'content');
      await expectError(call('PUT', '/prompts/partials/inner', keys.A!, { content: '{{> inner}}' }), 400, 'content');

      const uses = await createPrompt({ name: 'Uses outer', template: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x {{> outer}}' }] } });
      await complete(uses.id, { variables: {} });
      expect(userText(lastSent())).toBe('x [in]');
      await expectOk(call('DELETE', '/prompts/partials/inner', keys.A!));
      const broken = await expectError(complete(uses.id, { variables: {} }), 400, 'prompt_id');
      expect(broken.message).toContain('"inner"');
    });

    test('saving checks the template: its syntax, its partials, one provider selection, the saved config, the variables', async () => {
      if (skip()) return;
      const template = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] };
      const bad: Array<[Json, string]> = [
        [{ name: 'x', provider: '@oa', template: { model: 'm', messages: [{ role: 'user', content: 'Hi {{#open}}' }] } }, 'template.messages[0].content'],
        [{ name: 'x', provider: '@oa', template: { model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: '{{/close}}' }] }] } }, 'template.messages[0].content[0].text'],
        [{ name: 'x', provider: '@oa', template: { model: 'm', messages: [{ role: 'user', content: '{{> nowhere}}' }] } }, 'template'],
        [{ name: 'x', provider: '@oa', virtual_key: 'vk', template }, 'virtual_key'],
        [{ name: 'x', template }, 'provider'],
        [{ name: 'x', provider: 'openai', template }, 'provider'],
        [{ name: 'x', config: 'no-such-config', template }, 'config'],
        [{ name: 'x', provider: '@oa', template: { messages: [{ role: 'user', content: 'x' }] } }, 'template.model'],
        [{ name: 'x', provider: '@oa', template: { model: 'm', messages: [] } }, 'template.messages'],
        [{ name: 'x', provider: '@oa', template: { ...template, stream: true } }, 'template.stream'],
        [{ name: 'x', provider: '@oa', template: [] }, 'template'],
        [{ name: 'x', provider: '@oa', template, variables: { 'bad name': {} } }, 'variables.bad name'],
        [{ name: 'x', provider: '@oa', template, variables: { a: { value: 1 } } }, 'variables.a.value'],
        [{ name: 'x', slug: 'partials', provider: '@oa', template }, 'slug'],
        [{ name: 'x', provider: '@oa', template, extra: 1 }, 'extra'],
      ];
      for (const [body, param] of bad) {
        const r = await call('POST', '/prompts', keys.A!, body);
        expect([400, 404], `${JSON.stringify(body)}: ${r.text}`).toContain(r.status);
        expect(r.body.error.param, JSON.stringify(body)).toBe(param);
      }
      // A saved config as the selection: the prompt's requests go through it.
      await expectOk(call('POST', '/configs', keys.A!, { name: 'via config', slug: 'via-oa', config: { provider: '@oa', override_params: { seed: 42 } } }));
      const viaConfig = await createPrompt({ name: 'Via config', provider: undefined, config: 'via-oa', template });
      expect(viaConfig.config).toBe('via-oa');
      await complete(viaConfig.id, { variables: {} });
      expect(lastSent().seed).toBe(42);
      // A virtual key (the legacy name of a provider) as the selection.
      const viaKey = await createPrompt({ name: 'Via key', provider: undefined, virtual_key: 'oa', template: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'by key' }] } });
      expect((await complete(viaKey.id, { variables: {} })).status).toBe(200);
      expect(userText(lastSent())).toBe('by key');
    });

    test('a streamed prompt completion is watched like any stream: an output guardrail of its saved config cuts it in the chat format', async () => {
      if (skip()) return;
      const guard = { id: 'no-hello', deny: true, 'default.contains': { words: ['hello'], operator: 'none' } };
      await expectOk(call('POST', '/configs', keys.A!, { name: 'guarded', slug: 'guarded-oa', config: { provider: '@oa', output_guardrails: [guard] } }));
      const prompt = await createPrompt({ name: 'Guarded', provider: undefined, config: 'guarded-oa', template: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'greet' }] } });
      const raw = await complete(prompt.id, { variables: {}, stream: true });
      expect(raw.status).toBe(200);
      const blocks = raw.text.trim().split('\n\n');
      expect(blocks.at(-1)).toBe('data: [DONE]');
      expect(JSON.parse(blocks.at(-2)!.slice(6)).error.code).toBe('guardrail_denied');
      expect(raw.text).not.toContain('"content":"Hello"');
    });

    test("workspace isolation: another workspace's prompt is a 404 on every route", async () => {
      if (skip()) return;
      const foreign: Array<[string, string, unknown?]> = [
        ['GET', `/prompts/${ids.greeting}`],
        ['GET', `/prompts/${ids.greeting}/versions`],
        ['PUT', `/prompts/${ids.greeting}`, { patch: true, description: 'stolen' }],
        ['POST', `/prompts/${ids.greeting}/publish`, { version: 1 }],
        ['DELETE', `/prompts/${ids.greeting}`],
        ['POST', `/prompts/${ids.greeting}/render`, { variables: { name: 'x' } }],
        ['POST', `/prompts/${ids.greeting}/completions`, { variables: { name: 'x' } }],
        ['POST', '/prompts/greeting/completions', { variables: { name: 'x' } }],
        ['GET', `/prompts/partials/${ids.signature}`],
        ['PUT', `/prompts/partials/${ids.signature}`, { content: 'stolen' }],
        ['POST', `/prompts/partials/${ids.signature}/publish`, { version: 1 }],
        ['DELETE', `/prompts/partials/${ids.signature}`],
      ];
      const before = mock.requests.length;
      for (const [method, path, body] of foreign) {
        const r = await call(method, path, keys.B!, body);
        expect(r.status, `${method} ${path}: ${r.text}`).toBe(404);
        expect(r.body.error.code).toBe('not_found');
        expect(r.text).not.toContain('greet people');
      }
      await expectError(chat({ variables: { name: 'x' } }, { prompt_id: ids.greeting }, keys.B!), 404, 'prompt_id');
      expect(mock.requests.length).toBe(before);
      expect((await expectOk(call('GET', '/prompts', keys.B!))).data).toEqual([]);
      expect((await expectOk(call('GET', '/prompts/partials', keys.B!))).data).toEqual([]);
      // A's prompt is untouched; B may use the same slug for its own.
      expect((await expectOk(call('GET', '/prompts/greeting', keys.A!))).description).toBe('First draft');
      await expectOk(call('POST', '/prompts', keys.B!, { name: 'B greeting', slug: 'greeting', provider: '@ob', template: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'B says hi' }] } }));
      await complete('greeting', { variables: {} }, keys.B!);
      expect(userText(lastSent())).toBe('B says hi');
    });

    /** Every admin route: the scope it needs. A key with only completions.write gets a 403 naming it. */
    const ROUTES: Array<[string, string, string, unknown?]> = [
      ['POST', '/prompts', 'prompts.create', { name: 'x' }],
      ['GET', '/prompts', 'prompts.read'],
      ['GET', '/prompts/greeting', 'prompts.read'],
      ['GET', '/prompts/greeting/versions', 'prompts.read'],
      ['PUT', '/prompts/greeting', 'prompts.update', { patch: true }],
      ['POST', '/prompts/greeting/publish', 'prompts.publish', { version: 1 }],
      ['DELETE', '/prompts/greeting', 'prompts.delete'],
      ['POST', '/prompts/greeting/render', 'prompts.read', { variables: {} }],
      ['POST', '/prompts/partials', 'prompts.create', { name: 'p', content: '' }],
      ['GET', '/prompts/partials', 'prompts.read'],
      ['GET', '/prompts/partials/signature', 'prompts.read'],
      ['GET', '/prompts/partials/signature/versions', 'prompts.read'],
      ['PUT', '/prompts/partials/signature', 'prompts.update', { content: '' }],
      ['POST', '/prompts/partials/signature/publish', 'prompts.publish', { version: 1 }],
      ['DELETE', '/prompts/partials/signature', 'prompts.delete'],
    ];
    test.each(ROUTES)('%s %s without its scope is a 403 naming %s', async (method, path, scope, body) => {
      if (skip()) return;
      const error = await expectError(call(method, path, keys.bare!, body), 403);
      expect(error.message).toContain(`"${scope}"`);
    });

    test('the log records the prompt id and the version used, for the route and for a config, and filters on them', async () => {
      if (skip()) return;
      const marker = `trace-${Date.now()}`;
      await complete('greeting', { variables: { name: 'Nat', vip: true } }, keys.A!, { 'x-gateway-trace-id': marker });
      await call('POST', '/chat/completions', keys.A!, { variables: { who: 'Oz' } }, { 'x-gateway-config': JSON.stringify({ prompt_id: `${ids.versions}@2` }), 'x-gateway-trace-id': marker });
      await complete('greeting', { variables: {} }, keys.A!, { 'x-gateway-trace-id': marker }); // refused: missing variable
      let entries: Json[] = [];
      for (let i = 0; i < 100 && entries.length < 3; i++) {
        entries = (await expectOk(call('GET', `/logs?trace_id=${marker}`, keys.A!))).data;
        if (entries.length < 3) await new Promise((r) => setTimeout(r, 30));
      }
      const byPath = (p: string) => entries.filter((e) => e.path === p);
      const viaRoute = byPath('/v1/prompts/greeting/completions');
      expect(viaRoute.map((e) => [e.status, e.prompt_id, e.prompt_version, e.route]).sort()).toEqual([
        [200, ids.greeting, 1, 'prompts.completions'],
        [400, ids.greeting, 1, 'prompts.completions'],
      ]);
      expect(byPath('/v1/chat/completions').map((e) => [e.status, e.prompt_id, e.prompt_version])).toEqual([[200, ids.versions, 2]]);
      const filtered = await expectOk(call('GET', `/logs?trace_id=${marker}&prompt_id=${ids.versions}&prompt_version=2`, keys.A!));
      expect(filtered.data).toHaveLength(1);
      await expectError(call('GET', '/logs?prompt_version=two', keys.A!), 400, 'prompt_version');
    });

    test('rate limits count a prompt completion as a chat call, on the rendered model', async () => {
      if (skip()) return;
      const ws = (await expectOk(call('POST', '/workspaces', ADMIN, { name: 'Team C', slug: 'team-c' }))).id;
      const key = (await expectOk(call('POST', '/api-keys', ADMIN, { type: 'workspace-service', name: 'C', workspace_id: ws, scopes: ['prompts.*', 'completions.write', 'integrations.*', 'providers.*'] }))).key;
      await expectOk(call('POST', '/integrations', key, { name: 'OpenAI C', slug: 'openai-c', ai_provider_id: 'openai', key: 'sk-integration-C-0123456789', configurations: { custom_host: mock.baseURL }, create_default_provider: true, default_provider_slug: 'oc' }));
      await expectOk(call('POST', '/prompts', key, { name: 'Limited', slug: 'limited', provider: '@oc', template: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] } }));
      await expectOk(
        call('POST', '/policies/rate-limits', ADMIN, {
          name: 'one mini chat a minute',
          type: 'requests',
          unit: 'rpm',
          value: 1,
          workspace_id: ws,
          conditions: [{ key: 'endpoint_type', value: 'chat' }, { key: 'model', value: 'gpt-4o-mini' }],
        }),
      );
      expect((await complete('limited', { variables: {} }, key)).status).toBe(200);
      const refused = await expectError(complete('limited', { variables: {} }, key), 429);
      expect(refused.code).toBe('rate_limit_exceeded');
      // The chat route with the same model shares the bucket; another model (an override) does not match the policy.
      await expectError(call('POST', '/chat/completions', key, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }, { 'x-gateway-provider': '@oc' }), 429);
      expect((await complete('limited', { variables: {}, model: 'gpt-4o' }, key)).status).toBe(200);
    });

    test('another instance on the same store sees a publish within the cache TTL', async () => {
      if (skip()) return;
      const second = await startGateway(store!, clock, dataDir);
      try {
        await second.gateway.ready;
        const id = (await createPrompt({ name: 'Shared', template: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'one' }] } })).id;
        await expectOk(call('PUT', `/prompts/${id}`, keys.A!, { patch: true, template: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'two' }] } }));
        const viaSecond = async () => {
          expect((await call('POST', `/prompts/${id}/completions`, keys.A!, { variables: {} }, {}, second.url)).status).toBe(200);
          return userText(lastSent());
        };
        expect(await viaSecond()).toBe('one'); // cached there now
        await expectOk(call('POST', `/prompts/${id}/publish`, keys.A!, { version: 2 }));
        await complete(id, { variables: {} });
        expect(userText(lastSent())).toBe('two'); // this instance: at once
        expect(await viaSecond()).toBe('one'); // the other: from its cache
        clock.now += TTL + 1;
        expect(await viaSecond()).toBe('two'); // after the TTL
      } finally {
        await second.close();
      }
    });
  });
}

suite('sqlite', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'gw-prompts-sqlite-'));
  return () => sqliteStore({ file: join(dir, 'gateway.db') });
});

const schema = uniqueSchema('prompts');
suite('postgres', async () => {
  if (!(await requireService('PostgreSQL', DATABASE_URL))) return null;
  return () => postgresStore({ url: DATABASE_URL, schema });
});

afterAll(async () => {
  if (await requireService('PostgreSQL', DATABASE_URL).catch(() => false)) await dropSchema(schema);
});
