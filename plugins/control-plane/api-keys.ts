import * as v from 'valibot';
import { GatewayError } from '../../sdk/index.js';
import { addPeriod, hashSecret, maskKey, MIN_TRANSITION_MS, newId, newSecret, type RotationPeriod } from './keys.js';
import type { ApiKeyRow } from './repository.js';
import { isKnownScope } from './scopes.js';
import type { ControlPlane, OrgSettings, RotationPolicy } from './service.js';

export const KEY_TYPES = ['organisation-service', 'workspace-service', 'workspace-user'] as const;
export type KeyType = (typeof KEY_TYPES)[number];

const IsoTime = v.pipe(v.string(), v.check((s) => /^\d{4}-\d{2}-\d{2}T/.test(s) && Number.isFinite(Date.parse(s)), 'must be an ISO 8601 date-time'));

export const RotationPolicySchema = v.strictObject({
  rotation_period: v.optional(v.nullable(v.picklist(['weekly', 'monthly'], 'must be "weekly" or "monthly"'))),
  next_rotation_at: v.optional(v.nullable(IsoTime)),
  key_transition_period_ms: v.optional(
    v.nullable(v.pipe(v.number('must be a number of milliseconds'), v.integer('must be an integer'), v.minValue(MIN_TRANSITION_MS, `must be at least ${MIN_TRANSITION_MS} (30 minutes)`))),
  ),
});
export type RotationPolicyInput = v.InferOutput<typeof RotationPolicySchema>;

export const Scopes = v.pipe(
  v.array(v.string('must be strings'), 'must be an array of scopes'),
  v.maxLength(100, 'holds at most 100 scopes'),
  v.check((list) => list.every(isKnownScope), 'names an unknown scope (see docs/admin-api.md for the list)'),
);

export const ExpiresAt = v.nullish(IsoTime);

/**
 * The rotation policy to store: the request's, with the organisation's
 * enforced period for user keys (an explicit different period is a 400),
 * and `next_rotation_at` one period from now when a period is set without it.
 */
export function settleRotationPolicy(
  input: RotationPolicyInput | null | undefined,
  type: string,
  settings: OrgSettings,
  now: number,
  previous: RotationPolicy | null,
): RotationPolicy | null {
  const enforced = type === 'workspace-user' ? settings.user_api_key_rotation_period : null;
  if (input === null && enforced === null) return null;
  const merged: RotationPolicy = {
    rotation_period: input?.rotation_period !== undefined ? input.rotation_period : (previous?.rotation_period ?? null),
    next_rotation_at: input?.next_rotation_at !== undefined ? input.next_rotation_at : (previous?.next_rotation_at ?? null),
    key_transition_period_ms: input?.key_transition_period_ms !== undefined ? input.key_transition_period_ms : (previous?.key_transition_period_ms ?? null),
  };
  if (enforced !== null) {
    if (input?.rotation_period !== undefined && input.rotation_period !== enforced) {
      throw new GatewayError(
        'invalid_request',
        `Invalid request body: 'rotation_policy.rotation_period' must be "${enforced}": the organisation enforces that rotation period for user API keys (user_api_key_rotation_period).`,
        { param: 'rotation_policy.rotation_period' },
      );
    }
    merged.rotation_period = enforced;
  }
  if (merged.rotation_period !== null && merged.next_rotation_at === null) merged.next_rotation_at = new Date(addPeriod(now, merged.rotation_period)).toISOString();
  if (merged.rotation_period === null && merged.next_rotation_at === null && merged.key_transition_period_ms === null) return null;
  return merged;
}

export interface NewKey {
  type: KeyType;
  name: string;
  description: string | null;
  workspaceId: string | null;
  userId: string | null;
  scopes: readonly string[];
  rotationPolicy: RotationPolicy | null;
  expiresAt: number | null;
  metadata: Record<string, string> | null;
}

/** Stores a new key and returns its row and its secret (shown once). */
export async function insertKey(cp: ControlPlane, key: NewKey, secret = newSecret()): Promise<{ row: ApiKeyRow; secret: string }> {
  const org = await cp.repo.organisation();
  const now = cp.now();
  const row: ApiKeyRow = {
    id: newId(),
    organisation_id: org!.id,
    workspace_id: key.workspaceId,
    user_id: key.userId,
    type: key.type,
    name: key.name,
    description: key.description,
    scopes: JSON.stringify(key.scopes),
    status: 'active',
    key_hash: hashSecret(secret),
    key_mask: maskKey(secret),
    previous_hash: null,
    previous_expires_at: null,
    rotation_policy: key.rotationPolicy === null ? null : JSON.stringify(key.rotationPolicy),
    last_rotated_at: null,
    expires_at: key.expiresAt,
    metadata: key.metadata === null ? null : JSON.stringify(key.metadata),
    created_at: now,
    updated_at: now,
  };
  await cp.repo.insert('cp_api_keys', { ...row });
  cp.invalidate();
  return { row, secret };
}

/**
 * Gives a key a new secret. The old one keeps working for the transition
 * period (at least 30 minutes); a secret still in transition from an earlier
 * rotation stops at once. The next due rotation moves one period on.
 */
export async function rotateKey(cp: ControlPlane, row: ApiKeyRow, transitionMs: number | undefined): Promise<{ row: ApiKeyRow; secret: string }> {
  const now = cp.now();
  const policy = row.rotation_policy === null ? null : (JSON.parse(row.rotation_policy) as RotationPolicy);
  const transition = transitionMs ?? policy?.key_transition_period_ms ?? MIN_TRANSITION_MS;
  if (policy !== null && policy.rotation_period !== null) policy.next_rotation_at = new Date(addPeriod(now, policy.rotation_period as RotationPeriod)).toISOString();
  else if (policy !== null) policy.next_rotation_at = null;
  const secret = newSecret();
  const patch = {
    key_hash: hashSecret(secret),
    key_mask: maskKey(secret),
    previous_hash: row.key_hash,
    previous_expires_at: now + transition,
    last_rotated_at: now,
    rotation_policy: policy === null ? null : JSON.stringify(policy),
    updated_at: now,
  };
  await cp.repo.update('cp_api_keys', { id: row.id }, patch);
  cp.invalidate();
  return { row: { ...row, ...patch }, secret };
}

export function presentKey(row: ApiKeyRow, now: number, secret?: string) {
  return {
    id: row.id,
    object: 'api-key',
    type: row.type,
    name: row.name,
    description: row.description,
    workspace_id: row.workspace_id,
    user_id: row.user_id,
    scopes: JSON.parse(row.scopes) as string[],
    status: row.status,
    masked_key: row.key_mask,
    ...(secret === undefined ? {} : { key: secret }),
    rotation_policy: row.rotation_policy === null ? null : (JSON.parse(row.rotation_policy) as RotationPolicy),
    last_rotated_at: row.last_rotated_at === null ? null : new Date(row.last_rotated_at).toISOString(),
    previous_key_expires_at: row.previous_expires_at !== null && row.previous_expires_at > now ? new Date(row.previous_expires_at).toISOString() : null,
    expires_at: row.expires_at === null ? null : new Date(row.expires_at).toISOString(),
    metadata: row.metadata === null ? {} : (JSON.parse(row.metadata) as Record<string, string>),
    created_at: new Date(row.created_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
  };
}
