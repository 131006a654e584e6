import { readFile } from 'node:fs/promises';
import { isAbsolute, join, normalize, sep } from 'node:path';
import { maskSecret, type SecretBox } from '../../../sdk/index.js';

/** Environment variables a secret mapping may read: only these, so an admin cannot read DATABASE_URL or the encryption key through an integration. */
export const SECRET_ENV_PREFIX = 'GATEWAY_SECRET_';

export interface SecretMapping {
  /** `key`, or `configurations.<field>`. */
  target_field: string;
  /** `env:GATEWAY_SECRET_…`, or `file:<name>` under the secrets directory. */
  secret_reference: string;
  value_format: 'string' | 'json';
}

/** What is sealed for an integration: its key and its secret configuration fields. */
export interface SealedCredentials {
  key?: string;
  configurations?: Record<string, unknown>;
}

/**
 * Splits configurations into the fields kept in clear and the ones sealed:
 * `secretFields` are the target fields the core and the plugins declare as
 * credentials (`TargetField.credential`).
 */
export function splitConfigurations(
  configurations: Record<string, unknown>,
  secretFields: ReadonlySet<string>,
): { clear: Record<string, unknown>; secret: Record<string, unknown> } {
  const clear: Record<string, unknown> = {};
  const secret: Record<string, unknown> = {};
  for (const [k, value] of Object.entries(configurations)) (secretFields.has(k) ? secret : clear)[k] = value;
  return { clear, secret };
}

/** The masked view of sealed credentials, stored beside them so reads never decrypt. */
export function maskCredentials(creds: SealedCredentials): { key: string | null; configurations: Record<string, string> } {
  const configurations: Record<string, string> = {};
  for (const [k, value] of Object.entries(creds.configurations ?? {})) configurations[k] = maskSecret(typeof value === 'string' ? value : JSON.stringify(value));
  return { key: creds.key === undefined ? null : maskSecret(creds.key), configurations };
}

export function sealCredentials(box: SecretBox, integrationId: string, creds: SealedCredentials): string | null {
  if (creds.key === undefined && Object.keys(creds.configurations ?? {}).length === 0) return null;
  return box.seal(JSON.stringify(creds), integrationId);
}

export function openCredentials(box: SecretBox, integrationId: string, sealed: string | null): SealedCredentials {
  return sealed === null ? {} : (JSON.parse(box.open(sealed, integrationId)) as SealedCredentials);
}

/**
 * Whose secrets a reference may read. Environment variables and the top of the secrets
 * directory are the operator's: only organisation-wide integrations (changeable by
 * organisation-level keys alone) read them. A workspace's integrations read files in the
 * workspace's own folder, `<secretsDir>/workspaces/<workspace slug>/` (slugs never change),
 * so a workspace key can never point another team's or the operator's secret at a host of
 * its choosing (docs/security.md, "Whose secret is whose").
 */
export interface ReferenceScope {
  /** The integration's workspace slug; null for an organisation-wide integration. */
  workspaceSlug: string | null;
}

/** The folder of a workspace's secret files, relative to the secrets directory. */
export function workspaceSecretsFolder(slug: string): string {
  return join('workspaces', slug);
}

/** Reads each mapped secret and writes it into `target` (a provider target). */
export async function applySecretMappings(target: Record<string, unknown>, mappings: readonly SecretMapping[], secretsDir: string, scope: ReferenceScope): Promise<void> {
  for (const m of mappings) {
    const problem = checkReference(m.secret_reference, scope);
    // Stored before references were scoped, or by hand: refused at use as at write.
    if (problem !== null) throw new Error(`secret mapping for ${m.target_field}: ${m.secret_reference.slice(0, 80)} ${problem}`);
    const raw = await readReference(m.secret_reference, secretsDir, scope);
    let value: unknown = raw;
    if (m.value_format === 'json') {
      try {
        value = JSON.parse(raw);
      } catch {
        throw new Error(`secret mapping for ${m.target_field}: the secret is not valid JSON`);
      }
    }
    const field = m.target_field === 'key' ? 'api_key' : m.target_field.slice('configurations.'.length);
    target[field] = value;
  }
}

/** Whether a reference has a valid form for an integration of `scope`; the message says what is wrong, or null. */
export function checkReference(reference: string, scope: ReferenceScope): string | null {
  if (reference.startsWith('env:')) {
    if (scope.workspaceSlug !== null) {
      return `cannot be read by a workspace's integration: environment variables are the operator's, for organisation-wide integrations; use file:<name>, read from the workspace's folder ${workspaceSecretsFolder(scope.workspaceSlug)}/ in the secrets directory`;
    }
    const name = reference.slice(4);
    if (!name.startsWith(SECRET_ENV_PREFIX) || !/^[A-Z0-9_]+$/.test(name)) return `env references must name a variable starting with ${SECRET_ENV_PREFIX} (upper case, digits, _)`;
    return null;
  }
  if (reference.startsWith('file:')) {
    const name = reference.slice(5);
    if (name === '' || isAbsolute(name) || normalize(name).split(sep).includes('..')) return 'file references must be a relative path inside the secrets directory';
    return null;
  }
  return 'must start with env: or file:';
}

async function readReference(reference: string, secretsDir: string, scope: ReferenceScope): Promise<string> {
  if (reference.startsWith('env:')) {
    const value = process.env[reference.slice(4)];
    if (value === undefined) throw new Error(`secret ${reference} is not set`);
    return value;
  }
  const base = scope.workspaceSlug === null ? secretsDir : join(secretsDir, workspaceSecretsFolder(scope.workspaceSlug));
  try {
    return (await readFile(join(base, normalize(reference.slice(5))), 'utf8')).trim();
  } catch {
    throw new Error(`secret ${reference} could not be read from the ${scope.workspaceSlug === null ? 'secrets directory' : "workspace's secrets folder"}`);
  }
}
