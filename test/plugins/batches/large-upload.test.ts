import { request } from 'node:http';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startProcess, type GatewayProcess } from '../../helpers/process.js';

const KEY = 'large-upload-key-0001';
let proc: GatewayProcess;

beforeAll(async () => {
  proc = await startProcess([], { GATEWAY_API_KEYS: KEY, GATEWAY_BOOTSTRAP_KEY: 'large-upload-bootstrap-0001' });
});
afterAll(async () => {
  proc.child.kill('SIGKILL');
  await proc.exited;
});

/** Peak resident memory of the server process so far, in bytes (Linux's VmHWM). */
function peakRss(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]) * 1024;
}

/** Streams a multipart upload of `lines` fine-tuning lines, generated as it is sent (never whole in this process either). */
function streamUpload(port: number, lines: number): Promise<{ status: number; body: string; bytes: number }> {
  const boundary = 'large-upload-boundary';
  const line = JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(900) }, { role: 'assistant', content: 'ok' }] }) + '\n';
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nfine-tune\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.jsonl"\r\nContent-Type: application/octet-stream\r\n\r\n`;
  const tail = `\r\n--${boundary}--\r\n`;
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/v1/files', headers: { 'x-gateway-api-key': KEY, 'content-type': `multipart/form-data; boundary=${boundary}` } }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body, bytes: line.length * lines }));
    });
    req.on('error', reject);
    req.write(head);
    let sent = 0;
    const chunk = line.repeat(64);
    const pump = () => {
      while (sent < lines) {
        sent += 64;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      req.end(tail);
    };
    pump();
  });
}

test('a 150 MB upload streams to disk: the server’s peak memory stays flat', async () => {
  const small = await streamUpload(proc.port, 640);
  expect(small.status, small.body).toBe(200);
  const before = peakRss(proc.child.pid!);
  const big = await streamUpload(proc.port, 160_000);
  expect(big.status, big.body).toBe(200);
  const file = JSON.parse(big.body) as { bytes: number; purpose: string };
  expect(file.bytes).toBe(big.bytes);
  expect(file.bytes).toBeGreaterThan(150_000_000);
  const growth = peakRss(proc.child.pid!) - before;
  // Holding the file would need 150 MB and more; streaming needs buffers and parsing garbage only.
  expect(growth).toBeLessThan(64 * 1024 * 1024);
}, 60_000);
