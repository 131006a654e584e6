import { dirname, resolve } from 'node:path';
import { isObject } from '../sdk/json-object.js';
import type { ExtendingConfig, PluginChange, PluginEntry, ServerConfig } from './schema.js';

/*
 * `"extends"` in a server config: a file names a base (the bundled default,
 * or another file) and says only what it changes. Fields merge; `plugins` is
 * a list of changes to the base's list. The rules are in
 * docs/configuration.md#extending-the-default; this module applies them to
 * configs already checked (server/config.ts reads and validates the files).
 */

/** How many files one `extends` chain may hold, the file the server starts with included (`default` is no file). */
export const MAX_EXTENDS_DEPTH = 10;

/**
 * Plugins kept at the end of a list so they close first. The gateway closes
 * plugins in the reverse of the list's order (core/gateway.ts), and a batch
 * line still running at shutdown goes through providers, checks, the log
 * store and the SQL store: the batches plugin must stop its lines before any
 * of those close. A plugin added without `before`/`after` therefore goes in
 * front of these, not after them.
 */
const CLOSE_FIRST: ReadonlySet<string> = new Set(['batches', 'fine-tuning']);

/** Fields merged key by key (the extending file's key wins): the objects of settings and the records of named entries. */
const MERGED_BY_KEY: ReadonlySet<string> = new Set(['upstream', 'server', 'outbound', 'providers', 'guardrails', 'configs']);

/** Entry fields that only a config with `extends` may use: they change a base's list. */
const CHANGE_FIELDS = ['remove', 'before', 'after'] as const;

/** A plugin's entry in the list being built, with the identity changes are matched by. */
interface Placed {
  entry: PluginEntry;
  /** The name (a relative path resolved from the file that wrote it) and `#export` when it names one. */
  key: string;
  /** The key's name part. */
  id: string;
}

/**
 * The base file a config's `extends` names (anything but `"default"`), relative to the extending
 * file's folder unless absolute.
 *
 * @param file The extending file, as the server was given it or as a base resolved.
 * @param ext Its `extends`.
 * @param chain The files that extend this one, resolved, outermost first.
 * @throws Error naming the files when the base is already in the chain (a cycle), or when the chain
 *   would hold more than {@link MAX_EXTENDS_DEPTH} files.
 */
export function baseFileOf(file: string, ext: string, chain: readonly string[]): string {
  const trail = [...chain, resolve(file)];
  const base = resolve(dirname(resolve(file)), ext);
  if (trail.includes(base)) throw new Error(`The server config ${file}: extends makes a cycle (${[...trail, base].join(' → ')})`);
  if (trail.length >= MAX_EXTENDS_DEPTH) throw new Error(`The server config ${file}: extends goes more than ${MAX_EXTENDS_DEPTH} files deep (${[...trail, base].join(' → ')})`);
  return base;
}

/**
 * A config with its base applied: the base's fields with the extending file's over them, and the
 * base's plugins with the file's changes made. Neither input is changed; the result is the shape
 * of a config without `extends` (no `remove`, `before`, `after`), to be validated as one.
 *
 * @param base The base, validated: `defaultConfig(env)`, or a file's config with its own base applied.
 * @param baseDir The base file's folder, whose relative plugin paths are made absolute so they load
 *   from where that file is; null for the default.
 * @param own The extending file, validated with `ExtendingConfigSchema`.
 * @param where How errors name the extending file (`the server config gateway.json`).
 * @param ownDir The extending file's folder, for its own relative plugin paths when they are matched.
 * @throws Error naming the file and the entry for a plugin to remove that is not there, and a
 *   `before`/`after` naming no plugin, or several.
 */
