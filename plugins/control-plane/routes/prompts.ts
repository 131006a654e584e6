import * as v from 'valibot';
import { GatewayError, MAX_PROMPT_VERSION, parsePromptRef, plainObject, templateTexts, type PromptSelection, type PromptSelector, type RequestContext } from '../../../sdk/index.js';
import { randomSlug } from '../keys.js';
import { MAX_INCLUDED_PARTIALS, selectionOf, type StoredPromptVersion } from '../prompts.js';
import type { PartialRow, PartialVersionRow, PromptRow, PromptVersionRow } from '../repository.js';
import type { ControlPlane } from '../service.js';
import {
  conflict,
  Description,
  iso,
  listResponse,
  Name,
  notFound,
  ok,
  PAGE_QUERY,
  pageOf,
  parseBody,
  parseQuery,
  Slug,
  workspaceFor,
  BY_REF, docsFor,
  type AdminRoute,
} from './http.js';

const doc = docsFor('Prompts');
const VERSIONED_REF = { id: 'Its id or slug, optionally followed by `@latest` or `@<version>`.' };

/** Largest template, as JSON. */
export const MAX_TEMPLATE_CHARS = 256 * 1024;
/** Largest partial. */
export const MAX_PARTIAL_CHARS = 64 * 1024;
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
const PublishBody = v.strictObject({
  version: v.pipe(v.number('is required and must be a version number'), v.integer('must be an integer'), v.minValue(1, 'must be at least 1'), v.maxValue(MAX_PROMPT_VERSION)),
});

const Status = v.picklist(['active', 'archived'], 'must be "active" or "archived"');
const ListQuery = v.strictObject({
  ...PAGE_QUERY,
  workspace_id: v.optional(v.string()),
  status: v.optional(
    v.pipe(
      v.string(),
      v.transform((s) => [...new Set(s.split(',').map((x) => x.trim()))]),
      v.array(Status, 'must be a comma-separated list of "active" and "archived"'),
    ),
  ),
});
const PageQuery = v.strictObject({ ...PAGE_QUERY });

const PartialName = v.pipe(v.string(), v.regex(/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/, 'must be 1 to 64 letters, digits, "_", "." or "-", starting with a letter, digit or "_"'));
const PartialContent = v.pipe(v.string('must be a string'), v.maxLength(MAX_PARTIAL_CHARS, `must be at most ${MAX_PARTIAL_CHARS / 1024} KiB`));
const PartialCreateBody = v.strictObject({ name: PartialName, content: PartialContent, description: Description, workspace_id: v.nullish(v.string()) });
const PartialUpdateBody = v.strictObject({ patch: v.optional(v.boolean('must be true or false')), content: v.optional(PartialContent), description: Description });

// Reading

/** `id`, `id@latest` or `id@N` from the path; anything else after `@` is a 400. */
function refOf(ctx: RequestContext): { ref: string; selector: PromptSelector } {
  const raw = ctx.params!.id!;
  const parsed = parsePromptRef(raw);
  if (parsed === null) {
    throw new GatewayError('invalid_request', `"${raw.slice(0, 128)}" is not a reference: use the id or slug, optionally followed by @latest or @<version number>.`, { param: 'id' });
  }
  return parsed;
}

function versionNumber(row: { latest_version: number; published_version: number }, selector: PromptSelector): number {
  return selector === 'published' ? row.published_version : selector === 'latest' ? row.latest_version : selector;
}

const noVersion = (what: string, ref: string, version: number, latest: number) =>
  new GatewayError('not_found', `${what} "${ref.slice(0, 128)}" has no version ${version} (its latest is ${latest}).`, { param: 'id' });

