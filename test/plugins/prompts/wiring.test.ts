import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { createGateway } from '../../../core/index.js';
import { controlPlane } from '../../../plugins/control-plane/index.js';
import { prompts } from '../../../plugins/prompts/index.js';
import { sqliteStore } from '../../../plugins/stores/sqlite/index.js';
import { memoryLogger } from '../../helpers/gateway.js';
import { serveGateway } from '../../helpers/serve.js';

/**
 * The prompts plugin keeps stored prompts on the control plane's store: what a
 * gateway answers without the control plane, or with its admin API off, is
 * what it answered when the control plane served these routes.
 */

const ADMIN = 'prompts-wiring-bootstrap-key-0001';

async function call(url: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${url}/v1${path}`, {
    method,
    headers: { 'x-gateway-api-key': ADMIN, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as { error?: { message: string } } };
}

const controlPlaneOn = async (routes: boolean) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'gw-prompts-wiring-'));
  return [sqliteStore({ file: join(dataDir, 'gateway.db') }), controlPlane({ bootstrapKey: ADMIN, dataDir, routes, announce: () => undefined })];
};

describe('the prompts plugin and the control plane', () => {
  test('without the control plane: no admin routes (an unknown route), and the prompt routes answer 503', async () => {
    const gw = await serveGateway({ plugins: [prompts()] });
    try {
      expect(await call(gw.url, 'GET', '/prompts')).toEqual({ status: 404, body: { error: expect.objectContaining({ message: 'Unknown route GET /v1/prompts.' }) } });
      const completion = await call(gw.url, 'POST', '/prompts/greeting/completions', { variables: {} });
      expect(completion.status).toBe(503);
      expect(completion.body.error?.message).toBe('Stored prompts need the control plane, which is not loaded.');
    } finally {
      await gw.close();
    }
  });

  test("with the control plane's admin API off: the admin routes answer as an unknown route; the prompt routes still serve", async () => {
    const gw = await serveGateway({ plugins: [...(await controlPlaneOn(false)), prompts()] });
    try {
      expect(await call(gw.url, 'GET', '/prompts')).toEqual({ status: 404, body: { error: expect.objectContaining({ message: 'Unknown route GET /v1/prompts.' }) } });
      expect((await call(gw.url, 'POST', '/prompts/partials', { name: 'p', content: 'x' })).body.error?.message).toBe('Unknown route POST /v1/prompts/partials.');
      const missing = await call(gw.url, 'POST', '/prompts/greeting/render', { variables: {} });
      expect(missing.status).toBe(404);
      expect(missing.body.error?.message).toBe('No prompt "greeting" in this workspace.');
    } finally {
      await gw.close();
    }
  });

  test('with the admin API on: prompts are stored and rendered', async () => {
    const gw = await serveGateway({ plugins: [...(await controlPlaneOn(true)), prompts()] });
    try {
      const created = await call(gw.url, 'POST', '/prompts', { name: 'Greeting', slug: 'greeting', provider: '@openai', template: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi {{name}}' }] } });
      expect(created.status).toBe(200);
      const rendered = (await call(gw.url, 'POST', '/prompts/greeting/render', { variables: { name: 'Ada' } })).body as { body: { messages: Array<{ content: string }> } };
      expect(rendered.body.messages[0]!.content).toBe('Hi Ada');
    } finally {
      await gw.close();
    }
  });

  test('listed before the control plane, whose store it uses: the boot stops saying so', async () => {
    const gateway = createGateway({ plugins: [prompts(), ...(await controlPlaneOn(true))], logger: memoryLogger().logger });
    await expect(gateway.ready).rejects.toThrow('prompts: list it after control-plane, whose store keeps stored prompts');
    await gateway.close(100);
  });
});
