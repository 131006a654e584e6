import { expect, test } from 'vitest';
import { createGateway, serviceToken, type GatewayPlugin } from '../../core/index.js';
import { memoryLogger } from '../helpers/gateway.js';

const QUOTA = serviceToken<{ left(): number }>('test.quota', 'acme-quota');
const logger = () => memoryLogger().logger;

const provider = (provide = true): GatewayPlugin => ({
  name: 'acme-quota',
  provides: [QUOTA],
  apply(api) {
    if (provide) api.provide(QUOTA, { left: () => 3 });
  },
});

test('a plugin that requires a service no loaded plugin provides stops the boot, naming the service and its plugin', () => {
  const needy: GatewayPlugin = { name: 'needy', requires: [QUOTA], apply: () => undefined };
  expect(() => createGateway({ plugins: [needy], logger: logger() })).toThrow(/plugin "needy" requires the service "test.quota" \(provided by the acme-quota plugin\)/);
});

test('the requirement is met by a provider applied before or after the plugin; api.provided is known before apply', async () => {
  const seen: boolean[] = [];
  const needy: GatewayPlugin = {
    name: 'needy',
    requires: [QUOTA],
    apply(api) {
      seen.push(api.provided(QUOTA));
      api.onReady(() => {
        expect(api.resolve(QUOTA).left()).toBe(3);
      });
    },
  };
  for (const plugins of [[needy, provider()], [provider(), needy]]) {
    const gw = createGateway({ plugins, logger: logger() });
    await gw.ready;
    await gw.close(10);
  }
  expect(seen).toEqual([true, true]);
});

test('a plugin that declares a service it never provides stops the boot', () => {
  expect(() => createGateway({ plugins: [provider(false)], logger: logger() })).toThrow(/plugin "acme-quota" declares that it provides "test.quota"/);
});

test('an optional collaborator (uses) is not checked; api.provided says it is absent', async () => {
  let present: boolean | null = null;
  const relaxed: GatewayPlugin = {
    name: 'relaxed',
    uses: [QUOTA],
    apply(api) {
      present = api.provided(QUOTA);
    },
  };
  const gw = createGateway({ plugins: [relaxed], logger: logger() });
  await gw.ready;
  await gw.close(10);
  expect(present).toBe(false);
});