/** The prompt if the caller may see it: a workspace key's own workspace, any for organisation-level keys by id (by slug in the workspace they act in). */
async function visiblePrompt(ctx: RequestContext, cp: ControlPlane, ref: string): Promise<PromptRow> {
  const own = ctx.auth?.workspaceId ?? null;
  const row = (await cp.repo.prompt(own, ref)) ?? (own === null ? await cp.repo.prompt(await workspaceFor(ctx, cp, undefined), ref) : undefined);
  if (row === undefined) throw notFound('prompt', ref);
  return row;
}

async function visiblePartial(ctx: RequestContext, cp: ControlPlane, ref: string): Promise<PartialRow> {
  const own = ctx.auth?.workspaceId ?? null;
  const row = (await cp.repo.partial(own, ref)) ?? (own === null ? await cp.repo.partial(await workspaceFor(ctx, cp, undefined), ref) : undefined);
  if (row === undefined) throw notFound('prompt partial', ref);
  return row;
}

function writable(row: { status: string; id: string }, what: string): void {
  if (row.status !== 'active') throw conflict(`${what} "${row.id}" is archived: it can no longer change.`, 'id');
}

// Presenting

function presentPrompt(row: PromptRow, version?: PromptVersionRow) {
  const body = version === undefined ? null : (JSON.parse(version.body) as StoredPromptVersion);
  return {
    id: row.id,
    object: 'prompt',
    slug: row.slug,
    name: row.name,
    workspace_id: row.workspace_id,
    status: row.status,
    ...(version === undefined ? {} : { version: version.version }),
    latest_version: row.latest_version,
    published_version: row.published_version,
    ...(body === null ? {} : versionFieldsOf(body, version!)),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    archived_at: iso(row.archived_at),
  };
}

function versionFieldsOf(body: StoredPromptVersion, version: PromptVersionRow) {
  return {
    template: body.template,
    ...selectionOf(body),
    variables: body.variables ?? {},
    description: body.description,
    partials: JSON.parse(version.partials) as string[],
    version_created_at: iso(version.created_at),
  };
}

function presentPromptVersion(row: PromptRow, version: PromptVersionRow) {
  const body = JSON.parse(version.body) as StoredPromptVersion;
  return { object: 'prompt-version', prompt_id: row.id, version: version.version, published: version.version === row.published_version, ...versionFieldsOf(body, version) };
}

function presentPartial(row: PartialRow, version?: PartialVersionRow) {
  return {
    id: row.id,
    object: 'prompt-partial',
    name: row.name,
    workspace_id: row.workspace_id,
    status: row.status,
    ...(version === undefined ? {} : { version: version.version }),
    latest_version: row.latest_version,
    published_version: row.published_version,
    ...(version === undefined ? {} : partialVersionFields(version)),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    archived_at: iso(row.archived_at),
  };
}

function partialVersionFields(version: PartialVersionRow) {
  return { content: version.content, description: version.description, partials: JSON.parse(version.partials) as string[], version_created_at: iso(version.created_at) };
}

// Checking what is saved

/** Parses each text with the template language: a syntax error is a 400 at its path; returns the partials the texts include. */
function includesOf(cp: ControlPlane, texts: ReadonlyArray<{ text: string; param: string }>): string[] {
  const templates = cp.promptTemplates;
  const names = new Set<string>();
  for (const { text, param } of texts) {
    const checked = templates.check(text);
    if (checked.error !== null) throw new GatewayError('invalid_request', `Invalid request body: '${param}' is not a valid template: ${checked.error}`, { param });
    for (const name of checked.partials) names.add(name);
  }
  return [...names];
}

/**
 * Every partial `includes` names must be an active partial of the workspace, and all of them together
 * at most {@link MAX_INCLUDED_PARTIALS}. `self` (a partial being saved) must not be among them, directly
 * or through the others: a partial that includes itself never ends.
 */
