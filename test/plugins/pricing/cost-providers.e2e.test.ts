import { generateKeyPairSync } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { encodeMessage } from '../../../plugins/providers/bedrock/eventstream.js';
import { sendJson, startRecordingServer, writeEvents } from '../../../server/testing/index.js';
import { startTestServer } from '../../helpers/gateway.js';
import { sendAndRead } from './stored-entry.js';

/*
 * Costs through the real server for the cloud providers and OpenAI's other doors, as
 * test/plugins/pricing/cost.e2e.test.ts does for Anthropic, Gemini and OpenAI chat: one recording
 * upstream on 127.0.0.1 speaking each provider's wire format (shared/providers/*.md), each request
 * tagged with x-gateway-trace-id and its stored entry read back (GET /v1/logs?trace_id=…, then
 * GET /v1/logs/{id}). Every expected cost is computed here from the providers' public list prices,
 * written below (never read from sdk/pricing/prices.json), per million tokens, USD:
 *
 * - Gemini 2.5 Flash on Vertex AI (cloud.google.com/vertex-ai/generative-ai/pricing; the same on
 *   ai.google.dev/gemini-api/docs/pricing): input (text, image, video) 0.30, audio input 1.00,
 *   cached text input 0.03, output (thinking included) 2.50.
 * - Claude Sonnet 4.5 (anthropic.com/pricing; Vertex AI's Claude price table and Bedrock's global
 *   inference profile bill the same): input 3, cache read 0.30, 5-minute cache write 3.75,
 *   1-hour cache write 6, output 15.
 * - GPT-4o (openai.com/api/pricing; Azure OpenAI's global deployment of gpt-4o-2024-08-06 the
 *   same, azure.microsoft.com/pricing/details/cognitive-services/openai-service): input 2.50,
 *   cached input 1.25, output 10.
 * - GPT-5 (openai.com/api/pricing): input 1.25, cached input 0.125, output 10. Flex processing
 *   (platform.openai.com/docs/guides/flex-processing: Batch rates, i.e. half): 0.625 / 0.0625 / 5.
 *   Priority processing (openai.com/api-priority-processing): 2.50 / 0.25 / 20.
 * - GPT-5 nano: OpenAI publishes no priority price for it (not in the priority table): a priority
 *   answer is unpriced.
 * - gpt-audio (openai.com/api/pricing, platform.openai.com/docs/models/gpt-audio): text input 2.50,
 *   text output 10, audio input 32, audio output 64.
 * - gpt-4o-audio-preview (the same pages): text 2.50 / 10, audio input 40, audio output 80.
 *
 * Each JSON answer and its streamed twin must store the same usage and cost.
 */

/** Components of a stored price: [name, tokens, rate]. */
type Line = [string, number, number];
const sum = (lines: Line[]) => lines.reduce((s, [, tokens, rate]) => s + tokens * rate, 0) / 1e6;

// ---- Usages the mock upstream reports, and their costs at the list prices above ----

/** Gemini 2.5 Flash: a 10,000-token prompt (6,000 text, 2,000 of them from the cache; 4,000 audio), 800 answer and 200 thinking tokens. */
const FLASH_USAGE = {
  promptTokenCount: 10_000,
  cachedContentTokenCount: 2_000,
  candidatesTokenCount: 800,
  thoughtsTokenCount: 200,
  totalTokenCount: 11_000,
  promptTokensDetails: [
    { modality: 'TEXT', tokenCount: 6_000 },
    { modality: 'AUDIO', tokenCount: 4_000 },
  ],
  cacheTokensDetails: [{ modality: 'TEXT', tokenCount: 2_000 }],
  candidatesTokensDetails: [{ modality: 'TEXT', tokenCount: 800 }],
};
const FLASH_LINES: Line[] = [
  ['input', 4_000, 0.3],
  ['cache_read', 2_000, 0.03],
  ['input_audio', 4_000, 1],
  ['output', 800, 2.5],
  ['reasoning', 200, 2.5],
];

/** Claude: 1,000 plain input, 2,000 read, 3,000 written (1,000 of them for an hour), 500 out. */
const CLAUDE_USAGE = {
  input_tokens: 1000,
  cache_read_input_tokens: 2000,
  cache_creation_input_tokens: 3000,
  cache_creation: { ephemeral_5m_input_tokens: 2000, ephemeral_1h_input_tokens: 1000 },
  output_tokens: 500,
};
const CLAUDE_LINES: Line[] = [
  ['input', 1000, 3],
  ['cache_read', 2000, 0.3],
  ['cache_write', 2000, 3.75],
  ['cache_write_1h', 1000, 6],
  ['output', 500, 15],
];

/** GPT-4o on Azure: 2,000 prompt (1,024 cached), 300 completion. */
const GPT4O_USAGE = {
  prompt_tokens: 2000,
  completion_tokens: 300,
  total_tokens: 2300,
  prompt_tokens_details: { cached_tokens: 1024, audio_tokens: 0 },
  completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
};
const GPT4O_LINES: Line[] = [
  ['input', 976, 2.5],
  ['cache_read', 1024, 1.25],
  ['output', 300, 10],
];

