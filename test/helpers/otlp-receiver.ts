import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A loopback OTLP/HTTP receiver: keeps every JSON body posted to /v1/traces and /v1/metrics. */
export interface Receiver {
  url: string;
  traces: any[];
  metrics: any[];
  headers: Record<string, string | string[] | undefined>[];
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const traces: any[] = [];
  const metrics: any[] = [];
  const headers: Record<string, string | string[] | undefined>[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      headers.push(req.headers);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      if (req.url === '/v1/traces') traces.push(body);
      else if (req.url === '/v1/metrics') metrics.push(body);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    traces,
    metrics,
    headers,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** An OTLP attribute list as a plain object. */
export function attrs(list: { key: string; value: Record<string, unknown> }[] = []): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { key, value } of list) {
    const v = value.stringValue ?? value.intValue ?? value.doubleValue ?? value.boolValue;
    out[key] = typeof v === 'string' && 'intValue' in value ? Number(v) : v;
  }
  return out;
}

export const spansOf = (r: Receiver) => r.traces.flatMap((b) => b.resourceSpans.flatMap((rs: any) => rs.scopeSpans.flatMap((ss: any) => ss.spans.map((s: any) => ({ ...s, attributes: attrs(s.attributes), resource: attrs(rs.resource.attributes) })))));

