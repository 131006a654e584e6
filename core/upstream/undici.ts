import { createRequire } from 'node:module';
import type { Agent as AgentType, buildConnector as BuildConnectorType, Dispatcher, errors as ErrorsType } from 'undici';

/*
 * undici's package entry also loads fetch, WebSocket, EventSource, caches and
 * mocks, which the gateway never uses: about 10 MB of RSS in each process
 * (measured: 62 MB against 53 MB for a bare node process that loads only
 * these three modules). The gateway needs the Agent, the request API and the
 * error classes (and the connector builder, which the host policy wraps), so
 * it loads just those. The undici version is pinned exactly
 * in package.json because these paths are internal.
 */
const require = createRequire(import.meta.url);

export const Agent = require('undici/lib/dispatcher/agent.js') as typeof AgentType;
export const errors = require('undici/lib/core/errors.js') as typeof ErrorsType;
export const buildConnector = require('undici/lib/core/connect.js') as typeof BuildConnectorType;
const api = require('undici/lib/api/index.js') as { request: (this: Dispatcher, options: Dispatcher.RequestOptions) => Promise<Dispatcher.ResponseData> };

/** `dispatcher.request(options)`, without patching Dispatcher.prototype as undici's entry does. */
export function request(dispatcher: Dispatcher, options: Dispatcher.RequestOptions): Promise<Dispatcher.ResponseData> {
  return api.request.call(dispatcher, options);
}
