import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { GatewayPlugin, KeptState } from '../../core/index.js';
import { CATALOG } from '../../server/catalog.js';
import { readEnv } from '../../server/env.js';
import { DEFAULT_CONFIG } from '../../server/default-config.js';
import { REDIS_URL, requireService } from '../helpers/services.js';
import type { Probe } from './probe.js';
import { AGENT_PROBES } from './probes/agents.js';
import { BATCHES_PROBES } from './probes/batches.js';
import { BREAKER_PROBES } from './probes/breaker.js';
import { CACHE_PROBES } from './probes/cache.js';
import { LIMITS_PROBES } from './probes/limits.js';
import { LOGS_PROBES } from './probes/logs.js';
import { MESSAGES_PROBES } from './probes/messages.js';
import { RESPONSES_PROBES } from './probes/responses.js';
import { ROUTING_PROBES } from './probes/routing.js';
import { STORED_PROBES } from './probes/stored.js';
import { startWorld, type CallerKind, type StoreKind, type World } from './world.js';

/*
 * The tenant-isolation matrix (docs/security.md, "Tenant isolation"). Every bundled plugin says what
 * it keeps between requests (`GatewayPlugin.state`); every piece a workspace owns is tried by a probe
 * (./probes): workspace A leaves state behind, then B, whose names collide with A's, looks, and what
 * B sees must be what B sees in a world where A did nothing. The cases are generated: each probe,
 * for each kind of caller (a workspace's own key; an organisation-level key acting in the workspace)
 * and each store the state can live in (memory; Redis). A plugin that declares nothing fails, and so
 * does workspace state no probe tries.
 */

const PROBES: readonly Probe[] = [
  ...ROUTING_PROBES,
  ...BREAKER_PROBES,
  ...CACHE_PROBES,
  ...LIMITS_PROBES,
  ...RESPONSES_PROBES,
  ...MESSAGES_PROBES,
  ...BATCHES_PROBES,
  ...LOGS_PROBES,
  ...STORED_PROBES,
  ...AGENT_PROBES,
];

/** Every bundled plugin as the catalog builds it (no connection is opened before `apply`). */
async function bundledPlugins(): Promise<Array<{ entry: string; plugin: GatewayPlugin }>> {
  const env = readEnv({ GATEWAY_DATA_DIR: '/nonexistent/isolation-matrix', REDIS_URL, DATABASE_URL: 'postgres://127.0.0.1:5432/none' });
  const out: Array<{ entry: string; plugin: GatewayPlugin }> = [];
  for (const [entry, load] of Object.entries(CATALOG)) out.push({ entry, plugin: await load(undefined, env, DEFAULT_CONFIG) });
  return out;
}