async function checkIncludes(cp: ControlPlane, workspaceId: string, includes: readonly string[], param: string, self: string | null = null): Promise<void> {
  if (self !== null && includes.includes(self)) throw new GatewayError('invalid_request', `Invalid request body: '${param}' includes the partial "${self}" itself.`, { param });
  const found = await cp.includedPartials(workspaceId, includes);
  for (const [name, partial] of found) {
    if (partial === null) {
      throw new GatewayError('invalid_request', `Invalid request body: '${param}' includes the partial "${name.slice(0, 64)}", which this workspace does not have (create it with POST /v1/prompts/partials).`, { param });
    }
  }
  if (self !== null && found.has(self)) throw new GatewayError('invalid_request', `Invalid request body: '${param}' includes the partial "${self}" again through the partials it includes.`, { param });
  if (found.size >= MAX_INCLUDED_PARTIALS) throw new GatewayError('invalid_request', `Invalid request body: '${param}' includes more than ${MAX_INCLUDED_PARTIALS - 1} partials in all.`, { param });
}

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
async function checkVersion(cp: ControlPlane, workspaceId: string, version: StoredPromptVersion): Promise<string[]> {
  const includes = includesOf(cp, templateTexts(version.template).map((t) => ({ text: t.text, param: `template.${t.path}` })));
  await checkIncludes(cp, workspaceId, includes, 'template');
  // Saved configs are the config plugin's (CONFIG_SOURCE): without it, a workspace has none.
  if (version.config !== undefined && (await cp.configs?.exists?.(workspaceId, version.config)) !== true) throw notFound('saved config', version.config, 'config');
  return includes;
}

/** Inserts a new version of a prompt and returns it. */
async function addPromptVersion(cp: ControlPlane, row: PromptRow, version: StoredPromptVersion, includes: string[], name: string | undefined): Promise<PromptVersionRow> {
  const now = cp.now();
  let added: PromptVersionRow | null = null;
  await cp.repo.db().transaction(async (tx) => {
    added = { prompt_id: row.id, version: await cp.repo.nextVersion('cp_prompts', row.id, now, tx), body: JSON.stringify(version), partials: JSON.stringify(includes), created_at: now };
    await cp.repo.insert('cp_prompt_versions', { ...added }, tx);
    if (name !== undefined) await cp.repo.update('cp_prompts', { id: row.id }, { name }, tx);
  });
  cp.invalidate();
  return added!;
}

async function archive(cp: ControlPlane, table: 'cp_prompts' | 'cp_prompt_partials', id: string): Promise<void> {
  const now = cp.now();
  await cp.repo.update(table, { id }, { status: 'archived', archived_at: now, updated_at: now });
  cp.invalidate();
}

