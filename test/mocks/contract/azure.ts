import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ContractMock, Scenario, SeenNativeRequest } from '../../../server/testing/index.js';
import { sendJson, startRecordingServer, writeEvents } from '../../../server/testing/index.js';
import { newResponsesState, responsesAnswer } from '../../../server/testing/responses-mock.js';

/**
 * Azure mocks, per shared/providers/azure.md:
 * - Azure OpenAI: `/openai/deployments/{deployment}/{chat/completions|completions|embeddings}?api-version=…`
 *   and `/openai/v1/…`, `api-key` or `Authorization: Bearer <issued token>` (401 with Azure's
 *   body otherwise), answers with `prompt_filter_results` / `content_filter_results`, streams
 *   with the empty prompt-filter first chunk and a delta-less filter-annotation chunk,
 *   errors as `{"error":{"code":"429","message"}}`;
 * - an Entra ID token endpoint (`/{tenant}/oauth2/v2.0/token`, client credentials);
 * - Azure AI serverless (`/chat/completions`, `/embeddings`, refusing unknown body fields
 *   unless `extra-parameters` allows them) and managed (`/score`, `azureml-model-deployment`).
 */

export const AZURE_KEY = 'azure-test-key';
export const ENTRA = { tenant: 'tenant-1', clientId: 'client-1', clientSecret: 'secret-1' };

const FILTER = { hate: { filtered: false, severity: 'safe' }, self_harm: { filtered: false, severity: 'safe' }, sexual: { filtered: false, severity: 'safe' }, violence: { filtered: false, severity: 'safe' } };

/** Body fields the AI Model Inference API defines; others need `extra-parameters`. */
const INFERENCE_FIELDS = new Set(['messages', 'model', 'frequency_penalty', 'presence_penalty', 'temperature', 'top_p', 'max_tokens', 'stop', 'stream', 'tools', 'tool_choice', 'response_format', 'seed', 'modalities', 'input', 'dimensions', 'encoding_format', 'input_type']);

function azureError(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  sendJson(res, status, { error: { code: String(status), message } }, headers);
}

const data = (value: unknown) => `data: ${JSON.stringify(value)}\n\n`;

/** Answers an OpenAI-format chat request the Azure way. */
function chatAnswer(res: ServerResponse, s: Scenario, body: Record<string, any>, model: string): void {
  if (s.kind === 'error') return azureError(res, s.status, `Mock error ${s.status}`, s.status === 429 ? { 'retry-after': '7' } : {});
  const finish = s.kind === 'tool_call' ? 'tool_calls' : s.kind === 'text' ? (s.finish ?? 'stop') : 'stop';
  const usage = { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11, prompt_tokens_details: { cached_tokens: 3 }, completion_tokens_details: { reasoning_tokens: 0 } };
  const id = 'chatcmpl-AzureMock01';
  const created = 1736407895;
  const call = { id: 'call_AzureWeather', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } };
  if (body.stream !== true) {
    const message = s.kind === 'tool_call' ? { role: 'assistant', content: null, tool_calls: [call], refusal: null } : { role: 'assistant', content: 'Hello!', refusal: null };
    return sendJson(res, 200, {
      id,
      object: 'chat.completion',
      created,
      model,
      prompt_filter_results: [{ prompt_index: 0, content_filter_results: FILTER }],
      choices: [{ index: 0, finish_reason: finish, logprobs: null, message, content_filter_results: FILTER }],
      usage,
      system_fingerprint: 'fp_mock',
    }, { 'x-ms-region': 'Sweden Central', 'apim-request-id': 'apim-1' });
  }
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => data({ id, object: 'chat.completion.chunk', created, model, system_fingerprint: 'fp_mock', choices, ...extra });
  const events = [
    data({ choices: [], created: 0, id: '', model: '', object: '', prompt_filter_results: [{ prompt_index: 0, content_filter_results: FILTER }] }),
    chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null, logprobs: null, content_filter_results: {} }]),
  ];
  if (s.kind === 'stream_error') {
    events.push(chunk([{ index: 0, delta: { content: 'Hel' }, finish_reason: null, content_filter_results: FILTER }]), data({ error: { code: 'server_error', message: 'Mock stream failure' } }));
    return writeEvents(res, events);
  }
  if (s.kind === 'tool_call') {
    events.push(
      chunk([{ index: 0, delta: { tool_calls: [{ index: 0, id: call.id, type: 'function', function: { name: 'get_weather', arguments: '' } }] }, finish_reason: null }]),
      chunk([{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }, finish_reason: null }]),
      chunk([{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }, finish_reason: null }]),
    );
  } else {
    events.push(
      chunk([{ index: 0, delta: { content: 'Hello' }, finish_reason: null, content_filter_results: FILTER }]),
      chunk([{ index: 0, delta: { content: '!' }, finish_reason: null, content_filter_results: FILTER }]),
      // Asynchronous filter annotation: a choice without delta, empty id/model.
      data({ choices: [{ index: 0, finish_reason: null, content_filter_offsets: { check_offset: 0, start_offset: 0, end_offset: 6 }, content_filter_results: FILTER }], created: 0, id: '', model: '', object: '' }),
    );
  }
  events.push(chunk([{ index: 0, delta: {}, finish_reason: finish, content_filter_results: {} }]));
  if (body.stream_options?.include_usage === true) events.push(chunk([], { usage }));
  events.push('data: [DONE]\n\n');
  writeEvents(res, events);
}

