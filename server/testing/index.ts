/**
 * The plugin test kit (`switchyard-gateway/testing`): the suites the bundled providers and checks pass,
 * for plugins of your own, and a harness that serves a gateway with your plugin against a mock upstream.
 * It runs under vitest and drives the gateway with the official `openai` and `@anthropic-ai/sdk` clients:
 * install `vitest`, `openai` and `@anthropic-ai/sdk` as dev dependencies of your plugin (they are optional
 * peer dependencies of the gateway). docs/plugins.md, "Testing a plugin", walks through it.
 *
 * @module switchyard-gateway/testing
 */
export { providerContract, type ContractMock, type ProviderContract, type ProviderSupports, type Scenario, type SeenNativeRequest } from './provider-contract.js';
export { checkContract, checkInput, type CheckCase, type CheckContract } from './check-contract.js';
export { basicPlugins, LOOPBACK_HOSTS, memoryLogger, startTestGateway, type MemoryLogger, type TestGateway, type TestGatewayOptions } from './harness.js';
export { COUNTED_TOKENS, sendJson, startChatMock, startRecordingServer, writeEvents, type ChatMock } from './mock-http.js';
export { sseEvents, type DoorEnv } from './responses-door.js';
export { requireSharedSchemas, schemaErrors } from './schemas.js';
export { startOpenAIContractMock } from './openai-mock.js';
