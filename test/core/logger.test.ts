import { expect, test, vi } from 'vitest';
import { isoTimestamp } from '../../core/logger.js';
import { CORE_REDACT_PATHS, createGateway, fieldSchema, redactPaths, type GatewayPlugin } from '../../core/index.js';
import { fieldPlugins } from '../helpers/fields.js';
import { memoryLogger } from '../helpers/gateway.js';

test('credentials at the redacted paths never reach the log: the core paths and every declared credential field', async () => {
  const memory = memoryLogger();
  const gateway = createGateway({ plugins: fieldPlugins(), logger: memory.logger });
  gateway.logger.info(
    {
      authorization: 'Bearer sk-top',
      headers: { authorization: 'Bearer sk-h', 'x-gateway-api-key': 'gw-h', 'x-api-key': 'ant-h', cookie: 'sid=1' },
      target: {
        provider: 'openai',
        api_key: 'sk-t',
        aws_access_key_id: 'AKIA-id',
        aws_secret_access_key: 'aws-secret',
        aws_session_token: 'aws-token',
        vertex_service_account_json: { private_key: 'pk' },
        azure_entra_client_secret: 'entra-secret',
        azure_ad_token: 'ad-token',
        virtual_key: 'vk-name',
      },
      config: { api_key: 'sk-c', azure_entra_client_secret: 'entra-c' },
      options: { apiKey: 'sk-o', keys: ['gw-k'] },
    },
    'with secrets',
  );
  await gateway.close(0);
  const out = memory.text();
  for (const secret of ['sk-top', 'sk-h', 'gw-h', 'ant-h', 'sid=1', 'sk-t', 'AKIA-id', 'aws-secret', 'aws-token', 'pk', 'entra-secret', 'ad-token', 'vk-name', 'sk-c', 'entra-c', 'sk-o', 'gw-k']) {
    expect(out).not.toContain(secret);
  }
  const line = memory.lines().find((l) => l.msg === 'with secrets')!;
  expect(line.target.provider).toBe('openai');
  expect(line.headers.authorization).toBe('[redacted]');
});

test("a third-party plugin's credential field is redacted once it is declared", async () => {
  const memory = memoryLogger();
  const acme: GatewayPlugin = { name: 'acme', targetFields: { acme_token: { schema: fieldSchema.string(), credential: true } }, apply() {} };
  const gateway = createGateway({ plugins: [acme], logger: memory.logger });
  gateway.logger.info({ target: { acme_token: 'acme-secret', acme_region: 'eu' } }, 'acme');
  await gateway.close(0);
  expect(memory.text()).not.toContain('acme-secret');
  expect(memory.lines().find((l) => l.msg === 'acme')!.target.acme_region).toBe('eu');
});

test('redaction paths are explicit (a wildcard costs ~40 µs per line)', () => {
  expect(redactPaths(['api_key', 'aws_access_key_id']).filter((p) => p.includes('*'))).toEqual([]);
  expect(redactPaths(['aws_access_key_id'])).toEqual([...CORE_REDACT_PATHS, 'target.aws_access_key_id', 'config.aws_access_key_id']);
});

test('the line timestamp is ISO 8601 with milliseconds, the same as a Date would print, across second boundaries', () => {
  vi.useFakeTimers();
  try {
    for (const t of [Date.UTC(2026, 10, 24, 19, 47, 16, 5), Date.UTC(2026, 10, 24, 19, 47, 16, 42), Date.UTC(2026, 10, 24, 19, 47, 16, 999), Date.UTC(2026, 10, 24, 19, 47, 17, 0), Date.UTC(2027, 0, 1, 0, 0, 0, 123)]) {
      vi.setSystemTime(t);
      expect(isoTimestamp()).toBe(`,"time":"${new Date(t).toISOString()}"`);
    }
  } finally {
    vi.useRealTimers();
  }
});
