import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { gatewayPackageJson } from '../../sdk/package-version.js';
import { fill, templateFiles, type TemplateValues } from './templates.js';

/** What `new` can make. */
export const PACKAGE_KINDS = ['provider', 'check'] as const;
export type PackageKind = (typeof PACKAGE_KINDS)[number];

/** `@team/my-provider` → `my_provider`: a provider name or check namespace made of the package's own name. */
export function pluginId(packageName: string): string {
  const bare = packageName.replace(/^@[^/]+\//, '').toLowerCase();
  const id = bare.replace(/[^a-z0-9]+/g, '_').replace(/^_+|_+$/g, '');
  return /^[a-z]/.test(id) ? id : `p_${id}`;
}

/**
 * Writes a new plugin package of `kind` into `dir` (created; it must not exist or be empty): an ES module
 * plugin in JavaScript with type checking, its tests on the gateway's kit, a package.json naming the
 * gateway as a peer dependency and the kit's test dependencies at the versions the gateway runs them with.
 * Returns the files written, relative to `dir`.
 *
 * @throws Error when `dir` holds files already, or the name is not a valid package name.
 */
export function scaffold(kind: PackageKind, dir: string, name?: string): string[] {
  const target = resolve(dir);
  if (existsSync(target) && readdirSync(target).length > 0) throw new Error(`${target} is not empty: give a new folder`);
  const packageName = name ?? basename(target);
  if (!/^(@[a-z0-9][a-z0-9._-]*\/)?[a-z0-9][a-z0-9._-]*$/.test(packageName)) {
    throw new Error(`"${packageName}" is not a valid npm package name (lower case letters, digits, - . _; give one with --name)`);
  }
  const gateway = gatewayPackageJson();
  const dev = gateway?.devDependencies ?? {};
  const values: TemplateValues = {
    packageName,
    id: pluginId(packageName),
    gatewayVersion: gateway?.version ?? '0.1.0',
    vitest: dev.vitest ?? '4.1.12',
    openai: dev.openai ?? '6.30.1',
    anthropic: dev['@anthropic-ai/sdk'] ?? '1.13.0',
  };
  const files = templateFiles(kind);
  for (const [path, template] of Object.entries(files)) {
    const file = join(target, path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, fill(template, values));
  }
  return Object.keys(files);
}