function embeddingsAnswer(res: ServerResponse, body: Record<string, any>, model: string): void {
  const inputs = Array.isArray(body.input) ? body.input : [body.input];
  sendJson(res, 200, { object: 'list', data: inputs.map((_: unknown, index: number) => ({ object: 'embedding', index, embedding: [0.1, index] })), model, usage: { prompt_tokens: 3, total_tokens: 3 } });
}

export interface AzureMock extends ContractMock {
  /** Tokens issued by the Entra endpoint, in order. */
  issued: string[];
  tokenRequests: Array<Record<string, string>>;
  tokenURL: string;
}

function tokenEndpoint(seen: SeenNativeRequest, res: ServerResponse, issued: string[], tokenRequests: Array<Record<string, string>>): boolean {
  const m = /^\/([^/]+)\/oauth2\/v2\.0\/token$/.exec(seen.path);
  if (m === null || seen.method !== 'POST') return false;
  const form = Object.fromEntries(new URLSearchParams(typeof seen.body === 'string' ? seen.body : ''));
  tokenRequests.push({ tenant: decodeURIComponent(m[1]!), ...form });
  if (form.grant_type !== 'client_credentials' || form.client_id !== ENTRA.clientId || form.client_secret !== ENTRA.clientSecret || m[1] !== ENTRA.tenant) {
    sendJson(res, 401, { error: 'invalid_client', error_description: 'AADSTS7000215: Invalid client secret provided.' });
    return true;
  }
  const token = `entra-token-${issued.length + 1}`;
  issued.push(token);
  sendJson(res, 200, { token_type: 'Bearer', expires_in: 3599, ext_expires_in: 3599, access_token: token });
  return true;
}

function authorised(req: IncomingMessage, issued: string[], keyHeader: 'api-key' | 'authorization' | 'either'): boolean {
  const auth = req.headers.authorization;
  const bearer = typeof auth === 'string' && auth.startsWith('Bearer ') ? auth.slice(7) : undefined;
  if (bearer !== undefined && issued.includes(bearer)) return true;
  if (keyHeader !== 'authorization' && req.headers['api-key'] === AZURE_KEY) return true;
  if (keyHeader !== 'api-key' && bearer === AZURE_KEY) return true;
  return false;
}

