import { createRequire } from 'node:module';
import type { Agent as AgentType, buildConnector as BuildConnectorType, errors as ErrorsType } from 'undici';

/*
 * undici's package entry also loads fetch, WebSocket, EventSource, caches and
 * mocks, which the gateway never uses: about 10 MB of RSS in each process
 * (measured: 62 MB against 53 MB for a bare node process that loads only
 * these three modules). The gateway needs the Agent and the error classes (and
 * the connector builder, which the host policy wraps), so it loads just those:
 * not even the request API, since the upstream client dispatches with its own
 * handler (client.ts, body.ts). The undici version is pinned exactly in
 * package.json because these paths are internal.
 */
const require = createRequire(import.meta.url);

export const Agent = require('undici/lib/dispatcher/agent.js') as typeof AgentType;
export const errors = require('undici/lib/core/errors.js') as typeof ErrorsType;
export const buildConnector = require('undici/lib/core/connect.js') as typeof BuildConnectorType;
