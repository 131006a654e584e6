import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { defaultConfig } from './default-config.js';
import type { ServerEnv } from './env.js';
import type { PluginEntry, ServerConfig } from './schema.js';

/** How deep `extends` may chain (a file extending a file extending … the default). */
const MAX_DEPTH = 10;

/** Entry fields that only mean something in a config that extends another: they change the base's list. */
const CHANGE_FIELDS = ['remove', 'before', 'after'] as const;

/** Objects whose keys merge one level deep: the extending file's keys win. */
const SHALLOW_MERGED = ['upstream', 'server', 'outbound'] as const;
/** Records merged by key: an entry of the extending file replaces the base's entry of the same key. */
const BY_KEY = ['providers', 'guardrails', 'configs'] as const;

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A plugin's identity in a list: its name, and its export when it names one (a package may hold several plugins). */
const keyOf = (entry: { name: unknown; export?: unknown }) => `${String(entry.name)}${entry.export === undefined ? '' : `#${String(entry.export)}`}`;

/**
 * The server config a file stands for once its `extends` is applied, not yet validated: the file's JSON
 * unchanged when it extends nothing. `extends` names `"default"` (the bundled default for the environment,
 * {@link defaultConfig}) or another config file, relative to this one; bases may extend further bases.
 *
 * - Fields: the extending file's win; `upstream`, `server` and `outbound` merge key by key
 *   (`outbound.allowHosts` lists add up); `providers`, `guardrails` and `configs` merge entry by entry.
 * - `plugins` lists changes to the base's plugins, each known by its name (and `export`): an entry the base
 *   has replaces it where it stands, options included (they are not merged); `"remove": true` takes it out;
 *   any other is added at the end, or where `"before"` / `"after"` (a plugin's name) puts it.
 *
 * @throws Error naming the file for a file that cannot be read or parsed, a cycle, an unknown plugin to
 *   remove or anchor, and `remove` / `before` / `after` in a config that extends nothing.
 */
export function applyExtends(json: unknown, file: string, env: Pick<ServerEnv, 'redisUrl' | 'databaseUrl'>, chain: readonly string[] = []): unknown {
  if (!isObject(json) || json.extends === undefined) {
    if (isObject(json)) refuseChanges(json, file);
    return json;
  }
  const where = `the server config ${file}`;
  if (typeof json.extends !== 'string' || json.extends === '') throw new Error(`${where}: extends must be "default" or the path of another config file`);
  const trail = [...chain, resolve(file)];
  if (trail.length > MAX_DEPTH) throw new Error(`${where}: extends goes more than ${MAX_DEPTH} files deep (${trail.join(' → ')})`);
  let base: Json;
  if (json.extends === 'default') {
    base = structuredClone(defaultConfig(env)) as unknown as Json;
  } else {
    const baseFile = isAbsolute(json.extends) ? json.extends : resolve(dirname(resolve(file)), json.extends);
    if (trail.includes(baseFile)) throw new Error(`${where}: extends makes a cycle (${[...trail, baseFile].join(' → ')})`);
    base = applyExtends(readConfigJson(baseFile, `extended by ${file}`), baseFile, env, trail) as Json;
    if (!isObject(base)) throw new Error(`the server config ${baseFile} (extended by ${file}) is not a JSON object`);
  }
  const { extends: _extends, ...own } = json;
  return merge(base, own, where);
}

/** Reads and parses a config file, or says which and why not. */
export function readConfigJson(file: string, role = ''): unknown {
  const label = `the server config ${file}${role === '' ? '' : ` (${role})`}`;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`Cannot read ${label}: ${(err as Error).message}`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new Error(`${label} is not valid JSON: ${(err as Error).message}`);
  }
}

function merge(base: Json, own: Json, where: string): Json {
  const out: Json = { ...base };
  for (const [field, value] of Object.entries(own)) {
    if (field === 'plugins') continue;
    if ((SHALLOW_MERGED as readonly string[]).includes(field) && isObject(value) && isObject(base[field])) {
      const merged: Json = { ...(base[field] as Json), ...value };
      if (field === 'outbound' && Array.isArray((base[field] as Json).allowHosts) && Array.isArray(value.allowHosts)) {
        merged.allowHosts = [...((base[field] as Json).allowHosts as unknown[]), ...(value.allowHosts as unknown[])];
      }
      out[field] = merged;
    } else if ((BY_KEY as readonly string[]).includes(field) && isObject(value) && isObject(base[field])) {
      out[field] = { ...(base[field] as Json), ...value };
    } else {
      out[field] = value;
    }
  }
  if (own.plugins !== undefined) {
    if (!Array.isArray(own.plugins)) throw new Error(`${where}: plugins must be an array of changes to the extended config's plugins`);
    out.plugins = changePlugins(Array.isArray(base.plugins) ? (base.plugins as PluginEntry[]) : [], own.plugins, where);
  }
  return out;
}

function changePlugins(base: readonly PluginEntry[], changes: readonly unknown[], where: string): unknown[] {
  const list: unknown[] = [...base];
  const names = () => list.map((e) => keyOf(e as PluginEntry));
  changes.forEach((change, i) => {
    const at = `${where}: plugins[${i}]`;
    if (!isObject(change) || typeof change.name !== 'string') throw new Error(`${at} must be an object with a name`);
    const { remove, before, after, ...entry } = change;
    const key = keyOf(entry as PluginEntry);
    const index = names().indexOf(key);
    if (remove !== undefined) {
      if (remove !== true) throw new Error(`${at}: remove must be true`);
      if (before !== undefined || after !== undefined || entry.options !== undefined) throw new Error(`${at}: an entry that removes a plugin takes only its name (and export)`);
      if (index === -1) throw new Error(`${at}: "${key}" is not among the extended config's plugins, so it cannot be removed (they are: ${names().join(', ')})`);
      list.splice(index, 1);
      return;
    }
    if (before !== undefined && after !== undefined) throw new Error(`${at}: give before or after, not both`);
    const anchor = before ?? after;
    if (anchor !== undefined) {
      if (typeof anchor !== 'string') throw new Error(`${at}: ${before !== undefined ? 'before' : 'after'} must be a plugin's name`);
      if (index !== -1) list.splice(index, 1);
      const target = list.findIndex((e) => (e as PluginEntry).name === anchor);
      if (target === -1) throw new Error(`${at}: ${before !== undefined ? 'before' : 'after'} names "${anchor}", which is not among the plugins (they are: ${names().join(', ')})`);
      list.splice(before !== undefined ? target : target + 1, 0, entry);
    } else if (index !== -1) {
      list[index] = entry;
    } else {
      list.push(entry);
    }
  });
  return list;
}

/** In a config that extends nothing, its plugins are the whole list: a change to a base is a mistake, said as one. */
function refuseChanges(json: Json, file: string): void {
  if (!Array.isArray(json.plugins)) return;
  json.plugins.forEach((entry, i) => {
    if (!isObject(entry)) return;
    const field = CHANGE_FIELDS.find((f) => entry[f] !== undefined);
    if (field !== undefined) {
      throw new Error(`the server config ${file}: plugins[${i}].${field} changes an extended config's plugins, but this config extends none (add "extends": "default")`);
    }
  });
}