export async function startAzureOpenAIContractMock(): Promise<AzureMock> {
  let scenario: Scenario = { kind: 'text' };
  const issued: string[] = [];
  const tokenRequests: Array<Record<string, string>> = [];
  const responses = newResponsesState();
  const rec = await startRecordingServer((req, res, seen) => {
    if (tokenEndpoint(seen, res, issued, tokenRequests)) return;
    if (!authorised(req, issued, 'api-key')) {
      return azureError(res, 401, 'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.');
    }
    const url = new URL(seen.path, 'http://mock');
    // The Responses API: /openai/v1/responses, or /openai/responses?api-version=… (preview); the body's model names the deployment.
    if (url.pathname === '/openai/v1/responses' || (url.pathname === '/openai/responses' && url.searchParams.has('api-version'))) {
      return responsesAnswer(res, scenario, seen.body as Record<string, any>, responses, azureError);
    }
    const dep = /^\/openai\/deployments\/([^/]+)\/(chat\/completions|completions|embeddings)$/.exec(url.pathname);
    const v1 = /^\/openai\/v1\/(chat\/completions|completions|embeddings)$/.exec(url.pathname);
    if (dep === null && v1 === null) {
      if (url.pathname === '/openai/files' && seen.method === 'GET') return sendJson(res, 200, { object: 'list', data: [], api_version: url.searchParams.get('api-version') });
      return sendJson(res, 404, { error: { code: '404', message: 'Resource not found' } });
    }
    if (dep !== null && !url.searchParams.get('api-version')) return sendJson(res, 404, { error: { code: '404', message: 'Resource not found' } });
    if (v1 !== null && url.searchParams.has('api-version')) return sendJson(res, 400, { error: { code: 'BadRequest', message: 'api-version is not allowed on the v1 API' } });
    const body = seen.body as Record<string, any>;
    const deployment = dep !== null ? decodeURIComponent(dep[1]!) : body.model;
    if (deployment === 'missing') return sendJson(res, 404, { error: { code: 'DeploymentNotFound', message: 'The API deployment for this resource does not exist.' } });
    const op = dep?.[2] ?? v1![1]!;
    if (op === 'embeddings') return embeddingsAnswer(res, body, deployment);
    if (op === 'completions') return sendJson(res, 200, { id: 'cmpl-1', object: 'text_completion', created: 1, model: deployment, choices: [{ index: 0, text: 'ok', finish_reason: 'stop', logprobs: null }] });
    chatAnswer(res, scenario, body, 'gpt-4o-mini-2024-07-18');
  });
  return {
    baseURL: rec.url,
    tokenURL: rec.url,
    requests: rec.requests,
    issued,
    tokenRequests,
    next(s) {
      scenario = s;
    },
    close: rec.close,
  };
}

export async function startAzureAIContractMock(options: { deployment?: string } = {}): Promise<AzureMock> {
  let scenario: Scenario = { kind: 'text' };
  const issued: string[] = [];
  const tokenRequests: Array<Record<string, string>> = [];
  const rec = await startRecordingServer((req, res, seen) => {
    if (tokenEndpoint(seen, res, issued, tokenRequests)) return;
    if (!authorised(req, issued, 'either')) return sendJson(res, 401, { error: { code: 'Unauthorized', message: 'Access denied due to invalid key.' } });
    const url = new URL(seen.path, 'http://mock');
    const body = seen.body as Record<string, any>;
    if (url.pathname === '/score') {
      if (options.deployment !== undefined && req.headers['azureml-model-deployment'] !== options.deployment) {
        return sendJson(res, 404, { error: { code: 'DeploymentNotFound', message: 'No deployment named in azureml-model-deployment' } });
      }
      return Array.isArray(body?.messages) ? chatAnswer(res, scenario, body, 'managed-model') : embeddingsAnswer(res, body, 'managed-model');
    }
    if (url.pathname !== '/chat/completions' && url.pathname !== '/embeddings') return sendJson(res, 404, { error: { code: 'NotFound', message: 'Not found' } });
    const mode = req.headers['extra-parameters'] ?? 'error';
    const unknown = Object.keys(body ?? {}).filter((k) => !INFERENCE_FIELDS.has(k));
    if (unknown.length > 0 && mode === 'error') {
      return sendJson(res, 400, { error: { code: 'Invalid input', message: `Extra parameters ${unknown.join(', ')} are not allowed when extra-parameters is not set or set to be 'error'.`, status: 400 } });
    }
    if (url.pathname === '/embeddings') return embeddingsAnswer(res, body, 'serverless-embed');
    chatAnswer(res, scenario, body, 'Mistral-large-2411');
  });
  return {
    baseURL: rec.url,
    tokenURL: rec.url,
    requests: rec.requests,
    issued,
    tokenRequests,
    next(s) {
      scenario = s;
    },
    close: rec.close,
  };
}
