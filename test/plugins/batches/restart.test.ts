import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { GATEWAY_KEY } from '../../helpers/gateway.js';
import { startProcess, type GatewayProcess } from '../../helpers/process.js';
import { startBatchAnthropicMock, type BatchAnthropicMock } from '../../mocks/batch-anthropic.js';
import { anthropicHeaders, batchConfig, batchFile, fileLines, json, upload, waitForBatch } from './helpers.js';

const CONCURRENCY = 4;
let mock: BatchAnthropicMock;
const processes: GatewayProcess[] = [];

afterAll(async () => {
  for (const p of processes) {
    if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await p.exited;
  }
  await mock?.close();
});

test('a gateway killed with SIGKILL halfway through a batch resumes after a restart: no finished line runs again, none is lost, each is in a file once', async () => {
  mock = await startBatchAnthropicMock(20);
  const dataDir = mkdtempSync(join(tmpdir(), 'gw-restart-'));
  const configFile = join(dataDir, 'gateway.json');
  // Short leases, so the lines in flight at the kill are claimable again soon after the restart.
  writeFileSync(configFile, JSON.stringify(batchConfig({ pollMs: 50, leaseMs: 1500, concurrency: CONCURRENCY })));
  const env = { GATEWAY_API_KEYS: GATEWAY_KEY, GATEWAY_BOOTSTRAP_KEY: 'restart-bootstrap-key-0001', GATEWAY_DATA_DIR: dataDir, GATEWAY_CONFIG: configFile };
  const first = await startProcess([], env);
  processes.push(first);
  let url = `http://127.0.0.1:${first.port}`;
  const headers = anthropicHeaders(mock.url);

  const file = await json(await upload(url, batchFile(200, (i) => i % 10 === 0), 'batch', headers));
  const created = await json(
    await fetch(`${url}/v1/batches`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' }),
    }),
  );
  const { batch: halfway } = await waitForBatch(url, created.id, headers, (b) => b.request_counts.completed + b.request_counts.failed >= 60);
  first.child.kill('SIGKILL');
  await first.exited;
  // Everything the first process recorded: those lines must not run again.
  const recorded = halfway.request_counts.completed + halfway.request_counts.failed;
  const startsBefore = mock.started.length;
  expect(recorded).toBeLessThan(200);

  const second = await startProcess([], env);
  processes.push(second);
  url = `http://127.0.0.1:${second.port}`;
  const { batch } = await waitForBatch(url, created.id, headers, (b) => b.status === 'completed', 30_000);
  expect(batch.request_counts).toEqual({ total: 200, completed: 180, failed: 20 });

  // No line is lost: every one reached the provider, and each is in the output or error file exactly once.
  const output = await fileLines(url, batch.output_file_id, headers);
  const errors = await fileLines(url, batch.error_file_id, headers);
  expect(output).toHaveLength(180);
  expect(errors).toHaveLength(20);
  expect(new Set([...output, ...errors].map((l) => l.custom_id)).size).toBe(200);
  expect(new Set(mock.started).size).toBe(200);
  // Lines recorded before the kill never ran again: the restarted gateway sent only the rest, and at most
  // the lines in flight at the kill (claimed, not recorded) a second time.
  const startsAfter = mock.started.length - startsBefore;
  const twice = [...new Set(mock.started)].filter((t) => mock.started.indexOf(t) !== mock.started.lastIndexOf(t));
  expect(twice.length).toBeLessThanOrEqual(CONCURRENCY);
  expect(startsAfter).toBeLessThanOrEqual(200 - recorded + CONCURRENCY);
  expect(mock.started.length).toBe(200 + twice.length);
}, 90_000);