export function extendConfig(base: ServerConfig, baseDir: string | null, own: ExtendingConfig, where: string, ownDir: string): ServerConfig {
  const { extends: _extends, plugins: changes, ...fields } = own;
  const copy = structuredClone(base);
  const out: Record<string, unknown> = { ...copy };
  for (const [field, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    const under = out[field];
    out[field] = MERGED_BY_KEY.has(field) && isObject(under) && isObject(value) ? { ...under, ...value } : value;
  }
  // Hosts allowed by the base stay allowed: the file adds to them rather than starting a new list.
  const baseHosts = copy.outbound?.allowHosts;
  const ownHosts = own.outbound?.allowHosts;
  if (baseHosts !== undefined && ownHosts !== undefined) out.outbound = { ...(out.outbound as object), allowHosts: [...new Set([...baseHosts, ...ownHosts])] };
  const placed = copy.plugins.map((entry) => place(rebase(entry, baseDir), null));
  out.plugins = changePlugins(placed, changes ?? [], where, ownDir).map((p) => p.entry);
  return out as ServerConfig;
}

/**
 * Refuses `remove`, `before` and `after` in a config that extends nothing: its `plugins` is the whole
 * list, so a change to a base is a mistake, and said as one rather than as an unknown key.
 *
 * @param json The file's JSON, before validation.
 * @param where How errors name the file.
 */
export function refuseChanges(json: unknown, where: string): void {
  if (!isObject(json) || !Array.isArray(json.plugins)) return;
  json.plugins.forEach((entry: unknown, i) => {
    if (!isObject(entry)) return;
    const field = CHANGE_FIELDS.find((f) => entry[f] !== undefined);
    if (field === undefined) return;
    throw new Error(
      `${capitalise(where)}: plugins[${i}].${field} changes the plugins of a config this one extends, but it extends none: ` +
        'without "extends", "plugins" is the whole list (add "extends": "default" to change the default\'s list instead)',
    );
  });
}

/** Applies the changes in their order to the base's list. */
function changePlugins(base: readonly Placed[], changes: readonly PluginChange[], where: string, ownDir: string): Placed[] {
  const list = [...base];
  const names = () => list.map((p) => display(p.entry)).join(', ');
  changes.forEach((change, i) => {
    const at = `${capitalise(where)}: plugins[${i}]`;
    const { remove, before, after, ...entry } = change;
    const item = place(entry, ownDir);
    const index = list.findIndex((p) => p.key === item.key);
    if (remove === true) {
      if (index === -1) throw new Error(`${at}: "${display(entry)}" is not among the extended config's plugins, so it cannot be removed (they are: ${names()})`);
      list.splice(index, 1);
      return;
    }
    const anchor = before ?? after;
    if (anchor === undefined) {
      // A plugin the base has keeps its place; a new one goes last, but in front of those that must close first.
      if (index !== -1) list[index] = item;
      else list.splice(appendAt(list), 0, item);
      return;
    }
    // With an anchor, a plugin the base has moves there.
    if (index !== -1) list.splice(index, 1);
    const side = before !== undefined ? 'before' : 'after';
    const target = anchorIndex(list, anchor, ownDir);
    if (target === 'none') throw new Error(`${at}: ${side} names "${anchor}", which is not among the plugins (they are: ${names()})`);
    if (target === 'several') throw new Error(`${at}: ${side} names "${anchor}", which several plugins are called; name one as name#export (they are: ${names()})`);
    list.splice(side === 'before' ? target : target + 1, 0, item);
  });
  return list;
}

/** Where a plugin added without an anchor goes: after every plugin but the trailing ones that must close first. */
function appendAt(list: readonly Placed[]): number {
  let at = list.length;
  while (at > 0 && CLOSE_FIRST.has(list[at - 1]!.entry.name)) at--;
  return at;
}

/** The index of the one plugin an anchor names: by its key (`name#export`), else by its name alone. */
function anchorIndex(list: readonly Placed[], anchor: string, ownDir: string): number | 'none' | 'several' {
  const hash = anchor.lastIndexOf('#');
  const asKey = hash > 0 ? `${idOf(anchor.slice(0, hash), ownDir)}#${anchor.slice(hash + 1)}` : idOf(anchor, ownDir);
  const exact = list.findIndex((p) => p.key === asKey);
  if (exact !== -1) return exact;
  const id = idOf(anchor, ownDir);
  const named = list.flatMap((p, i) => (p.id === id ? [i] : []));
  if (named.length === 0) return 'none';
  return named.length === 1 ? named[0]! : 'several';
}

function place(entry: PluginEntry, dir: string | null): Placed {
  const id = idOf(entry.name, dir);
  return { entry, id, key: entry.export === undefined ? id : `${id}#${entry.export}` };
}

/** A base file's relative plugin path made absolute: it names a file beside the base, not beside the file extending it. */
function rebase(entry: PluginEntry, dir: string | null): PluginEntry {
  return dir !== null && isRelative(entry.name) ? { ...entry, name: resolve(dir, entry.name) } : entry;
}

/** A plugin's name as changes match it: a relative path resolved from the folder of the file that wrote it. */
function idOf(name: string, dir: string | null): string {
  return dir !== null && isRelative(name) ? resolve(dir, name) : name;
}

/** Paths relative to a config file (`./x.js`, `../x.js`); package names, absolute paths and `file:` URLs mean the same from anywhere. */
function isRelative(name: string): boolean {
  return name.startsWith('./') || name.startsWith('../');
}

const display = (entry: PluginEntry) => (entry.export === undefined ? entry.name : `${entry.name}#${entry.export}`);

/** `the server config x` → `The server config x`, where a message starts with it. */
export const capitalise = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);
