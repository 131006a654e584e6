import * as v from 'valibot';
import { type GatewayPlugin, parseOptions } from '../../../sdk/index.js';
import type { CacheMode } from '../types.js';

export const PLUGIN_NAME = 'cache-simple';

const OptionsSchema = v.strictObject({});

export type SimpleCacheOptions = v.InferInput<typeof OptionsSchema>;

/** Exact match: one store read by the exact key; a save is one store write. */
export const simpleMode: CacheMode = {
  async lookup(req) {
    const answer = await req.store.get(req.key);
    if (answer === null) return null;
    const response = req.serve(answer);
    return response === null ? null : { response, answer, status: 'HIT' };
  },
  async save(req, answer, ttlMs) {
    await req.store.set(req.key, answer, ttlMs);
  },
};

/** Registers cache mode `simple` (`cache: { "mode": "simple" }`): an exact match on the cache key. Needs the `cache` plugin. */
export function cacheSimple(options: SimpleCacheOptions = {}): GatewayPlugin {
  parseOptions(PLUGIN_NAME, OptionsSchema, options);
  return {
    name: PLUGIN_NAME,
    state: [
      { name: 'entries', scope: 'workspace', keyedBy: "Exact-match answers, under the cache plugin's keys (workspace, resolved target, namespace, body)." },
    ],
    apply(api) {
      api.cacheModes.add('simple', simpleMode);
    },
  };
}

export default cacheSimple;
