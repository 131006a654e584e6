import * as v from 'valibot';
import { GatewayError, plainObject, templateTexts, type PromptSelection, type RequestContext } from '../../../../sdk/index.js';
import { BY_REF, conflict, crudRoutes, Description, iso, Name, notFound, randomSlug, Slug, workspaceFor, type AdminRoute } from '../../../../sdk/admin/index.js';
import { selectionOf, type StoredPromptVersion } from '../releases.js';
import type { PromptRow, PromptVersionRow } from '../repository.js';
import type { PromptStore } from '../service.js';
import { createFirst, updateOp, versionedOps, withPublish, type Kind } from './shared.js';

const VERSIONED_REF = { id: 'Its id or slug, optionally followed by `@latest` or `@<version>`.' };

/** Largest template, as JSON. */
export const MAX_TEMPLATE_CHARS = 256 * 1024;
/** Most variables a version declares. */
const MAX_VARIABLES = 200;
/** The path segment of the partials routes: no prompt may take it as its slug. */
const PARTIALS_SEGMENT = 'partials';

const ROLES = ['system', 'developer', 'user', 'assistant', 'tool', 'function'] as const;
const SELECTION_FIELDS = ['provider', 'virtual_key', 'config'] as const;

const TemplateMessage = v.looseObject({
  role: v.picklist(ROLES, `must be one of ${ROLES.join(', ')}`),
  content: v.optional(v.nullable(v.union([v.string(), v.array(plainObject('must be a content part object'))], 'must be a string or an array of content parts'))),
});

/** A chat completion body; its message texts may hold variables. How a request is answered (`stream`) is the request's choice. */
const Template = v.pipe(
  plainObject('must be a chat completion body: a JSON object with model and messages'),
  v.looseObject({
    model: v.pipe(v.string('is required and must be a string'), v.minLength(1, 'must not be empty')),
    messages: v.pipe(v.array(TemplateMessage, 'is required and must be an array of messages'), v.minLength(1, 'must have at least 1 message')),
    stream: v.optional(v.never('is chosen by each request, not saved in a template')),
    stream_options: v.optional(v.never('is chosen by each request, not saved in a template')),
    variables: v.optional(v.never('are declared next to template, not inside it')),
  }),
  v.check((t) => JSON.stringify(t).length <= MAX_TEMPLATE_CHARS, `must be at most ${MAX_TEMPLATE_CHARS / 1024} KiB as JSON`),
);