const partialRoutes: AdminRoute[] = [
  {
    name: 'prompts.partials.create',
    method: 'POST',
    path: '/prompts/partials',
    scope: 'prompts.create',
    doc: doc('Create a prompt partial', { body: PartialCreateBody }),
    async handler(ctx, cp) {
      const body = parseBody(ctx, PartialCreateBody);
      const workspaceId = await workspaceFor(ctx, cp, body.workspace_id);
      const includes = includesOf(cp, [{ text: body.content, param: 'content' }]);
      await checkIncludes(cp, workspaceId, includes, 'content', body.name);
      if ((await cp.repo.activePartial(workspaceId, body.name)) !== undefined) throw conflict(`A prompt partial named "${body.name}" exists in this workspace.`, 'name');
      const now = cp.now();
      const row: PartialRow = { id: `ppt-${randomSlug(16)}`, workspace_id: workspaceId, name: body.name, status: 'active', latest_version: 1, published_version: 1, created_at: now, updated_at: now, archived_at: null };
      const version: PartialVersionRow = { partial_id: row.id, version: 1, content: body.content, description: body.description ?? null, partials: JSON.stringify(includes), created_at: now };
      await cp.repo.db().transaction(async (tx) => {
        await cp.repo.insert('cp_prompt_partials', { ...row }, tx);
        await cp.repo.insert('cp_prompt_partial_versions', { ...version }, tx);
      });
      cp.invalidate();
      return ok(presentPartial(row, version));
    },
  },
  {
    name: 'prompts.partials.list',
    method: 'GET',
    path: '/prompts/partials',
    scope: 'prompts.read',
    doc: doc('List prompt partials', { query: ListQuery }),
    async handler(ctx, cp) {
      const q = parseQuery(ctx, ListQuery);
      const workspaceId = await workspaceFor(ctx, cp, q.workspace_id);
      return listResponse(await cp.repo.partials(workspaceId, q.status ?? ['active'], pageOf(q)), (row) => presentPartial(row));
    },
  },
  {
    name: 'prompts.partials.get',
    method: 'GET',
    path: '/prompts/partials/:id',
    scope: 'prompts.read',
    doc: doc('Get a prompt partial', { params: BY_REF }),
    async handler(ctx, cp) {
      const { ref, selector } = refOf(ctx);
      const row = await visiblePartial(ctx, cp, ref);
      const number = versionNumber(row, selector);
      const version = number > row.latest_version ? undefined : await cp.repo.partialVersion(row.id, number);
      if (version === undefined) throw noVersion('Prompt partial', ref, number, row.latest_version);
      return ok(presentPartial(row, version));
    },
  },
  {
    name: 'prompts.partials.versions',
    method: 'GET',
    path: '/prompts/partials/:id/versions',
    scope: 'prompts.read',
    doc: doc('List a partial\'s versions', { params: BY_REF, query: PageQuery }),
    async handler(ctx, cp) {
      const row = await visiblePartial(ctx, cp, ctx.params!.id!);
      const page = await cp.repo.partialVersions(row.id, pageOf(parseQuery(ctx, PageQuery)));
      return listResponse(page, (version) => ({
        object: 'prompt-partial-version',
        partial_id: row.id,
        version: version.version,
        published: version.version === row.published_version,
        ...partialVersionFields(version),
      }));
    },
  },
  {
    name: 'prompts.partials.update',
    method: 'PUT',
    path: '/prompts/partials/:id',
    scope: 'prompts.update',
    doc: doc('Update a prompt partial', { params: BY_REF, body: PartialUpdateBody, description: 'New content makes a new version (`patch: true`: without publishing it).' }),
    async handler(ctx, cp) {
      const row = await visiblePartial(ctx, cp, ctx.params!.id!);
      writable(row, 'Prompt partial');
      const body = parseBody(ctx, PartialUpdateBody);
      const latest = body.patch === true ? await cp.repo.partialVersion(row.id, row.latest_version) : undefined;
      const content = body.content ?? latest?.content;
      if (content === undefined) throw new GatewayError('invalid_request', "Invalid request body: 'content' is required (send patch: true to keep the latest version's).", { param: 'content' });
      const description = body.description !== undefined ? body.description : (latest?.description ?? null);
      const includes = includesOf(cp, [{ text: content, param: 'content' }]);
      await checkIncludes(cp, row.workspace_id, includes, 'content', row.name);
      const now = cp.now();
      let added: PartialVersionRow | null = null;
      await cp.repo.db().transaction(async (tx) => {
        added = { partial_id: row.id, version: await cp.repo.nextVersion('cp_prompt_partials', row.id, now, tx), content, description: description ?? null, partials: JSON.stringify(includes), created_at: now };
        await cp.repo.insert('cp_prompt_partial_versions', { ...added }, tx);
      });
      cp.invalidate();
      return ok(presentPartial((await cp.repo.partial(null, row.id))!, added!));
    },
  },
  {
    name: 'prompts.partials.publish',
    method: 'POST',
    path: '/prompts/partials/:id/publish',
    scope: 'prompts.publish',
    doc: doc('Publish a version of a partial', { params: BY_REF, body: PublishBody }),
    async handler(ctx, cp) {
      const row = await visiblePartial(ctx, cp, ctx.params!.id!);
      writable(row, 'Prompt partial');
      const { version: number } = parseBody(ctx, PublishBody);
      const version = number > row.latest_version ? undefined : await cp.repo.partialVersion(row.id, number);
      if (version === undefined) throw new GatewayError('not_found', `Prompt partial "${row.name}" has no version ${number} (its latest is ${row.latest_version}).`, { param: 'version' });
      // Publishing changes what every prompt that includes it renders: a version that would include itself is refused here too.
      await checkIncludes(cp, row.workspace_id, JSON.parse(version.partials) as string[], 'version', row.name);
      await cp.repo.update('cp_prompt_partials', { id: row.id }, { published_version: number, updated_at: cp.now() });
      cp.invalidate();
      return ok(presentPartial((await cp.repo.partial(null, row.id))!, version));
    },
  },
  {
    name: 'prompts.partials.delete',
    method: 'DELETE',
    path: '/prompts/partials/:id',
    scope: 'prompts.delete',
    doc: doc('Archive a prompt partial', { params: BY_REF }),
    async handler(ctx, cp) {
      const row = await visiblePartial(ctx, cp, ctx.params!.id!);
      if (row.status === 'active') await archive(cp, 'cp_prompt_partials', row.id);
      const archived = (await cp.repo.partial(null, row.id))!;
      return ok(presentPartial(archived, await cp.repo.partialVersion(row.id, archived.published_version)));
    },
  },
];

