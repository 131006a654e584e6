import type { ServerConfig } from './schema.js';

/**
 * What `npm start` runs without a config file: every bundled plugin, with
 * embedded defaults (keys from GATEWAY_API_KEYS, in-memory state).
 */
export const DEFAULT_CONFIG: ServerConfig = {
  port: 8787,
  plugins: [
    { name: 'trace' },
    { name: 'health' },
    { name: 'auth-static' },
    { name: 'provider-headers' },
    { name: 'validation' },
    { name: 'openai' },
    { name: 'proxy' },
    { name: 'request-log' },
  ],
};
