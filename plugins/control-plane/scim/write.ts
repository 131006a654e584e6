import type { Logger, SqlClient } from '../../../sdk/index.js';
import { insertKey, settleRotationPolicy } from '../api-keys.js';
import { defaultScopes } from '../scopes.js';
import type { ControlPlane } from '../service.js';
import { lockScim, reconcile, type ReconcileResult } from './store.js';

/**
 * Runs a SCIM write (a SCIM request, or a mapping change through the admin
 * API) in one transaction, serialised with the others; `fn` adds to `touched`
 * the users whose memberships it may have changed, which are then reconciled
 * in the same transaction. Afterwards the caches are cleared and the user
 * keys the organisation wants for new members (`user_api_key_auto_create`)
 * are created.
 */
export async function scimWrite<T>(cp: ControlPlane, logger: Logger, fn: (tx: SqlClient, touched: Set<string>) => Promise<T>): Promise<T> {
  const settings = await cp.settings();
  let result!: ReconcileResult;
  const value = await cp.repo.db().transaction(async (tx) => {
    await lockScim(tx);
    const touched = new Set<string>();
    const out = await fn(tx, touched);
    result = await reconcile(tx, cp, touched, settings.user_api_key_auto_create);
    return out;
  });
  cp.invalidate();
  for (const k of result.keysToCreate) {
    // As for a member added through the admin API, except that the secret is shown to no one: an admin
    // rotates the key to hand it over (docs/sso.md).
    const { row } = await insertKey(cp, {
      type: 'workspace-user',
      name: `${k.email} (auto-created)`,
      description: 'Created by SCIM provisioning',
      workspaceId: k.workspaceId,
      userId: k.userId,
      scopes: defaultScopes('workspace-user', k.role),
      rotationPolicy: settleRotationPolicy(undefined, 'workspace-user', settings, cp.now(), null),
      expiresAt: null,
      metadata: null,
    });
    logger.info({ key_id: row.id, user_id: k.userId, workspace_id: k.workspaceId }, 'SCIM: created a user API key for a new member (user_api_key_auto_create)');
  }
  return value;
}
