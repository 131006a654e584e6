import type { Logger } from '../../sdk/index.js';
import { hashSecret, maskKey, newId, newSecret } from './keys.js';
import { DEFAULT_SETTINGS, type ControlPlane } from './service.js';

/**
 * First start: creates the organisation, its `default` workspace and the
 * first admin key (organisation-service, every scope). The key is
 * GATEWAY_BOOTSTRAP_KEY when set; otherwise it is generated and printed once.
 * Runs in one transaction (serialised across instances on PostgreSQL), so two
 * instances starting together create one organisation.
 */
export async function bootstrap(cp: ControlPlane, options: { bootstrapKey: string | undefined; announce: (text: string) => void; logger: Logger }): Promise<void> {
  const created = await cp.repo.db().transaction(async (tx) => {
    if (tx.dialect === 'postgres') await tx.get('SELECT pg_advisory_xact_lock(hashtext(?))', ['control-plane:bootstrap']);
    if ((await cp.repo.organisation(tx)) !== undefined) return null;
    const now = cp.now();
    const orgId = newId();
    await cp.repo.insert('cp_organisations', { id: orgId, name: 'Default organisation', settings: JSON.stringify(DEFAULT_SETTINGS), created_at: now, updated_at: now }, tx);
    await cp.repo.insert(
      'cp_workspaces',
      { id: newId(), organisation_id: orgId, slug: 'default', name: 'Default workspace', description: null, status: 'active', metadata: null, created_at: now, updated_at: now, archived_at: null },
      tx,
    );
    const secret = options.bootstrapKey ?? newSecret();
    await cp.repo.insert(
      'cp_api_keys',
      {
        id: newId(),
        organisation_id: orgId,
        workspace_id: null,
        user_id: null,
        type: 'organisation-service',
        name: 'Bootstrap admin key',
        description: options.bootstrapKey === undefined ? 'Generated at first start' : 'From GATEWAY_BOOTSTRAP_KEY',
        scopes: JSON.stringify(['*']),
        status: 'active',
        key_hash: hashSecret(secret),
        key_mask: maskKey(secret),
        previous_hash: null,
        previous_expires_at: null,
        rotation_policy: null,
        last_rotated_at: null,
        expires_at: null,
        metadata: null,
        created_at: now,
        updated_at: now,
      },
      tx,
    );
    return { secret, generated: options.bootstrapKey === undefined };
  });
  cp.invalidate();
  if (created === null) {
    if (options.bootstrapKey !== undefined && (await cp.repo.apiKeyByHash(hashSecret(options.bootstrapKey))) === undefined) {
      options.logger.warn('GATEWAY_BOOTSTRAP_KEY is ignored: the control plane was set up before (it only sets the first admin key)');
    }
    return;
  }
  options.logger.info({ generated: created.generated }, 'control plane initialised: organisation, default workspace and first admin key created');
  if (created.generated) {
    options.announce(
      '\nThe control plane was empty, so a first admin API key was generated.\n' +
        'It is shown only now; store it safely:\n\n' +
        `  x-gateway-api-key: ${created.secret}\n\n` +
        'Use it to create workspaces, integrations and more keys (docs/admin-api.md).\n' +
        'To choose this key yourself on a fresh install, set GATEWAY_BOOTSTRAP_KEY before the first start.\n\n',
    );
  }
}
