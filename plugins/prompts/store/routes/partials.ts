import * as v from 'valibot';
import { GatewayError } from '../../../../sdk/index.js';
import { BY_REF, conflict, crudRoutes, Description, iso, workspaceFor, type AdminRoute } from '../../../../sdk/admin/index.js';
import type { PartialRow, PartialVersionRow } from '../repository.js';
import type { PromptStore } from '../service.js';
import { createFirst, updateOp, versionedOps, withPublish, type Kind } from './shared.js';

/** Largest partial. */
export const MAX_PARTIAL_CHARS = 64 * 1024;

const PartialName = v.pipe(v.string(), v.regex(/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/, 'must be 1 to 64 letters, digits, "_", "." or "-", starting with a letter, digit or "_"'));
const PartialContent = v.pipe(v.string('must be a string'), v.maxLength(MAX_PARTIAL_CHARS, `must be at most ${MAX_PARTIAL_CHARS / 1024} KiB`));
const PartialCreateBody = v.strictObject({ name: PartialName, content: PartialContent, description: Description, workspace_id: v.nullish(v.string()) });
const PartialUpdateBody = v.strictObject({ patch: v.optional(v.boolean('must be true or false')), content: v.optional(PartialContent), description: Description });

const PARTIALS: Kind<PartialRow, PartialVersionRow> = {
  rows: (store) => store.repo.partials,
  noun: 'prompt partial',
  title: 'Prompt partial',
  object: 'prompt-partial',
  own: (row) => ({ name: row.name }),
  label: (row) => row.name,
  fields: (version) => ({ content: version.content, description: version.description, partials: JSON.parse(version.partials) as string[], version_created_at: iso(version.created_at) }),
  // Publishing changes what every prompt that includes it renders: a version that would include itself is refused here too.
  beforePublish: (store, row, version) => store.checkIncludes(row.workspace_id, JSON.parse(version.partials) as string[], 'version', row.name),
};

/** The partials `content` includes, checked against the workspace (`self`: the partial's own name). */
async function includesOfContent(store: PromptStore, workspaceId: string, content: string, self: string): Promise<string[]> {
  const includes = store.includesOf([{ text: content, param: 'content' }]);
  await store.checkIncludes(workspaceId, includes, 'content', self);
  return includes;
}

/**
 * Stored partials (`{{> name}}`, docs/prompts.md). Listed before the prompts' routes: `/prompts/partials/:id`
 * and `/prompts/:id/versions` have as many segments, and the slug `partials` is reserved for them.
 */
export const partialRoutes: AdminRoute<PromptStore>[] = withPublish(
  crudRoutes({
    name: 'prompts.partials',
    path: '/prompts/partials',
    tag: 'Prompts',
    scope: 'prompts',
    create: {
      summary: 'Create a prompt partial',
      body: PartialCreateBody,
      async run(ctx, store, body) {
        const workspaceId = await workspaceFor(ctx, store.identity, body.workspace_id);
        const includes = await includesOfContent(store, workspaceId, body.content, body.name);
        if ((await store.repo.partials.active(workspaceId, body.name)) !== undefined) throw conflict(`A prompt partial named "${body.name}" exists in this workspace.`, 'name');
        return createFirst(PARTIALS, store, 'ppt', workspaceId, { name: body.name }, { content: body.content, description: body.description ?? null, partials: JSON.stringify(includes) });
      },
    },
    ...versionedOps(PARTIALS, { list: 'List prompt partials', get: 'Get a prompt partial', versions: "List a partial's versions", remove: 'Archive a prompt partial' }),
    update: updateOp(
      PARTIALS,
      { summary: 'Update a prompt partial', description: 'New content makes a new version (`patch: true`: without publishing it).', body: PartialUpdateBody },
      async (_ctx, store, row, body, latest) => {
        const content = body.content ?? latest?.content;
        if (content === undefined) throw new GatewayError('invalid_request', "Invalid request body: 'content' is required (send patch: true to keep the latest version's).", { param: 'content' });
        const description = body.description !== undefined ? body.description : (latest?.description ?? null);
        const includes = await includesOfContent(store, row.workspace_id, content, row.name);
        return { columns: { content, description: description ?? null, partials: JSON.stringify(includes) } };
      },
    ),
  }),
  PARTIALS,
  { name: 'prompts.partials.publish', path: '/prompts/partials/:id/publish', summary: 'Publish a version of a partial', params: BY_REF },
);
