import type { SqlClient } from '../../sdk/index.js';
import { lockScim, reconcile, type ReconcileResult, type Scim } from './store.js';

/**
 * Runs a SCIM write (a SCIM request, or a mapping change through the admin
 * API) in one transaction, serialised with the others; `fn` adds to `touched`
 * the users whose memberships it may have changed, which are then reconciled
 * in the same transaction. Afterwards the caches are cleared and the user
 * keys the organisation wants for new members (`user_api_key_auto_create`)
 * are created.
 */
export async function scimWrite<T>(scim: Scim, fn: (tx: SqlClient, touched: Set<string>) => Promise<T>): Promise<T> {
  const settings = await scim.identity.settings();
  let result!: ReconcileResult;
  const value = await scim.db().transaction(async (tx) => {
    await lockScim(tx);
    const touched = new Set<string>();
    const out = await fn(tx, touched);
    result = await reconcile(tx, scim, touched, settings.user_api_key_auto_create);
    return out;
  });
  scim.identity.invalidate();
  for (const k of result.keysToCreate) {
    // As for a member added through the admin API, except that the secret is shown to no one: an admin
    // rotates the key to hand it over (docs/sso.md).
    const keyId = await scim.people.createMemberKey({
      userId: k.userId,
      workspaceId: k.workspaceId,
      role: k.role,
      name: `${k.email} (auto-created)`,
      description: 'Created by SCIM provisioning',
    });
    scim.logger.info({ key_id: keyId, user_id: k.userId, workspace_id: k.workspaceId }, 'SCIM: created a user API key for a new member (user_api_key_auto_create)');
  }
  return value;
}