/** GPT-5 through the Responses API: 3,000 input (1,000 cached), 800 output (500 reasoning). */
const RESPONSES_USAGE = { input_tokens: 3000, input_tokens_details: { cached_tokens: 1000 }, output_tokens: 800, output_tokens_details: { reasoning_tokens: 500 }, total_tokens: 3800 };
const gpt5ResponsesLines = (input: number, cached: number, output: number): Line[] => [
  ['input', 2000, input],
  ['cache_read', 1000, cached],
  ['output', 300, output],
  ['reasoning', 500, output],
];
const RESPONSES_STANDARD = gpt5ResponsesLines(1.25, 0.125, 10);
const RESPONSES_FLEX = gpt5ResponsesLines(0.625, 0.0625, 5);
const RESPONSES_PRIORITY = gpt5ResponsesLines(2.5, 0.25, 20);

/** GPT-5 (and nano) chat: 1,000 prompt (200 cached), 500 completion (300 reasoning). */
const CHAT_USAGE = {
  prompt_tokens: 1000,
  completion_tokens: 500,
  total_tokens: 1500,
  prompt_tokens_details: { cached_tokens: 200, audio_tokens: 0 },
  completion_tokens_details: { reasoning_tokens: 300, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
};
const CHAT_FLEX: Line[] = [
  ['input', 800, 0.625],
  ['cache_read', 200, 0.0625],
  ['output', 200, 5],
  ['reasoning', 300, 5],
];

/** An audio chat: 1,000 prompt tokens (600 audio), 900 completion (700 audio). */
const AUDIO_USAGE = {
  prompt_tokens: 1000,
  completion_tokens: 900,
  total_tokens: 1900,
  prompt_tokens_details: { cached_tokens: 0, audio_tokens: 600, text_tokens: 400, image_tokens: 0 },
  completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 700, text_tokens: 200, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
};
const GPT_AUDIO_LINES: Line[] = [
  ['input', 400, 2.5],
  ['input_audio', 600, 32],
  ['output', 200, 10],
  ['output_audio', 700, 64],
];

// ---- The accounts the mock knows ----

const PROJECT = 'proj-cost';
const REGION = 'us-central1';
const CLIENT_EMAIL = 'gateway-cost@proj-cost.iam.gserviceaccount.com';
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const PRIVATE_PEM = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const AZURE_KEY = 'azure-cost-key';
/** An OpenAI key of a project whose default service tier (what `auto` means) is priority. */
const PRIORITY_PROJECT_KEY = 'sk-project-priority';

let up: Awaited<ReturnType<typeof startRecordingServer>>;
let gw: Awaited<ReturnType<typeof startTestServer>>;
const issuedTokens: string[] = [];

const sse = (events: Array<[string | null, unknown]>) => events.map(([name, data]) => `${name === null ? '' : `event: ${name}\n`}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);

/** An Anthropic Messages answer (Vertex's :rawPredict, Bedrock's InvokeModel), JSON or its SSE events. */
function claudeMessage(stream: boolean): { json: Record<string, unknown>; events: Array<[string, Record<string, unknown>]> } {
  const message = { id: 'msg_cost1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5-20250929', content: [{ type: 'text', text: 'Cached.' }], stop_reason: 'end_turn', stop_sequence: null, usage: CLAUDE_USAGE };
  if (!stream) return { json: message, events: [] };
  const { output_tokens: _out, ...start } = CLAUDE_USAGE;
  return {
    json: message,
    events: [
      ['message_start', { type: 'message_start', message: { ...message, content: [], stop_reason: null, usage: { ...start, output_tokens: 1 } } }],
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Cached.' } }],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
      // Anthropic repeats the cumulative counts in message_delta (the cache fields included).
      ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 500 } }],
      ['message_stop', { type: 'message_stop' }],
    ],
  };
}

/** Vertex AI: the OAuth token endpoint, Gemini at :generateContent / :streamGenerateContent, Claude at :rawPredict / :streamRawPredict. */
function vertex(path: string, req: { headers: Record<string, unknown> }, body: Record<string, any>, res: ServerResponse): void {
  if (path === '/token') {
    const form = new URLSearchParams(typeof body === 'string' ? body : '');
    if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer' || (form.get('assertion') ?? '').split('.').length !== 3) return sendJson(res, 400, { error: 'invalid_grant' });
    const token = `ya29.cost-${issuedTokens.length + 1}`;
    issuedTokens.push(token);
    return sendJson(res, 200, { access_token: token, expires_in: 3599, token_type: 'Bearer' });
  }
  const m = /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/(google|anthropic)\/models\/([^:]+):(\w+)(\?alt=sse)?$/.exec(path);
  const google = (status: number, message: string) => sendJson(res, status, { error: { code: status, message, status: status === 401 ? 'UNAUTHENTICATED' : 'NOT_FOUND' } });
  if (m === null || m[1] !== PROJECT || m[2] !== REGION) return google(404, `no route ${path}`);
  const auth = String(req.headers.authorization ?? '');
  if (!issuedTokens.some((t) => auth === `Bearer ${t}`)) return google(401, 'Request had invalid authentication credentials.');
  const [, , , publisher, model, verb, alt] = m;
  if (publisher === 'anthropic') {
    if (body?.anthropic_version !== 'vertex-2023-10-16' || body.model !== undefined) return sendJson(res, 400, { type: 'error', error: { type: 'invalid_request_error', message: 'anthropic_version vertex-2023-10-16 required, model not allowed' } });
    const stream = verb === 'streamRawPredict';
    if (stream !== (body.stream === true)) return sendJson(res, 400, { type: 'error', error: { type: 'invalid_request_error', message: 'stream flag and verb disagree' } });
    const answer = claudeMessage(stream);
    if (!stream) return sendJson(res, 200, answer.json);
    return writeEvents(res, sse(answer.events));
  }
  const answer = { candidates: [{ content: { role: 'model', parts: [{ text: 'Heard it.' }] }, finishReason: 'STOP', avgLogprobs: -0.1 }], usageMetadata: FLASH_USAGE, modelVersion: model, createTime: '2026-12-07T10:00:00.000Z', responseId: 'vtx-cost-1' };
  if (verb === 'generateContent') return sendJson(res, 200, answer);
  if (verb !== 'streamGenerateContent' || alt === undefined) return google(400, `unsupported ${verb}`);
  // Partial counts on the first chunk, the full usage on the last (as Vertex streams them).
  const first = { ...answer, candidates: [{ content: { role: 'model', parts: [{ text: 'Heard' }] } }], usageMetadata: { promptTokenCount: 10_000, candidatesTokenCount: 1, totalTokenCount: 10_001 } };
  const last = { ...answer, candidates: [{ content: { role: 'model', parts: [{ text: ' it.' }] }, finishReason: 'STOP' }] };
  writeEvents(res, sse([[null, first], [null, last]]));
}

const AZURE_FILTER = { hate: { filtered: false, severity: 'safe' }, self_harm: { filtered: false, severity: 'safe' }, sexual: { filtered: false, severity: 'safe' }, violence: { filtered: false, severity: 'safe' } };

/** Azure OpenAI chat at /openai/deployments/{deployment}/chat/completions?api-version=… (azure.md §1–§4). */
function azure(path: string, req: { headers: Record<string, unknown> }, body: Record<string, any>, res: ServerResponse): void {
  const url = new URL(path, 'http://mock');
  const dep = /^\/openai\/deployments\/([^/]+)\/chat\/completions$/.exec(url.pathname);
  if (dep === null || url.searchParams.get('api-version') === null) return sendJson(res, 404, { error: { code: '404', message: 'Resource not found' } });
  if (req.headers['api-key'] !== AZURE_KEY) return sendJson(res, 401, { error: { code: '401', message: 'Access denied due to invalid subscription key.' } });
  const id = 'chatcmpl-AzCost1';
  const model = 'gpt-4o-2024-08-06';
  if (body.stream !== true) {
    return sendJson(res, 200, {
      id,
      object: 'chat.completion',
      created: 1736407895,
      model,
      prompt_filter_results: [{ prompt_index: 0, content_filter_results: AZURE_FILTER }],
      choices: [{ index: 0, finish_reason: 'stop', logprobs: null, message: { role: 'assistant', content: 'Cached.', refusal: null }, content_filter_results: AZURE_FILTER }],
      usage: GPT4O_USAGE,
      system_fingerprint: 'fp_az',
    });
  }
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => ({ id, object: 'chat.completion.chunk', created: 1736407895, model, system_fingerprint: 'fp_az', choices, ...extra });
  const events: Array<[null, unknown]> = [
    // Azure's stream opens with the prompt-filter chunk: no choices, empty id and model.
    [null, { choices: [], created: 0, id: '', model: '', object: '', prompt_filter_results: [{ prompt_index: 0, content_filter_results: AZURE_FILTER }] }],
    [null, chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null, logprobs: null, content_filter_results: {} }])],
    [null, chunk([{ index: 0, delta: { content: 'Cached.' }, finish_reason: null, logprobs: null, content_filter_results: AZURE_FILTER }])],
    [null, chunk([{ index: 0, delta: {}, finish_reason: 'stop', logprobs: null, content_filter_results: {} }])],
  ];
  if (body.stream_options?.include_usage === true) events.push([null, chunk([], { usage: GPT4O_USAGE })]);
  events.push([null, '[DONE]']);
  writeEvents(res, sse(events));
}

/** Bedrock InvokeModel / InvokeModelWithResponseStream for Claude (bedrock.md §7): Anthropic's JSON, or its events in `chunk` frames. */
function bedrock(path: string, req: { headers: Record<string, unknown> }, body: Record<string, any>, res: ServerResponse): void {
  const m = /^\/model\/([^/]+)\/(invoke|invoke-with-response-stream)$/.exec(path);
  if (m === null) return sendJson(res, 404, { message: `no route ${path}` });
  if (!String(req.headers.authorization ?? '').startsWith('AWS4-HMAC-SHA256 ')) return sendJson(res, 403, { message: 'Missing Authentication Token' });
  if (body?.anthropic_version !== 'bedrock-2023-05-31' || body.model !== undefined || body.stream !== undefined) return sendJson(res, 400, { message: 'Malformed input request: anthropic_version bedrock-2023-05-31 required; model and stream not allowed' });
  const stream = m[2] === 'invoke-with-response-stream';
  const answer = claudeMessage(stream);
  if (!stream) return sendJson(res, 200, answer.json, { 'x-amzn-bedrock-input-token-count': '1000', 'x-amzn-bedrock-output-token-count': '500' });
  const frame = (payload: Record<string, unknown>) =>
    Buffer.from(encodeMessage({ ':event-type': 'chunk', ':content-type': 'application/json', ':message-type': 'event' }, JSON.stringify({ bytes: Buffer.from(JSON.stringify(payload)).toString('base64'), p: 'abcdefghijklmnop' })));
  const events = answer.events.map(([, data]) => data);
  // Bedrock adds its invocation metrics to the last event.
  events[events.length - 1] = { ...events.at(-1)!, 'amazon-bedrock-invocationMetrics': { inputTokenCount: 1000, outputTokenCount: 500, invocationLatency: 812, firstByteLatency: 301, cacheReadInputTokenCount: 2000, cacheWriteInputTokenCount: 3000 } };
  res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-requestid': 'req-cost-1' });
  for (const e of events) res.write(frame(e));
  res.end();
}

/** The service tier an OpenAI answer names: the one asked for (flex, priority), else the project's default. */
function servedTier(req: { headers: Record<string, unknown> }, body: Record<string, any>): string {
  if (body.service_tier === 'flex' || body.service_tier === 'priority') return body.service_tier;
  return req.headers.authorization === `Bearer ${PRIORITY_PROJECT_KEY}` ? 'priority' : 'default';
}

/** OpenAI chat completions (openai.md §4–§5): the usage chunk only with include_usage; every chunk names the tier that served. */
function openaiChat(req: { headers: Record<string, unknown> }, body: Record<string, any>, res: ServerResponse): void {
  const model = String(body.model);
  const tier = servedTier(req, body);
  const audio = model.includes('audio');
  const usage = audio ? AUDIO_USAGE : CHAT_USAGE;
  const answered = model === 'gpt-5' ? 'gpt-5-2025-08-07' : model === 'gpt-5-nano' ? 'gpt-5-nano-2025-08-07' : model;
  const message = audio
    ? { role: 'assistant', content: null, refusal: null, annotations: [], audio: { id: 'audio_cost1', data: 'UklGRg==', expires_at: 1736411495, transcript: 'Hello there.' } }
    : { role: 'assistant', content: 'Hi.', refusal: null, annotations: [] };
  if (body.stream !== true) {
    return sendJson(res, 200, { id: 'chatcmpl-cost', object: 'chat.completion', created: 1736407895, model: answered, choices: [{ index: 0, message, logprobs: null, finish_reason: 'stop' }], usage, service_tier: tier, system_fingerprint: 'fp_cost' });
  }
  const asked = body.stream_options?.include_usage === true;
  const chunk = (delta: unknown, finish: string | null) => ({ id: 'chatcmpl-cost', object: 'chat.completion.chunk', created: 1736407895, model: answered, service_tier: tier, system_fingerprint: 'fp_cost', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...(asked ? { usage: null } : {}) });
  const content = audio ? { audio: { id: 'audio_cost1', transcript: 'Hello there.', data: 'UklGRg==' } } : { content: 'Hi.' };
  const events: Array<[null, unknown]> = [[null, chunk({ role: 'assistant', content: audio ? null : '', refusal: null }, null)], [null, chunk(content, null)], [null, chunk({}, 'stop')]];
  if (asked) events.push([null, { id: 'chatcmpl-cost', object: 'chat.completion.chunk', created: 1736407895, model: answered, service_tier: tier, system_fingerprint: 'fp_cost', choices: [], usage }]);
  events.push([null, '[DONE]']);
  writeEvents(res, sse(events));
}

/** A long answer, for the case where the answer's `service_tier` sits far from both ends of the body. */
const LONG_TEXT = 'The quick brown fox jumps over the lazy dog. '.repeat(80);
/** Ten function tools with long descriptions (an agent's tool set), echoed by OpenAI in the Responses object. */
const MANY_TOOLS = Array.from({ length: 10 }, (_, i) => ({
  type: 'function',
  name: `tool_${i}`,
  description: `Tool number ${i}: looks things up in the company's knowledge base and returns the matching passages, with their sources and dates, for the assistant to quote.`,
  parameters: { type: 'object', properties: { query: { type: 'string', description: 'What to look up' }, limit: { type: 'integer', description: 'How many passages' } }, required: ['query', 'limit'], additionalProperties: false },
  strict: true,
}));

