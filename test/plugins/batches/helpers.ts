import { expect } from 'vitest';
import type { ServerConfig } from '../../../server/schema.js';
import { DEFAULT_CONFIG } from '../../../server/default-config.js';
import { GATEWAY_KEY } from '../../helpers/gateway.js';

export type Json = Record<string, any>;

/** The default server config with the batches plugin's options replaced (short timings for tests) and plugins swapped. */
export function batchConfig(batches: Record<string, unknown>, swap: Record<string, { name: string; options?: Record<string, unknown> }> = {}): ServerConfig {
  return {
    ...DEFAULT_CONFIG,
    plugins: DEFAULT_CONFIG.plugins.map((p) => (p.name === 'batches' ? { name: 'batches', options: batches } : (swap[p.name] ?? p))),
  };
}

/** Headers selecting Anthropic on the mock, with a provider key. */
export function anthropicHeaders(mockUrl: string, extra: Record<string, string> = {}): Record<string, string> {
  return { 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-provider': 'anthropic', authorization: 'Bearer sk-ant-secret-key-0001', 'x-gateway-custom-host': mockUrl, ...extra };
}

/** A batch input file of `n` chat lines; the lines whose number `fails` picks ask the mock to refuse them. */
export function batchFile(n: number, fails: (line: number) => boolean = () => false): string {
  const lines: string[] = [];
  for (let i = 1; i <= n; i++) {
    const text = fails(i) ? `fail-${i}` : `line-${i}`;
    lines.push(JSON.stringify({ custom_id: `req-${i}`, method: 'POST', url: '/v1/chat/completions', body: { model: 'claude-3-5-haiku-latest', max_tokens: 16, messages: [{ role: 'user', content: text }] } }));
  }
  return lines.join('\n') + '\n';
}

/** Uploads `content` as a file; returns the response. */
export async function upload(url: string, content: string | Blob, purpose: string, headers: Record<string, string> = { 'x-gateway-api-key': GATEWAY_KEY }, filename = 'input.jsonl'): Promise<Response> {
  const form = new FormData();
  form.set('purpose', purpose);
  form.set('file', typeof content === 'string' ? new Blob([content]) : content, filename);
  return fetch(`${url}/v1/files`, { method: 'POST', headers, body: form });
}

export async function json(res: Response, status = 200): Promise<Json> {
  const text = await res.text();
  expect(res.status, text).toBe(status);
  return JSON.parse(text) as Json;
}

/** Polls a batch until `done` holds; returns every status seen, in order, and the last object. */
export async function waitForBatch(url: string, id: string, headers: Record<string, string>, done: (b: Json) => boolean, timeoutMs = 20_000): Promise<{ batch: Json; seen: string[] }> {
  const seen: string[] = [];
  const until = Date.now() + timeoutMs;
  for (;;) {
    const batch = await json(await fetch(`${url}/v1/batches/${id}`, { headers }));
    if (seen.at(-1) !== batch.status) seen.push(batch.status);
    if (done(batch)) return { batch, seen };
    if (Date.now() > until) throw new Error(`batch ${id} did not finish: ${JSON.stringify(batch)}`);
    await new Promise((r) => setTimeout(r, 15));
  }
}

/** The lines of a file's content, parsed. */
export async function fileLines(url: string, id: string, headers: Record<string, string>): Promise<Json[]> {
  const res = await fetch(`${url}/v1/files/${id}/content`, { headers });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Json);
}

/** The log entries of a batch's lines, once the log store (which writes in the background) holds `count` of them. */
export async function batchLogs(url: string, batchId: string, headers: Record<string, string>, count: number): Promise<Json[]> {
  let data: Json[] = [];
  for (let i = 0; i < 100 && data.length < count; i++) {
    data = (await json(await fetch(`${url}/v1/logs?metadata.batch_id=${batchId}&limit=500`, { headers }))).data as Json[];
    if (data.length < count) await new Promise((r) => setTimeout(r, 50));
  }
  return data;
}
