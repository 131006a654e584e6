import { documentMigrations } from '../../../sdk/admin/index.js';

/** Migration namespace of stored guardrails of workspaces and their versions (credentials sealed). */
export const STORED_GUARDRAILS_NAMESPACE = 'guardrails';

/**
 * Stored guardrails of a workspace: a name and a guardrail entry of the config object, versioned like saved
 * configs (each change of the entry is a new version); archived, never deleted, for configs keep naming their
 * ids. A webhook check's headers are sealed (the entry keeps them masked). Both versions adopt the control-plane
 * migrations that made the same changes (4 and 9) before these tables had an owner of their own.
 */
export const STORED_GUARDRAILS_MIGRATIONS = documentMigrations({ table: 'cp_guardrails', versions: 'cp_guardrail_versions', key: 'guardrail_id', archives: true }, 'guardrails', [4, 9]);