/** The folder a catalog entry's plugin is imported from (its package), read off the loader. */
function packageOf(entry: string): string {
  // `import('../plugins/x/index.js')` as written, `("/plugins/x/index.ts")` once the test runner rewrote it.
  const found = /['"](?:\.\.)?\/(plugins\/[^'"]+)\/index\.[jt]s['"]/.exec(CATALOG[entry]!.toString());
  if (found === null) throw new Error(`the catalog entry ${entry} imports no plugins/…/index.js`);
  return found[1]!;
}

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'ui' ? [] : sources(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** What in a plugin's own code says it keeps something between requests. */
const KEEPS_STATE = [/\bapi\.stores\.get\(/, /\bredisConnectionOf\(/, /\bdefineCommand\(/, /\bnew LRUCache\b/, /\bnew TtlCache\b/, /\bCREATE TABLE\b/];

const declared = await bundledPlugins();
const pieces: Array<KeptState & { plugin: string }> = declared.flatMap(({ plugin }) => (plugin.state ?? []).map((s) => ({ plugin: plugin.name, ...s })));

describe('what the bundled plugins keep between requests', () => {
  test('every bundled plugin declares it (an empty list when nothing)', () => {
    const silent = declared.filter(({ plugin }) => plugin.state === undefined).map(({ entry }) => entry);
    expect(silent, 'declare `state` on these plugins (docs/security.md, "Declaring state")').toEqual([]);
  });

  test('a plugin whose own code keeps state (a store, a cache, a table) declares some', () => {
    const unsaid: string[] = [];
    for (const { entry, plugin } of declared) {
      if ((plugin.state ?? []).length > 0) continue;
      const dir = packageOf(entry);
      // Another entry's package inside this one (cache/simple in cache) is that entry's to answer for.
      const nested = declared.map((d) => packageOf(d.entry)).filter((other) => other.startsWith(`${dir}/`));
      const files = sources(dir).filter((f) => !nested.some((other) => f.startsWith(`${other}/`)));
      const hits = files.filter((f) => KEEPS_STATE.some((re) => re.test(readFileSync(f, 'utf8'))));
      if (hits.length > 0) unsaid.push(`${entry}: ${hits.join(', ')}`);
    }
    expect(unsaid).toEqual([]);
    // The markers find what they are for: the breaker's Redis scripts, the limits' table.
    const marked = (dir: string) => sources(dir).some((f) => KEEPS_STATE.some((re) => re.test(readFileSync(f, 'utf8'))));
    expect([marked('plugins/breaker'), marked('plugins/limits'), marked('plugins/retry')]).toEqual([true, true, false]);
  });

  test('each piece is named once per plugin, and says what it is keyed by', () => {
    const names = pieces.map((p) => `${p.plugin}:${p.name}`);
    expect(new Set(names).size).toBe(names.length);
    for (const p of pieces) expect(p.keyedBy.length, `${p.plugin}:${p.name}`).toBeGreaterThan(20);
  });

  test("every workspace's piece is tried by a probe, and every probe tries declared state", () => {
    const workspace = pieces.filter((p) => p.scope === 'workspace').map((p) => `${p.plugin}:${p.name}`);
    const covered = new Set(PROBES.flatMap((p) => p.covers));
    expect(workspace.filter((name) => !covered.has(name)), 'write a probe in test/isolation/probes for these').toEqual([]);
    expect([...covered].filter((name) => !pieces.some((p) => `${p.plugin}:${p.name}` === name))).toEqual([]);
  });

  test('docs/security.md lists every piece and whose it is', () => {
    const doc = readFileSync('docs/security.md', 'utf8');
    const missing = pieces.filter((p) => !doc.includes(`| \`${p.plugin}\` | \`${p.name}\` | ${p.scope} |`)).map((p) => `${p.plugin}:${p.name}`);
    expect(missing).toEqual([]);
  });
});

const KINDS: readonly CallerKind[] = ['workspace key', 'organisation key'];
const STORES: readonly StoreKind[] = ['memory', 'redis'];

for (const store of STORES) {
  for (const kind of KINDS) {
    describe(`two workspaces with the same names, ${kind}s, state in ${store}`, () => {
      let dirty: World | null = null;
      let clean: World | null = null;
      beforeAll(async () => {
        if (store === 'redis' && !(await requireService('Redis', REDIS_URL))) return;
        [dirty, clean] = await Promise.all([startWorld(kind, store), startWorld(kind, store)]);
      }, 60_000);
      afterAll(async () => {
        await Promise.all([dirty?.close(), clean?.close()]);
      });

      for (const probe of PROBES.filter((p) => (p.stores ?? STORES).includes(store))) {
        test(`${probe.title} [${probe.covers.join(', ')}]`, async (ctx) => {
          if (dirty === null || clean === null) ctx.skip();
          const clue = await probe.dirty(dirty!, dirty!.caller('A'));
          const seen = await probe.observe(dirty!, dirty!.caller('B'), clue);
          const alone = await probe.observe(clean!, clean!.caller('B'), clue);
          expect(seen, "what B sees after A's traffic, against what B sees where A did nothing").toEqual(alone);
          // The probe reached real state: A, who made it, sees something else.
          expect(await probe.observe(dirty!, dirty!.caller('A'), clue), 'A should see the state its own traffic left').not.toEqual(alone);
        }, 30_000);
      }
    });
  }
}
