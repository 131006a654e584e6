import { documentMigrations } from '../../../sdk/admin/index.js';

/** Migration namespace of saved configs of workspaces and their versions (credentials sealed). */
export const SAVED_CONFIGS_NAMESPACE = 'configs';

/**
 * Saved configs of workspaces and their versions (credentials sealed: the body keeps each credential masked).
 * Both versions adopt the control-plane migrations that made the same changes (1 and 9) before these tables
 * had an owner of their own: a database from before keeps its tables and rows, a new one gets them from here.
 */
export const SAVED_CONFIGS_MIGRATIONS = documentMigrations({ table: 'cp_configs', versions: 'cp_config_versions', key: 'config_id', archives: false }, 'configs', [1, 9]);