/**
 * OpenAI's Responses API (openai.md §8, the API's event grammar): the Response object with its
 * usage; a stream's `response.created` echoes the tier asked for (`auto` when none), the final
 * object names the tier that served, as OpenAI's streams do.
 */
function openaiResponses(req: { headers: Record<string, unknown> }, body: Record<string, any>, res: ServerResponse): void {
  const tier = servedTier(req, body);
  const long = Array.isArray(body.tools) && body.tools.length >= 10;
  const text = long ? LONG_TEXT : 'Hi.';
  const base = {
    id: 'resp_cost1',
    object: 'response',
    created_at: 1741476542,
    status: 'in_progress',
    background: false,
    error: null,
    incomplete_details: null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    max_tool_calls: null,
    model: 'gpt-5-2025-08-07',
    output: [] as unknown[],
    parallel_tool_calls: true,
    previous_response_id: null,
    prompt_cache_key: null,
    reasoning: { effort: 'medium', summary: null },
    safety_identifier: null,
    service_tier: body.service_tier ?? 'auto',
    store: true,
    temperature: 1,
    text: { format: { type: 'text' }, verbosity: 'medium' },
    tool_choice: 'auto',
    tools: body.tools ?? [],
    top_logprobs: 0,
    top_p: 1,
    truncation: 'disabled',
    usage: null as unknown,
    user: null,
    metadata: {},
  };
  const reasoning = { id: 'rs_cost1', type: 'reasoning', summary: [] };
  const message = { id: 'msg_cost1', type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', annotations: [], logprobs: [], text }] };
  const done = { ...base, status: 'completed', output: [reasoning, message], service_tier: tier, usage: RESPONSES_USAGE };
  if (body.stream !== true) return sendJson(res, 200, done, { 'x-request-id': 'req_cost_responses' });
  let n = 0;
  const ev = (type: string, data: Record<string, unknown>): [string, unknown] => [type, { type, sequence_number: n++, ...data }];
  const part = { type: 'output_text', annotations: [], logprobs: [], text: '' };
  writeEvents(
    res,
    sse([
      ev('response.created', { response: base }),
      ev('response.in_progress', { response: base }),
      ev('response.output_item.added', { output_index: 0, item: reasoning }),
      ev('response.output_item.done', { output_index: 0, item: reasoning }),
      ev('response.output_item.added', { output_index: 1, item: { ...message, status: 'in_progress', content: [] } }),
      ev('response.content_part.added', { item_id: message.id, output_index: 1, content_index: 0, part }),
      ev('response.output_text.delta', { item_id: message.id, output_index: 1, content_index: 0, delta: text, logprobs: [] }),
      ev('response.output_text.done', { item_id: message.id, output_index: 1, content_index: 0, text, logprobs: [] }),
      ev('response.content_part.done', { item_id: message.id, output_index: 1, content_index: 0, part: { ...part, text } }),
      ev('response.output_item.done', { output_index: 1, item: message }),
      ev('response.completed', { response: done }),
    ]),
  );
}

beforeAll(async () => {
  up = await startRecordingServer((req, res, seen) => {
    const body = (seen.body ?? {}) as Record<string, any>;
    const path = req.url!;
    const at = (prefix: string) => path.slice(prefix.length);
    if (path.startsWith('/vertex/')) return vertex(at('/vertex'), req, seen.body as Record<string, any>, res);
    if (path.startsWith('/azure/')) return azure(at('/azure'), req, body, res);
    if (path.startsWith('/bedrock/')) return bedrock(at('/bedrock'), req, body, res);
    if (!path.startsWith('/openai/v1/') || req.headers.authorization === undefined) return sendJson(res, 404, { error: { message: `no route ${path}`, type: 'invalid_request_error', param: null, code: null } });
    if (at('/openai/v1') === '/chat/completions') return openaiChat(req, body, res);
    if (at('/openai/v1') === '/responses') return openaiResponses(req, body, res);
    sendJson(res, 404, { error: { message: `no route ${path}`, type: 'invalid_request_error', param: null, code: null } });
  });
  gw = await startTestServer();
});
afterAll(async () => {
  await gw?.close();
  await up?.close();
});

let traces = 0;

/** Sends one request, returns the stored entry (GET /v1/logs/{id}), the answer's text and the upstream request it caused. */
async function priced(path: string, target: Record<string, unknown>, body: Record<string, unknown>) {
  const before = up.requests.length;
  const answer = await sendAndRead(gw.url, path, target, body, `cost-providers-${++traces}`);
  return { ...answer, upstream: up.requests.slice(before).filter((r) => !r.path.endsWith('/token')) };
}

const lines = (entry: Record<string, any>): Line[] => (entry.price?.components ?? []).map((c: { name: string; tokens: number; rate: number }) => [c.name, c.tokens, c.rate]);

/** The entry is priced with exactly these lines, and its cost is their sum. */
function expectPriced(entry: Record<string, any>, expected: Line[], label: string): void {
  expect(entry.cost_status, label).toBe('priced');
  expect(lines(entry), label).toEqual(expected);
  expect(entry.cost, label).toBeCloseTo(sum(expected), 12);
}

/** What must be equal between a JSON answer's entry and its streamed twin's. */
const stored = (e: Record<string, any>) => ({
  cost: e.cost,
  cost_status: e.cost_status,
  prompt_tokens: e.prompt_tokens,
  completion_tokens: e.completion_tokens,
  cached_tokens: e.cached_tokens,
  reasoning_tokens: e.reasoning_tokens,
  cache_write_tokens: e.cache_write_tokens,
  cache_write_1h_tokens: e.cache_write_1h_tokens,
  tokens_estimated: e.tokens_estimated,
  price_id: e.price?.price_id,
  service_tier: e.price?.service_tier,
  components: lines(e),
});

const ask = (extra: Record<string, unknown> = {}) => ({ messages: [{ role: 'user', content: 'Use the cache.' }], max_tokens: 600, ...extra });

// ---- 1. Vertex AI ----

describe('Vertex AI', () => {
  const target = () => ({
    provider: 'vertex-ai',
    vertex_region: REGION,
    vertex_service_account_json: { type: 'service_account', project_id: PROJECT, private_key_id: 'kid-cost', private_key: PRIVATE_PEM, client_email: CLIENT_EMAIL, client_id: '42', token_uri: `${up.url}/vertex/token` },
    custom_host: `${up.url}/vertex`,
  });

  test('Gemini 2.5 Flash: audio prompt tokens at the audio rate, cached text at the cache rate, thinking at the output rate; JSON and stream store the same', async () => {
    const json = await priced('/v1/chat/completions', target(), ask({ model: 'gemini-2.5-flash' }));
    // A stream the client asked no usage for: the usage still comes from the upstream's last chunk.
    const stream = await priced('/v1/chat/completions', target(), ask({ model: 'gemini-2.5-flash', stream: true }));
    expect([json.status, stream.status]).toEqual([200, 200]);
    expect(json.upstream.map((r) => r.path)).toEqual([`/vertex/v1/projects/${PROJECT}/locations/${REGION}/publishers/google/models/gemini-2.5-flash:generateContent`]);
    expect(stream.upstream.map((r) => r.path)).toEqual([`/vertex/v1/projects/${PROJECT}/locations/${REGION}/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse`]);
    for (const [label, { entry }] of [['json', json], ['stream', stream]] as const) {
      expectPriced(entry, FLASH_LINES, label);
      expect([entry.prompt_tokens, entry.cached_tokens, entry.completion_tokens, entry.reasoning_tokens, entry.tokens_estimated], label).toEqual([10_000, 2_000, 1_000, 200, false]);
      expect(entry.price.price_id, label).toBe('google/gemini-2.5-flash');
    }
    expect(stored(stream.entry)).toEqual(stored(json.entry));
    expect(stream.text).not.toContain('"usage":{');
  });

  test('Claude Sonnet 4.5 through Vertex AI (the google list, whose Claude entries carry the 1-hour rate): chat door (translated) and Messages door (native), JSON and streamed: the 1-hour writes at their rate', async () => {
    const model = 'claude-sonnet-4-5@20250929';
    const results: Array<[string, Awaited<ReturnType<typeof priced>>]> = [];
    for (const stream of [false, true]) {
      results.push([`chat stream=${stream}`, await priced('/v1/chat/completions', target(), ask({ model, stream, ...(stream ? { stream_options: { include_usage: true } } : {}) }))]);
      results.push([`messages stream=${stream}`, await priced('/v1/messages', target(), ask({ model, stream }))]);
    }
    for (const [label, r] of results) {
      expect(r.status, label).toBe(200);
      expect(r.upstream[0]!.path, label).toBe(`/vertex/v1/projects/${PROJECT}/locations/${REGION}/publishers/anthropic/models/${model}:${label.endsWith('true') ? 'streamRawPredict' : 'rawPredict'}`);
      expect([r.entry.prompt_tokens, r.entry.cached_tokens, r.entry.cache_write_tokens, r.entry.cache_write_1h_tokens, r.entry.completion_tokens], label).toEqual([6000, 2000, 3000, 1000, 500]);
      expect(r.entry.price.price_id, label).toMatch(/^(google|anthropic)\/claude-sonnet-4-5$/);
      expectPriced(r.entry, CLAUDE_LINES, label);
    }
  });
});

// ---- 2. Azure OpenAI ----

describe('Azure OpenAI', () => {
  const target = () => ({ provider: 'azure-openai', api_key: AZURE_KEY, resource_name: 'contoso', deployment_id: 'gpt4o-prod', api_version: '2024-10-21', custom_host: `${up.url}/azure` });
  const GPT4O_PATH = '/azure/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21';

  test('gpt-4o chat, JSON: cached tokens at the cached rate', async () => {
    const { entry, status, upstream } = await priced('/v1/chat/completions', target(), ask({ model: 'gpt-4o' }));
    expect(status).toBe(200);
    expect(upstream.map((r) => r.path)).toEqual([GPT4O_PATH]);
    expectPriced(entry, GPT4O_LINES, 'json');
    expect([entry.prompt_tokens, entry.cached_tokens, entry.completion_tokens, entry.tokens_estimated]).toEqual([2000, 1024, 300, false]);
    expect(entry.price.price_id).toBe('openai/gpt-4o');
  });

  test('a stream without include_usage: the gateway asks the upstream, stores its usage (not an estimate), keeps the usage chunk from the client', async () => {
    const json = await priced('/v1/chat/completions', target(), ask({ model: 'gpt-4o' }));
    const stream = await priced('/v1/chat/completions', target(), ask({ model: 'gpt-4o', stream: true }));
    expect(stream.status).toBe(200);
    expect(stream.upstream.map((r) => r.path)).toEqual([GPT4O_PATH]);
    expect((stream.upstream[0]!.body as Record<string, any>).stream_options).toEqual({ include_usage: true });
    expectPriced(stream.entry, GPT4O_LINES, 'stream');
    expect([stream.entry.prompt_tokens, stream.entry.cached_tokens, stream.entry.completion_tokens, stream.entry.tokens_estimated]).toEqual([2000, 1024, 300, false]);
    expect(stored(stream.entry)).toEqual(stored(json.entry));
    expect(stream.text).not.toContain('"usage":{');
    expect(stream.text).toContain('Cached.');
    expect(stream.text).toContain('[DONE]');
  });

  test('a stream with include_usage stores the same, and the client gets the usage chunk', async () => {
    const { entry, text } = await priced('/v1/chat/completions', target(), ask({ model: 'gpt-4o', stream: true, stream_options: { include_usage: true } }));
    expectPriced(entry, GPT4O_LINES, 'stream with usage');
    expect(text).toContain('"cached_tokens":1024');
  });
});

// ---- 3. Bedrock InvokeModel (the Messages door) ----

describe('Bedrock InvokeModel for Claude (the Messages door)', () => {
  const target = () => ({ provider: 'bedrock', aws_access_key_id: 'AKIDCOSTPROVIDERS', aws_secret_access_key: 'secret-cost-providers', aws_region: 'us-east-1', custom_host: `${up.url}/bedrock` });
  const MODEL = 'global.anthropic.claude-sonnet-4-5-20250929-v1:0';

  test('the id called is what AWS bills (a global inference profile), not the bare model the answer names;  JSON and streamed: Anthropic usage with 1-hour writes, at the Claude (global) rates', async () => {
    const json = await priced('/v1/messages', target(), ask({ model: MODEL }));
    const stream = await priced('/v1/messages', target(), ask({ model: MODEL, stream: true }));
    expect([json.status, stream.status]).toEqual([200, 200]);
    expect(json.upstream.map((r) => r.path)).toEqual([`/bedrock/model/${encodeURIComponent(MODEL)}/invoke`]);
    expect(stream.upstream.map((r) => r.path)).toEqual([`/bedrock/model/${encodeURIComponent(MODEL)}/invoke-with-response-stream`]);
    for (const [label, { entry }] of [['json', json], ['stream', stream]] as const) {
      expect([entry.prompt_tokens, entry.cached_tokens, entry.cache_write_tokens, entry.cache_write_1h_tokens, entry.completion_tokens], label).toEqual([6000, 2000, 3000, 1000, 500]);
      expect(entry.price.price_id, label).toBe(`bedrock/${MODEL}`);
      expectPriced(entry, CLAUDE_LINES, label);
    }
    expect(stored(stream.entry)).toEqual(stored(json.entry));
    // The client got Anthropic's events, unwrapped from the event-stream frames.
    expect(stream.text).toContain('event: message_delta');
    expect(JSON.parse(json.text).usage).toEqual(CLAUDE_USAGE);
  });
});

// ---- 4. OpenAI's Responses API, native ----

describe("OpenAI's Responses API (POST /v1/responses to an openai target)", () => {
  const target = (key = 'sk-cost-responses') => ({ provider: 'openai', api_key: key, custom_host: `${up.url}/openai/v1` });

  test('gpt-5: input_tokens_details.cached_tokens and output_tokens_details.reasoning_tokens at their rates, JSON and streamed', async () => {
    const json = await priced('/v1/responses', target(), { model: 'gpt-5', input: 'Use the cache.', max_output_tokens: 2000 });
    const stream = await priced('/v1/responses', target(), { model: 'gpt-5', input: 'Use the cache.', max_output_tokens: 2000, stream: true });
    expect([json.status, stream.status]).toEqual([200, 200]);
    expect([...json.upstream, ...stream.upstream].map((r) => r.path)).toEqual(['/openai/v1/responses', '/openai/v1/responses']);
    for (const [label, { entry }] of [['json', json], ['stream', stream]] as const) {
      expectPriced(entry, RESPONSES_STANDARD, label);
      expect([entry.prompt_tokens, entry.cached_tokens, entry.completion_tokens, entry.reasoning_tokens, entry.tokens_estimated], label).toEqual([3000, 1000, 800, 500, false]);
      expect([entry.price.price_id, entry.price.service_tier], label).toEqual(['openai/gpt-5', null]);
    }
    expect(stored(stream.entry)).toEqual(stored(json.entry));
    expect(stream.text).toContain('event: response.completed');
  });

  test('service_tier "flex", JSON and streamed: the flex rates', async () => {
    const json = await priced('/v1/responses', target(), { model: 'gpt-5', input: 'Use the cache.', service_tier: 'flex' });
    const stream = await priced('/v1/responses', target(), { model: 'gpt-5', input: 'Use the cache.', service_tier: 'flex', stream: true });
    for (const [label, { entry }] of [['json', json], ['stream', stream]] as const) {
      expectPriced(entry, RESPONSES_FLEX, label);
      expect(entry.price.service_tier, label).toBe('flex');
    }
    expect(stored(stream.entry)).toEqual(stored(json.entry));
  });

  test('the tier that served is the one a stream names last (response.completed), not the one response.created echoes: a project defaulting to priority, no tier asked: the stream stores what the JSON answer stores (the priority rates)', async () => {
    const json = await priced('/v1/responses', target(PRIORITY_PROJECT_KEY), { model: 'gpt-5', input: 'Use the cache.' });
    const stream = await priced('/v1/responses', target(PRIORITY_PROJECT_KEY), { model: 'gpt-5', input: 'Use the cache.', stream: true });
    expect(json.text).toContain('"service_tier":"priority"');
    expectPriced(json.entry, RESPONSES_PRIORITY, 'json');
    expect(json.entry.price.service_tier).toBe('priority');
    expect(stream.text).toContain('"service_tier":"auto"');
    expectPriced(stream.entry, RESPONSES_PRIORITY, 'stream');
    expect(stored(stream.entry)).toEqual(stored(json.entry));
  });

  test('the tier of a long JSON answer is found wherever it stands: a flex Responses answer with a long output and many tools is priced at the flex rates', async () => {
    const { entry, text } = await priced('/v1/responses', target(), { model: 'gpt-5', input: 'Look it up.', service_tier: 'flex', tools: MANY_TOOLS });
    const at = text.indexOf('"service_tier":"flex"');
    expect(at).toBeGreaterThan(2048);
    expect(text.length - at).toBeGreaterThan(2048);
    expectPriced(entry, RESPONSES_FLEX, 'long json');
    expect(entry.price.service_tier).toBe('flex');
  });
});

// ---- 5. OpenAI chat with audio ----

describe('OpenAI chat with audio', () => {
  const target = () => ({ provider: 'openai', api_key: 'sk-cost-audio', custom_host: `${up.url}/openai/v1` });
  const audioAsk = (model: string, extra: Record<string, unknown> = {}) => ({
    model,
    modalities: ['text', 'audio'],
    audio: { voice: 'alloy', format: 'wav' },
    messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } }] }],
    ...extra,
  });

  /*
   * gpt-audio: the list has its audio rates (input_audio, output_audio). prompt_tokens_details.audio_tokens
   * and completion_tokens_details.audio_tokens are priced at them, the rest at the text rates.
   */
  test('gpt-audio: audio tokens in and out at the audio rates, JSON and streamed', async () => {
    const json = await priced('/v1/chat/completions', target(), audioAsk('gpt-audio'));
    const stream = await priced('/v1/chat/completions', target(), audioAsk('gpt-audio', { stream: true }));
    expect([json.status, stream.status]).toEqual([200, 200]);
    for (const [label, { entry }] of [['json', json], ['stream', stream]] as const) {
      expectPriced(entry, GPT_AUDIO_LINES, label);
      expect([entry.prompt_tokens, entry.completion_tokens, entry.tokens_estimated], label).toEqual([1000, 900, false]);
      expect(entry.price.price_id, label).toBe('openai/gpt-audio');
    }
    expect(stored(stream.entry)).toEqual(stored(json.entry));
  });

  test('gpt-4o-audio-preview: audio tokens at the audio rates', async () => {
    const { entry } = await priced('/v1/chat/completions', target(), audioAsk('gpt-4o-audio-preview'));
    expectPriced(entry, [
      ['input', 400, 2.5],
      ['input_audio', 600, 40],
      ['output', 200, 10],
      ['output_audio', 700, 80],
    ], 'gpt-4o-audio-preview');
  });
});

