import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { limits } from '../../../plugins/limits/index.js';
import { openai } from '../../../plugins/providers/openai/index.js';
import { trace } from '../../../plugins/trace/index.js';
import { serveGateway } from '../../helpers/serve.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';
import { limitHeadersOf } from './helpers.js';

/** Policies in the plugin's options (a server config, a library build): no control plane needed. */
describe('policies in the limits plugin\'s options', () => {
  const clock = { now: Date.parse('2026-03-11T10:00:30Z') };
  let mock: MockUpstream;
  let gw: Awaited<ReturnType<typeof serveGateway>>;

  beforeAll(async () => {
    mock = await startMockOpenAI();
    gw = await serveGateway({
      plugins: [
        trace(),
        limits({
          now: () => clock.now,
          rateLimits: [{ id: 'per-user-rpm', type: 'requests', unit: 'rpm', value: 2, group_by: [{ key: 'user' }] }],
          usageLimits: [{ id: 'daily-tokens', name: 'daily tokens', type: 'tokens', credit_limit: 40, periodic_reset_days: 1, conditions: [{ key: 'metadata.team', value: 'blue' }] }],
        }),
        openai({ baseURL: mock.baseURL }),
      ],
    });
  });
  afterAll(async () => {
    await gw?.close();
    await mock?.close();
  });

  const send = (user: string, team = 'red') =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-x', 'x-gateway-metadata': JSON.stringify({ team }) },
      body: JSON.stringify({ model: 'gpt-4o-mini', user, max_tokens: 5, messages: [{ role: 'user', content: 'Hello' }] }),
    });

  test('apply to every request, with the ids of the config', async () => {
    expect((await send('ann')).status).toBe(200);
    expect((await send('ann')).status).toBe(200);
    const third = await send('ann');
    expect(third.status).toBe(429);
    expect((await third.json()).error.message).toContain('"per-user-rpm" (per-user-rpm)');
    expect((await send('bob')).status).toBe(200);
    const blue = await send('cy', 'blue');
    expect(limitHeadersOf(blue.headers)).toMatchObject({ 'x-ratelimit-limit-usage-tokens': '40', 'x-ratelimit-reset-usage-tokens': String(Math.ceil((Date.parse('2026-03-12T00:00:00Z') - clock.now) / 1000)) });
  });

  test('bad options stop the start, naming the field', () => {
    expect(() => limits({ rateLimits: [{ id: 'x', type: 'requests', unit: 'rps' as 'rpm', value: 1 }] })).toThrow(/rateLimits\[0\]\.unit/);
    expect(() => limits({ usageLimits: [{ id: 'x', type: 'cost', credit_limit: 5, periodic_reset: 'weekly', periodic_reset_days: 7 }] })).toThrow(/mutually exclusive/);
    expect(() => limits({ rateLimits: [{ id: 'x', type: 'requests', unit: 'rpm', value: 1 }], usageLimits: [{ id: 'x', type: 'cost', credit_limit: 1 }] })).toThrow(/appears twice/);
    expect(() => limits({ store: 'disk' as 'memory' })).toThrow(/store/);
  });
});
