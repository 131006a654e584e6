import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Role, TaskState, type AgentCard, type Message, type Part } from '@a2a-js/sdk';
import { DefaultRequestHandler, InMemoryTaskStore, type AgentExecutor } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';

export interface A2AAgent {
  /** The agent's base URL (its card is at `/.well-known/agent-card.json` under it). */
  url: string;
  /** Every request the agent saw: method, path, headers. */
  requests: Array<{ method: string; path: string; headers: IncomingHttpHeaders }>;
  /** How many times its card was fetched. */
  cardFetches: () => number;
  /** Changes the card's description (and version) from now on, to see a refresh. */
  setDescription(text: string): void;
  close(): Promise<void>;
}

const text = (value: string): Part => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' });

/**
 * An A2A agent of the official SDK (`@a2a-js/sdk`, A2A 1.0 with its 0.3
 * compatibility on): it answers `hello …` with a message, and `task …` with a
 * task that goes submitted → working → an artifact → completed (streamed as
 * events over `message/stream`); `wait …` works for 1.5 s before its artifact.
 */
export async function startA2AAgent(): Promise<A2AAgent> {
  const app = express();
  const server: Server = createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  let description = 'Echoes what it is told';
  let version = '1.0.0';
  let fetches = 0;
  const requests: A2AAgent['requests'] = [];

  const card = (): AgentCard => ({
    name: 'Echo agent',
    description,
    // Both protocol versions at the same endpoint: the SDK's 0.3 compatibility answers requests without an A2A-Version header.
    supportedInterfaces: [
      { url: `${url}/a2a`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
      { url: `${url}/a2a`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '0.3' },
    ],
    provider: undefined,
    version,
    capabilities: { streaming: true, pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'echo', name: 'Echo', description: 'Says it back', tags: ['echo'], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
    signatures: [],
  });

  const executor: AgentExecutor = {
    async execute(ctx, bus) {
      const said = ctx.userMessage.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
      const reply = (value: string): Message => ({
        messageId: randomUUID(),
        contextId: ctx.contextId,
        taskId: '',
        role: Role.ROLE_AGENT,
        parts: [text(value)],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      });
      if (!said.startsWith('task') && !said.startsWith('wait')) {
        bus.publish({ kind: 'message', data: reply(`echo: ${said}`) });
        bus.finished();
        return;
      }
      const status = (state: TaskState) => ({ state, message: undefined, timestamp: new Date().toISOString() });
      bus.publish({ kind: 'task', data: { id: ctx.taskId, contextId: ctx.contextId, status: status(TaskState.TASK_STATE_SUBMITTED), artifacts: [], history: [ctx.userMessage], metadata: undefined } });
      bus.publish({ kind: 'statusUpdate', data: { taskId: ctx.taskId, contextId: ctx.contextId, status: status(TaskState.TASK_STATE_WORKING), metadata: undefined } });
      if (said.startsWith('wait')) await new Promise((r) => setTimeout(r, 1500));
      bus.publish({
        kind: 'artifactUpdate',
        data: {
          taskId: ctx.taskId,
          contextId: ctx.contextId,
          artifact: { artifactId: 'answer', name: 'answer', description: '', parts: [text(`done: ${said}`)], metadata: undefined, extensions: [] },
          append: false,
          lastChunk: true,
          metadata: undefined,
        },
      });
      bus.publish({ kind: 'statusUpdate', data: { taskId: ctx.taskId, contextId: ctx.contextId, status: status(TaskState.TASK_STATE_COMPLETED), metadata: undefined } });
      bus.finished();
    },
    async cancelTask(taskId, bus) {
      bus.publish({ kind: 'statusUpdate', data: { taskId, contextId: '', status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: new Date().toISOString() }, metadata: undefined } });
      bus.finished();
    },
  };

  const handler = new DefaultRequestHandler(card(), new InMemoryTaskStore(), executor);
  app.use((req, _res, next) => {
    requests.push({ method: req.method, path: req.path, headers: req.headers });
    if (req.path === '/.well-known/agent-card.json') fetches++;
    next();
  });
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: async () => card(), legacyCompat: { enabled: true } }));
  app.use('/a2a', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat: { enabled: true } }));

  return {
    url,
    requests,
    cardFetches: () => fetches,
    setDescription(value) {
      description = value;
      version = '1.0.1';
    },
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