// ---- 6. OpenAI service tiers ----

describe('OpenAI service tiers (chat completions)', () => {
  const target = () => ({ provider: 'openai', api_key: 'sk-cost-tiers', custom_host: `${up.url}/openai/v1` });

  test('gpt-5 answered at "flex": the flex rates (half the standard ones), JSON and a stream without include_usage', async () => {
    const json = await priced('/v1/chat/completions', target(), ask({ model: 'gpt-5', service_tier: 'flex' }));
    const stream = await priced('/v1/chat/completions', target(), ask({ model: 'gpt-5', service_tier: 'flex', stream: true }));
    expect([json.status, stream.status]).toEqual([200, 200]);
    for (const [label, { entry }] of [['json', json], ['stream', stream]] as const) {
      expectPriced(entry, CHAT_FLEX, label);
      expect([entry.price.price_id, entry.price.service_tier, entry.tokens_estimated], label).toEqual(['openai/gpt-5', 'flex', false]);
    }
    expect(stored(stream.entry)).toEqual(stored(json.entry));
    expect(stream.text).not.toContain('"usage":{');
  });

  test('gpt-5-nano answered at "priority", which the list has no price for: cost null, unpriced, the reason naming the tier; never the standard price', async () => {
    const json = await priced('/v1/chat/completions', target(), ask({ model: 'gpt-5-nano', service_tier: 'priority' }));
    const stream = await priced('/v1/chat/completions', target(), ask({ model: 'gpt-5-nano', service_tier: 'priority', stream: true }));
    for (const [label, { entry }] of [['json', json], ['stream', stream]] as const) {
      expect([entry.cost, entry.cost_status], label).toEqual([null, 'unpriced']);
      expect([entry.price.price_id, entry.price.service_tier], label).toEqual(['openai/gpt-5-nano', 'priority']);
      expect(entry.price.reason, label).toBe('no "priority" service tier price for openai/gpt-5-nano');
      expect(entry.price.components, label).toEqual([]);
      // The usage is still the upstream's.
      expect([entry.prompt_tokens, entry.cached_tokens, entry.completion_tokens, entry.reasoning_tokens, entry.tokens_estimated], label).toEqual([1000, 200, 500, 300, false]);
    }
    expect(stored(stream.entry)).toEqual(stored(json.entry));
  });
});