const VariableName = v.pipe(v.string(), v.regex(/^[A-Za-z_][A-Za-z0-9_-]{0,63}$/, 'names must be 1 to 64 letters, digits, "_" or "-", starting with a letter or "_"'));
const Variables = v.nullish(
  v.pipe(
    plainObject('must be an object of variable names to { "default": … }'),
    v.check((o) => Object.keys(o).length <= MAX_VARIABLES, `must declare at most ${MAX_VARIABLES} variables`),
    v.record(VariableName, v.strictObject({ default: v.optional(v.unknown()) }, 'must be an object with only "default"')),
  ),
);
const ProviderSlug = v.pipe(v.string(), v.regex(/^@[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'must be a provider slug: "@" and the slug, e.g. "@openai-prod"'));
const Reference = v.pipe(v.string(), v.minLength(1, 'must not be empty'), v.maxLength(128, 'must be at most 128 characters'));

const versionFields = {
  template: v.optional(Template),
  provider: v.optional(ProviderSlug),
  virtual_key: v.optional(Reference),
  config: v.optional(Reference),
  variables: Variables,
  description: Description,
};
const CreateBody = v.strictObject({ name: Name, slug: v.optional(Slug), workspace_id: v.nullish(v.string()), ...versionFields, template: Template });
const UpdateBody = v.strictObject({ patch: v.optional(v.boolean('must be true or false')), name: v.optional(Name), ...versionFields });

const PROMPTS: Kind<PromptRow, PromptVersionRow> = {
  rows: (store) => store.repo.prompts,
  noun: 'prompt',
  title: 'Prompt',
  object: 'prompt',
  own: (row) => ({ slug: row.slug, name: row.name }),
  label: (row) => row.slug,
  fields(version) {
    const body = JSON.parse(version.body) as StoredPromptVersion;
    return {
      template: body.template,
      ...selectionOf(body),
      variables: body.variables ?? {},
      description: body.description,
      partials: JSON.parse(version.partials) as string[],
      version_created_at: iso(version.created_at),
    };
  },
};

// Checking what is saved

type VersionInput = v.InferOutput<typeof UpdateBody>;

/** The template as the caller wrote it: valibot's output puts the keys it knows first, and a saved template keeps its author's order. */
function asSent<T extends { template?: Record<string, unknown> }>(ctx: RequestContext, body: T): T {
  if (body.template !== undefined) body.template = (ctx.body as { template: Record<string, unknown> }).template;
  return body;
}

/**
 * The version a create or update makes. With `latest` (a patch), fields the body leaves out are the
 * latest version's; a `template` given replaces the whole template, and any one of provider,
 * virtual_key and config replaces the selection.
 */
function composeVersion(body: VersionInput, latest: StoredPromptVersion | null): StoredPromptVersion {
  const template = body.template ?? latest?.template;
  if (template === undefined) throw new GatewayError('invalid_request', "Invalid request body: 'template' is required (send patch: true to keep the latest version's).", { param: 'template' });
  const given = SELECTION_FIELDS.filter((f) => body[f] !== undefined);
  if (given.length > 1) throw new GatewayError('invalid_request', `Invalid request body: '${given[1]}' cannot be set with '${given[0]}': a version sends its requests through one of provider, virtual_key and config.`, { param: given[1]! });
  let selection: PromptSelection;
  if (given.length === 1) selection = { [given[0]!]: body[given[0]!] };
  else if (latest !== null) selection = selectionOf(latest);
  else throw new GatewayError('invalid_request', "Invalid request body: one of 'provider' (a slug such as @openai-prod), 'virtual_key' or 'config' (a saved config id) is required.", { param: 'provider' });
  return {
    template,
    ...selectionOf(selection),
    variables: body.variables !== undefined ? body.variables : (latest?.variables ?? null),
    description: body.description !== undefined ? body.description : (latest?.description ?? null),
  };
}

/** Checks a version against the workspace (its template, its partials, its saved config) and returns the partials it includes. */
async function checkVersion(store: PromptStore, workspaceId: string, version: StoredPromptVersion): Promise<string[]> {
  const includes = store.includesOf(templateTexts(version.template).map((t) => ({ text: t.text, param: `template.${t.path}` })));
  await store.checkIncludes(workspaceId, includes, 'template');
  if (version.config !== undefined && !(await store.hasConfig(workspaceId, version.config))) throw notFound('saved config', version.config, 'config');
  return includes;
}

/** A version's columns. */
const columns = (version: StoredPromptVersion, includes: string[]) => ({ body: JSON.stringify(version), partials: JSON.stringify(includes) });

/** Stored prompts (docs/prompts.md). */
export const promptRoutes: AdminRoute<PromptStore>[] = withPublish(
  crudRoutes({
    name: 'prompts',
    path: '/prompts',
    tag: 'Prompts',
    create: {
      summary: 'Create a stored prompt',
      description: 'A template (chat messages with Mustache variables and partials), the model and provider it is sent to, and its parameters: version 1, published.',
      body: CreateBody,
      async run(ctx, store, parsed) {
        const body = asSent(ctx, parsed);
        if (body.slug === PARTIALS_SEGMENT) throw new GatewayError('invalid_request', `Invalid request body: 'slug' "${PARTIALS_SEGMENT}" is reserved (it is the path of the partials routes).`, { param: 'slug' });
        const workspaceId = await workspaceFor(ctx, store.identity, body.workspace_id);
        const version = composeVersion(body, null);
        const includes = await checkVersion(store, workspaceId, version);
        const slug = body.slug ?? randomSlug(10);
        if ((await store.repo.prompts.find(workspaceId, slug)) !== undefined) throw conflict(`A prompt with slug "${slug}" exists in this workspace.`, 'slug');
        return createFirst(PROMPTS, store, 'pp', workspaceId, { slug, name: body.name }, columns(version, includes));
      },
    },
    ...versionedOps(PROMPTS, {
      list: 'List stored prompts',
      get: 'Get a stored prompt',
      getParams: VERSIONED_REF,
      getDescription: 'The published version, or the one `@latest` or `@N` selects.',
      versions: "List a prompt's versions",
      remove: 'Archive a stored prompt',
    }),
    update: updateOp(
      PROMPTS,
      { summary: 'Update a stored prompt', description: 'Changed version fields make a new version (`patch: true`: without publishing it).', body: UpdateBody },
      async (ctx, store, row, parsed, latest) => {
        const body = asSent(ctx, parsed);
        const version = composeVersion(body, latest === undefined ? null : (JSON.parse(latest.body) as StoredPromptVersion));
        const includes = await checkVersion(store, row.workspace_id, version);
        return { columns: columns(version, includes), patch: body.name === undefined ? {} : { name: body.name } };
      },
    ),
  }),
  PROMPTS,
  { name: 'prompts.publish', path: '/prompts/:id/publish', summary: 'Publish a version of a prompt', params: BY_REF },
);
