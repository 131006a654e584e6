import { startMockOpenAI } from '../mocks/openai-upstream.js';

// Child process: the mock OpenAI origin. Not recording, so memory stays flat under load.
const mock = await startMockOpenAI({ record: false });
process.send!({ url: mock.url });
// The orchestrator's IPC channel closes when it dies, however it dies: never outlive it.
process.on('disconnect', () => process.exit(0));
