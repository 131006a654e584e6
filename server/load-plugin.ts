import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { resolve as resolveModule } from 'import-meta-resolve';
import type { GatewayPlugin } from '../core/index.js';
import { GATEWAY_PACKAGE } from '../sdk/package-version.js';
import type { PluginEntry } from './schema.js';

/** A name that is a path (relative to the config file, or absolute) rather than a package name. */
export function isPathLike(name: string): boolean {
  return name.startsWith('./') || name.startsWith('../') || name.startsWith('file:') || isAbsolute(name);
}

/**
 * Where a loaded plugin came from, for the start line: bundled with the gateway,
 * an installed package (its name and version, from the package.json above the
 * module file it resolved to), or a module file named by path. `name` is the
 * plugin's own name (what its log lines and errors say), `entry` the name the
 * server config gave (a catalog name, a package name or a path).
 */
export type PluginOrigin =
  | { name: string; entry: string; origin: 'bundled' }
  | { name: string; entry: string; origin: 'package'; package: string; version: string | null; file: string }
  | { name: string; entry: string; origin: 'path'; file: string };

/** A plugin loaded from outside the gateway, and where it came from. */
export interface ExternalPlugin {
  plugin: GatewayPlugin;
  origin: Extract<PluginOrigin, { origin: 'package' | 'path' }>;
}

/**
 * Loads a plugin that is not bundled: an ES module named by a path relative to
 * the config file's directory, or by a package name resolved as Node resolves
 * it from that directory (a package installed beside the config file), then
 * from the gateway's own location (its `node_modules`). The module's default
 * export, or the export named by the entry's `export`, is a factory called
 * with the entry's options (it may be async), or a plugin object.
 *
 * Every failure stops the start with an error that names the entry and says
 * whether it could not be found, could not be loaded, or refused its options.
 */
export async function loadExternalPlugin(entry: PluginEntry, index: number, baseDir: string, bundled: readonly string[] = []): Promise<ExternalPlugin> {
  const label = `Plugin "${entry.name}" (plugins[${index}] of the server config)`;
  const url = locate(entry.name, baseDir, label, bundled);
  let mod: Record<string, unknown>;
  try {
    mod = (await import(url)) as Record<string, unknown>;
  } catch (err) {
    throw new Error(`${label} could not be loaded from ${fileURLToPath(url)}: ${(err as Error).message}${gatewayNotFoundHint(err)}`);
  }
  const exportName = entry.export ?? 'default';
  const exported = mod[exportName];
  if (exported === undefined) {
    const named = Object.keys(mod).filter((k) => k !== 'default');
    throw new Error(
      `${label} could not be loaded: ${fileURLToPath(url)} has no export "${exportName}"` +
        (named.length > 0 ? ` (it exports ${named.join(', ')}; pick one with "export")` : ''),
    );
  }
  let plugin: unknown;
  try {
    plugin = typeof exported === 'function' ? await (exported as (options: unknown) => unknown)(entry.options ?? {}) : exported;
  } catch (err) {
    throw new Error(`${label} refused its options: ${(err as Error).message}`);
  }
  if (!isPlugin(plugin)) {
    throw new Error(`${label} could not be loaded: export "${exportName}" is neither a plugin (an object with name and apply) nor a function returning one`);
  }
  if (typeof exported !== 'function' && entry.options !== undefined) {
    throw new Error(`${label}: export "${exportName}" is a plugin object, not a factory, so it takes no options`);
  }
  const file = fileURLToPath(url);
  if (isPathLike(entry.name)) return { plugin, origin: { name: plugin.name, entry: entry.name, origin: 'path', file } };
  const pkg = owningPackage(file);
  return { plugin, origin: { name: plugin.name, entry: entry.name, origin: 'package', package: pkg?.name ?? entry.name, version: pkg?.version ?? null, file } };
}

/**
 * The package a module file belongs to: the nearest package.json above it that has a `name`
 * (a nested one holding only `"type"`, as dual builds ship, is passed over). Null when none is
 * found or readable; never throws, as it only describes a plugin already loaded.
 */
export function owningPackage(file: string): { name: string; version: string | null } | null {
  let dir = dirname(file);
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        const json = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown; version?: unknown };
        if (typeof json.name === 'string' && json.name !== '') return { name: json.name, version: typeof json.version === 'string' ? json.version : null };
      } catch {
        // An unreadable manifest names nothing: look further up.
      }
    }
    const parent = dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}

/**
 * What to do when a plugin's own import of the gateway fails: the plugin sits where Node cannot find the
 * gateway from (a `npm link`, a copy outside the deployment folder), so its peer dependency resolves to nothing.
 */
function gatewayNotFoundHint(err: unknown): string {
  const e = err as { code?: string; message?: string };
  if (e.code !== 'ERR_MODULE_NOT_FOUND' || !(e.message ?? '').includes(`Cannot find package '${GATEWAY_PACKAGE}'`)) return '';
  return (
    '. The plugin imports switchyard-gateway (its peer dependency), which Node looks for in the node_modules folders above the plugin\'s own files: ' +
    'install the plugin into the deployment folder with npm (npm install <its folder or packed tarball>) instead of linking it, ' +
    'so it resolves to the gateway installed there (docs/plugin-packages.md)'
  );
}

function isPlugin(value: unknown): value is GatewayPlugin {
  return typeof value === 'object' && value !== null && typeof (value as GatewayPlugin).name === 'string' && typeof (value as GatewayPlugin).apply === 'function';
}

/** The module URL an entry names, or an error saying it could not be found and where it was looked for. */
function locate(name: string, baseDir: string, label: string, bundled: readonly string[]): string {
  if (isPathLike(name)) {
    let file: string;
    try {
      file = name.startsWith('file:') ? fileURLToPath(name) : resolve(baseDir, name);
    } catch {
      throw new Error(`${label} could not be found: "${name}" is not an absolute file: URL of this machine`);
    }
    if (!existsSync(file)) throw new Error(`${label} could not be found: there is no file ${file}`);
    if (statSync(file).isDirectory()) throw new Error(`${label} could not be found: ${file} is a directory; name the module file (e.g. ${name.replace(/\/$/, '')}/index.js) or the package name`);
    return pathToFileURL(file).href;
  }
  const parents = [pathToFileURL(`${baseDir}/`).href, import.meta.url];
  for (const parent of parents) {
    let url: string;
    try {
      url = resolveModule(name, parent);
    } catch (err) {
      const code = (err as { code?: string }).code;
      // Not there: try the next place. Anything else (a broken package.json, an export map that hides the entry) is the answer.
      if (code === 'ERR_MODULE_NOT_FOUND') continue;
      throw new Error(`${label} could not be found: ${(err as Error).message}`);
    }
    // A built-in (`node:crypto`) or a data: URL is no plugin module; a package whose entry file is missing is not there.
    if (!url.startsWith('file:')) throw new Error(`${label} could not be found: "${name}" is ${url.startsWith('node:') ? 'a Node built-in' : 'not a file'}, not an installed package`);
    if (!existsSync(fileURLToPath(url))) throw new Error(`${label} could not be found: the package's entry ${fileURLToPath(url)} does not exist`);
    return url;
  }
  throw new Error(
    `${label} could not be found: it is not a bundled plugin, and no package "${name}" is installed beside the config file (${baseDir}) or in the gateway's own node_modules. ` +
      `Bundled plugins: ${bundled.join(', ')}.`,
  );
}
