import * as v from 'valibot';
import { plainObject, type Target } from '../../../sdk/index.js';
import { Name, PAGE_QUERY, Slug, documentRoutes } from '../../../sdk/admin/index.js';

const CreateBody = v.strictObject({ name: Name, slug: v.optional(Slug), config: plainObject('must be a config object'), workspace_id: v.nullish(v.string()) });
const UpdateBody = v.strictObject({
  name: v.optional(Name),
  config: v.optional(plainObject('must be a config object')),
  status: v.optional(v.picklist(['active', 'archived'], 'must be "active" or "archived"')),
});
const ListQuery = v.strictObject({ ...PAGE_QUERY, workspace_id: v.optional(v.string()) });

/** The admin routes of saved configs (`/configs`, scopes `configs.*`). */
export const configRoutes = documentRoutes<Target | null, v.InferOutput<typeof CreateBody>, v.InferOutput<typeof UpdateBody>, v.InferOutput<typeof ListQuery>>({
  name: 'configs',
  path: '/configs',
  tag: 'Configs',
  create: { summary: 'Save a config', description: '`config` is a config object, checked as an inline `x-gateway-config` is; requests name it by id.', body: CreateBody },
  list: { summary: 'List saved configs', query: ListQuery },
  get: { summary: 'Get a saved config' },
  versions: { summary: "List a config's versions" },
  update: { summary: 'Update a saved config', description: 'A new `config` makes a new version.', body: UpdateBody },
  remove: { summary: 'Delete a saved config' },
});
