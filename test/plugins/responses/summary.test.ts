import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Target } from '../../../core/index.js';
import { google } from '../../../plugins/providers/google/index.js';
import { startGoogleContractMock, type GoogleContractMock } from '../../mocks/contract/google.js';
import { schemaErrors } from '../../../server/testing/index.js';
import { sseEvents } from '../../../server/testing/index.js';
import { doorGateway } from './helpers.js';

/**
 * `reasoning.generate_summary` (the spec's Model response shows it; `summary` is its newer name):
 * accepted, echoed in the object the client gets and the one stored, on every path; and what it maps
 * to where a translated provider has a summary setting (Gemini's thought summaries).
 */

let t: Awaited<ReturnType<typeof doorGateway>>;
let gemini: GoogleContractMock;
let targets: Record<'anthropic' | 'openai' | 'google' | 'googleLoose', Target>;

beforeAll(async () => {
  gemini = await startGoogleContractMock('goog-key');
  t = await doorGateway({}, [google()]);
  const googleTarget = { provider: 'google', api_key: 'goog-key', custom_host: gemini.baseURL } as Target;
  targets = { anthropic: t.targets.anthropic, openai: t.targets.openai, google: googleTarget, googleLoose: { ...googleTarget, strict_reference_compliance: false } as Target };
});
afterAll(async () => {
  await t.close();
  await gemini.close();
});

const MODELS = { anthropic: 'claude-sonnet-4-5', openai: 'o4-mini', google: 'gemini-2.5-flash', googleLoose: 'gemini-2.5-flash' } as const;
const REASONING = { effort: 'medium', generate_summary: 'concise' };

async function create(target: keyof typeof targets, stream: boolean, reasoning: Record<string, unknown> = REASONING): Promise<Record<string, any>> {
  const res = await t.call('POST', '/responses', { body: { model: MODELS[target], input: 'Why is the sky blue?', reasoning, stream }, headers: { 'x-gateway-config': JSON.stringify(targets[target]) } });
  expect(res.status).toBe(200);
  if (!stream) return res.json();
  const events = sseEvents(await res.text());
  // Every event that carries the object echoes it, from response.created on.
  for (const e of events.filter((e) => e.data.response !== undefined)) expect(e.data.response.reasoning.generate_summary, e.event ?? '').toBe('concise');
  return events.at(-1)!.data.response;
}

describe('reasoning.generate_summary is echoed in the returned and the stored object', () => {
  test.each([
    ['anthropic', false],
    ['anthropic', true],
    ['openai', false],
    ['openai', true],
    ['google', false],
  ] as const)('%s (stream %s)', async (target, stream) => {
    const answer = await create(target, stream);
    expect(answer.reasoning).toMatchObject({ effort: target === 'openai' ? null : 'medium', generate_summary: 'concise' });
    expect(schemaErrors('responses.json#/$defs/Response', answer)).toEqual([]);
    const stored = await (await t.call('GET', `/responses/${answer.id}`)).json();
    expect(stored.reasoning.generate_summary).toBe('concise');
  });

  test('a translated answer carries the setting under both names; the request\'s summary wins as the same setting', async () => {
    const answer = await create('anthropic', false, { summary: 'detailed' });
    expect(answer.reasoning).toEqual({ effort: null, summary: 'detailed', generate_summary: 'detailed' });
    const none = await create('anthropic', false, {});
    expect(none.reasoning).toEqual({ effort: null, summary: null, generate_summary: null });
  });

  test('native: the request goes up as sent, and what the provider said about reasoning is kept', async () => {
    const answer = await create('openai', false);
    expect(t.openaiMock.requests.at(-1)!.body.reasoning).toEqual(REASONING);
    // The mock, like OpenAI's current objects, names `summary` only (null here): kept as the provider said.
    expect(answer.reasoning).toEqual({ effort: null, summary: null, generate_summary: 'concise' });
  });

  test.each([
    [{ generate_summary: 'short' }, 'reasoning.generate_summary'],
    [{ summary: 'brief' }, 'reasoning.summary'],
    [{ summary: 'auto', generate_summary: 'concise' }, 'reasoning.generate_summary'],
  ])('bad input is a 400 naming the field: %j', async (reasoning, param) => {
    const before = t.anthropicMock.requests.length + t.openaiMock.requests.length;
    const res = await t.call('POST', '/responses', { body: { model: MODELS.anthropic, input: 'Hi', reasoning }, headers: { 'x-gateway-config': JSON.stringify(targets.anthropic) } });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.error).toMatchObject({ param, code: 'invalid_request', type: 'invalid_request_error' });
    expect(t.anthropicMock.requests.length + t.openaiMock.requests.length).toBe(before);
  });
});

describe('what the setting maps to on a translated provider', () => {
  const lastGemini = () => gemini.requests.at(-1)!.body;

  test('Gemini with strict_reference_compliance false: thought summaries are asked for (includeThoughts)', async () => {
    await create('googleLoose', false);
    expect(lastGemini().generationConfig.thinkingConfig).toEqual({ includeThoughts: true });
    await create('googleLoose', true);
    expect(lastGemini().generationConfig.thinkingConfig).toEqual({ includeThoughts: true });
  });

  test('Gemini strict (the default), or no summary asked: nothing is added, and nothing is refused', async () => {
    await create('google', false);
    expect(lastGemini().generationConfig?.thinkingConfig).toBeUndefined();
    const res = await t.call('POST', '/responses', { body: { model: MODELS.google, input: 'Hi' }, headers: { 'x-gateway-config': JSON.stringify(targets.googleLoose) } });
    expect(res.status).toBe(200);
    expect(lastGemini().generationConfig?.thinkingConfig).toBeUndefined();
  });

  test('Anthropic has no summary setting: thinking is not turned on for it', async () => {
    await create('anthropic', false);
    expect(t.anthropicMock.requests.at(-1)!.body.thinking).toBeUndefined();
  });
});
