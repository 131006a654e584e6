import { type AuthInfo, GatewayError, type RequestContext } from '../../sdk/index.js';
import { TtlCache } from '../../sdk/admin/index.js';
import { hashSecret } from './keys.js';
import type { ApiKeyRow } from './repository.js';
import { capScopes, ROLE_SCOPES } from './scopes.js';
import type { ControlPlane, RotationPolicy } from './service.js';

/** A stored key as the request path needs it, built once per cache fill. */
interface KeyEntry {
  id: string;
  auth: AuthInfo;
  status: string;
  hash: string;
  previousExpiresAt: number | null;
  expiresAt: number | null;
  rotationDueAt: number | null;
  rotationDeadline: number | null;
  workspaceId: string | null;
}

const MAX_CACHED = 10_000;
/** Role of a user key whose owner left the workspace: the key is refused. */
const NO_MEMBER = 'none';

const iso = (ms: number): string => new Date(ms).toISOString();

/**
 * Stored API keys on the request path: each key's digest looked up once
 * through a TTL cache (cleared with every identity cache), then checked
 * against the clock (expiry, rotation, a rotated key's previous secret) on
 * every request.
 */
export class StoredKeys {
  readonly #keys: TtlCache<KeyEntry | null>;

  constructor(private readonly cp: ControlPlane) {
    this.#keys = new TtlCache(cp.cacheTtlMs, MAX_CACHED, cp.now);
  }

  clear(): void {
    this.#keys.clear();
  }

  /**
   * Authenticates a stored API key. Undefined when the secret is not a
   * stored key (another auth tap may know it); throws 401/403 when it is one
   * that may not be used now.
   */
  async authenticate(secret: string, ctx: RequestContext): Promise<AuthInfo | undefined> {
    const hash = hashSecret(secret);
    const entry = await this.#keys.get(hash, async () => {
      const row = await this.cp.repo.apiKeyByHash(hash);
      return row === undefined ? null : this.#keyEntry(row);
    });
    if (entry === null) return undefined;
    const now = this.cp.now();
    if (entry.status !== 'active') throw new GatewayError('unauthorized', 'This API key is disabled.', { param: 'x-gateway-api-key' });
    if (entry.auth.role === NO_MEMBER) throw new GatewayError('unauthorized', 'The user of this API key is no longer a member of its workspace.', { param: 'x-gateway-api-key' });
    if (entry.expiresAt !== null && now >= entry.expiresAt) {
      throw new GatewayError('unauthorized', `This API key expired at ${iso(entry.expiresAt)}.`, { param: 'x-gateway-api-key' });
    }
    if (hash !== entry.hash) {
      // The previous secret of a rotated key: valid only during the transition period.
      if (entry.previousExpiresAt === null || now >= entry.previousExpiresAt) {
        throw new GatewayError('unauthorized', `This API key was rotated; its previous secret stopped working at ${iso(entry.previousExpiresAt ?? 0)}. Use the new secret.`, {
          param: 'x-gateway-api-key',
        });
      }
      ctx.responseHeaders['x-gateway-api-key-expires-at'] = iso(entry.previousExpiresAt);
    }
    if (entry.rotationDueAt !== null && now >= entry.rotationDueAt) {
      if (now >= entry.rotationDeadline!) {
        throw new GatewayError(
          'unauthorized',
          `This API key's rotation was due at ${iso(entry.rotationDueAt)} and its grace period ended at ${iso(entry.rotationDeadline!)}; rotate it (POST /v1/api-keys/${entry.id}/rotate) with another admin key.`,
          { param: 'x-gateway-api-key' },
        );
      }
      ctx.responseHeaders['x-gateway-api-key-rotation-due'] = iso(entry.rotationDeadline!);
    }
    if (entry.workspaceId !== null) {
      const ws = await this.cp.workspace(entry.workspaceId);
      if (ws === null || ws.status !== 'active') throw new GatewayError('forbidden', 'The workspace of this API key is archived.', { param: 'x-gateway-api-key' });
    }
    return entry.auth;
  }

  async #keyEntry(row: ApiKeyRow): Promise<KeyEntry> {
    let role = row.type === 'organisation-service' ? 'admin' : 'manager';
    let scopes = JSON.parse(row.scopes) as string[];
    if (row.type === 'workspace-user' && row.user_id !== null && row.workspace_id !== null) {
      // A user key acts with its owner's current role: never more than the role allows.
      const member = await this.cp.repo.member(row.workspace_id, row.user_id);
      role = member?.role ?? NO_MEMBER;
      scopes = capScopes(scopes, ROLE_SCOPES[role] ?? []);
    }
    const policy = row.rotation_policy === null ? null : (JSON.parse(row.rotation_policy) as RotationPolicy);
    const dueAt = policy?.next_rotation_at ? Date.parse(policy.next_rotation_at) : null;
    return {
      id: row.id,
      auth: Object.freeze({ keyId: row.id, workspaceId: row.workspace_id, scopes: Object.freeze(scopes), role, type: row.type, userId: row.user_id }),
      status: row.status,
      hash: row.key_hash,
      previousExpiresAt: row.previous_expires_at,
      expiresAt: row.expires_at,
      rotationDueAt: dueAt,
      rotationDeadline: dueAt === null ? null : dueAt + (policy?.key_transition_period_ms ?? 30 * 60_000),
      workspaceId: row.workspace_id,
    };
  }
}
