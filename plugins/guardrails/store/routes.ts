import * as v from 'valibot';
import { Name, PAGE_QUERY, Slug, documentRoutes } from '../../../sdk/admin/index.js';
import type { StoredGuardrail } from './index.js';

/*
 * Stored guardrails: a name and a guardrail entry of the config object, kept
 * in a workspace and named from configs by id (or slug). The body is flat,
 * as the spec writes an entry: `{ "name", "deny", "default.pii": { … } }`:
 * what is not one of the stored guardrail's own fields (the schemas below) is
 * the entry. Their scopes are the configs' (see docs/admin-api.md: a
 * guardrail is a part of a config stored for reuse).
 */

/** At most this many ids in `?ids=`. */
const MAX_IDS = 100;

const CreateMeta = v.object({ name: Name, slug: v.optional(Slug), workspace_id: v.nullish(v.string()) });
const UpdateMeta = v.object({ name: v.optional(Name), status: v.optional(v.picklist(['active', 'archived'], 'must be "active" or "archived"')) });
const ListQuery = v.strictObject({
  ...PAGE_QUERY,
  workspace_id: v.optional(v.string()),
  status: v.optional(v.picklist(['active', 'archived'], 'must be "active" or "archived"')),
  ids: v.optional(
    v.pipe(
      v.string(),
      v.description(`Only these guardrails: up to ${MAX_IDS} ids, comma-separated.`),
      v.transform((s) => [...new Set(s.split(',').map((x) => x.trim()))]),
      v.check((ids) => ids.every((id) => id !== '' && id.length <= 64), 'must be a comma-separated list of guardrail ids'),
      v.maxLength(MAX_IDS, `names at most ${MAX_IDS} ids`),
    ),
  ),
});

/** The admin routes of stored guardrails (`/guardrails`, scopes `configs.*`). */
export const guardrailRoutes = documentRoutes<StoredGuardrail, v.InferOutput<typeof CreateMeta>, v.InferOutput<typeof UpdateMeta>, v.InferOutput<typeof ListQuery>>({
  name: 'guardrails',
  path: '/guardrails',
  tag: 'Guardrails',
  scope: 'configs',
  create: {
    summary: 'Store a guardrail',
    description:
      "Besides `name`, `slug` and `workspace_id`, the body is a guardrail entry as in a config's `input_guardrails` (`deny`, `async`, and checks with their parameters), checked with every check's schema. Configs name it by id or slug.",
    body: CreateMeta,
  },
  list: { summary: 'List stored guardrails', query: ListQuery },
  get: { summary: 'Get a stored guardrail' },
  versions: { summary: "List a guardrail's versions" },
  update: { summary: 'Update a stored guardrail', description: 'Besides `name` and `status`, the fields of a new guardrail entry, which makes a new version.', body: UpdateMeta },
  remove: { summary: 'Archive a stored guardrail' },
});