const promptRoutesOnly: AdminRoute[] = [
  {
    name: 'prompts.create',
    method: 'POST',
    path: '/prompts',
    scope: 'prompts.create',
    doc: doc('Create a stored prompt', { body: CreateBody, description: 'A template (chat messages with Mustache variables and partials), the model and provider it is sent to, and its parameters: version 1, published.' }),
    async handler(ctx, cp) {
      const body = asSent(ctx, parseBody(ctx, CreateBody));
      if (body.slug === PARTIALS_SEGMENT) throw new GatewayError('invalid_request', `Invalid request body: 'slug' "${PARTIALS_SEGMENT}" is reserved (it is the path of the partials routes).`, { param: 'slug' });
      const workspaceId = await workspaceFor(ctx, cp, body.workspace_id);
      const version = composeVersion(body, null);
      const includes = await checkVersion(cp, workspaceId, version);
      const slug = body.slug ?? randomSlug(10);
      if ((await cp.repo.prompt(workspaceId, slug)) !== undefined) throw conflict(`A prompt with slug "${slug}" exists in this workspace.`, 'slug');
      const now = cp.now();
      const row: PromptRow = { id: `pp-${randomSlug(16)}`, workspace_id: workspaceId, slug, name: body.name, status: 'active', latest_version: 1, published_version: 1, created_at: now, updated_at: now, archived_at: null };
      const first: PromptVersionRow = { prompt_id: row.id, version: 1, body: JSON.stringify(version), partials: JSON.stringify(includes), created_at: now };
      await cp.repo.db().transaction(async (tx) => {
        await cp.repo.insert('cp_prompts', { ...row }, tx);
        await cp.repo.insert('cp_prompt_versions', { ...first }, tx);
      });
      cp.invalidate();
      return ok(presentPrompt(row, first));
    },
  },
  {
    name: 'prompts.list',
    method: 'GET',
    path: '/prompts',
    scope: 'prompts.read',
    doc: doc('List stored prompts', { query: ListQuery }),
    async handler(ctx, cp) {
      const q = parseQuery(ctx, ListQuery);
      const workspaceId = await workspaceFor(ctx, cp, q.workspace_id);
      return listResponse(await cp.repo.prompts(workspaceId, q.status ?? ['active'], pageOf(q)), (row) => presentPrompt(row));
    },
  },
  {
    name: 'prompts.get',
    method: 'GET',
    path: '/prompts/:id',
    scope: 'prompts.read',
    doc: doc('Get a stored prompt', { params: VERSIONED_REF, description: 'The published version, or the one `@latest` or `@N` selects.' }),
    async handler(ctx, cp) {
      const { ref, selector } = refOf(ctx);
      const row = await visiblePrompt(ctx, cp, ref);
      const number = versionNumber(row, selector);
      const version = number > row.latest_version ? undefined : await cp.repo.promptVersion(row.id, number);
      if (version === undefined) throw noVersion('Prompt', ref, number, row.latest_version);
      return ok(presentPrompt(row, version));
    },
  },
  {
    name: 'prompts.versions',
    method: 'GET',
    path: '/prompts/:id/versions',
    scope: 'prompts.read',
    doc: doc('List a prompt\'s versions', { params: BY_REF, query: PageQuery }),
    async handler(ctx, cp) {
      const row = await visiblePrompt(ctx, cp, ctx.params!.id!);
      const page = await cp.repo.promptVersions(row.id, pageOf(parseQuery(ctx, PageQuery)));
      return listResponse(page, (version) => presentPromptVersion(row, version));
    },
  },
  {
    name: 'prompts.update',
    method: 'PUT',
    path: '/prompts/:id',
    scope: 'prompts.update',
    doc: doc('Update a stored prompt', { params: BY_REF, body: UpdateBody, description: 'Changed version fields make a new version (`patch: true`: without publishing it).' }),
    async handler(ctx, cp) {
      const row = await visiblePrompt(ctx, cp, ctx.params!.id!);
      writable(row, 'Prompt');
      const body = asSent(ctx, parseBody(ctx, UpdateBody));
      let latest: StoredPromptVersion | null = null;
      if (body.patch === true) {
        const stored = await cp.repo.promptVersion(row.id, row.latest_version);
        latest = JSON.parse(stored!.body) as StoredPromptVersion;
      }
      const version = composeVersion(body, latest);
      const includes = await checkVersion(cp, row.workspace_id, version);
      const added = await addPromptVersion(cp, row, version, includes, body.name);
      return ok(presentPrompt((await cp.repo.prompt(null, row.id))!, added));
    },
  },
  {
    name: 'prompts.publish',
    method: 'POST',
    path: '/prompts/:id/publish',
    scope: 'prompts.publish',
    doc: doc('Publish a version of a prompt', { params: BY_REF, body: PublishBody }),
    async handler(ctx, cp) {
      const row = await visiblePrompt(ctx, cp, ctx.params!.id!);
      writable(row, 'Prompt');
      const { version: number } = parseBody(ctx, PublishBody);
      const version = number > row.latest_version ? undefined : await cp.repo.promptVersion(row.id, number);
      if (version === undefined) throw new GatewayError('not_found', `Prompt "${row.slug}" has no version ${number} (its latest is ${row.latest_version}).`, { param: 'version' });
      await cp.repo.update('cp_prompts', { id: row.id }, { published_version: number, updated_at: cp.now() });
      cp.invalidate();
      return ok(presentPrompt((await cp.repo.prompt(null, row.id))!, version));
    },
  },
  {
    name: 'prompts.delete',
    method: 'DELETE',
    path: '/prompts/:id',
    scope: 'prompts.delete',
    doc: doc('Archive a stored prompt', { params: BY_REF }),
    async handler(ctx, cp) {
      const row = await visiblePrompt(ctx, cp, ctx.params!.id!);
      if (row.status === 'active') await archive(cp, 'cp_prompts', row.id);
      const archived = (await cp.repo.prompt(null, row.id))!;
      return ok(presentPrompt(archived, await cp.repo.promptVersion(row.id, archived.published_version)));
    },
  },
];

/**
 * Stored prompts and partials (docs/prompts.md). The partials' routes come first: `/prompts/partials/:id`
 * and `/prompts/:id/versions` have as many segments, and the slug `partials` is reserved for them.
 */
export const promptRoutes: AdminRoute[] = [...partialRoutes, ...promptRoutesOnly];
