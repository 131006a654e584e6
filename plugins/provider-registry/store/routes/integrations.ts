import * as v from 'valibot';
import { GatewayError, plainObject, type Provider, type Registry, type RequestContext, upstreamUrlProblem } from '../../../../sdk/index.js';
import {
  BY_ID,
  checkStoredUrls,
  canSee,
  canWrite,
  conflict,
  Description,
  docsFor,
  forbidden,
  crudRoutes,
  iso,
  json,
  mapPage,
  Name,
  newId,
  notFound,
  ok,
  PAGE_QUERY,
  pageOf,
  parseBody,
  patchOf,
  randomSlug,
  Slug,
  workspaceFor,
  type AdminRoute,
} from '../../../../sdk/admin/index.js';
import {
  checkReference,
  maskCredentials,
  sealCredentials,
  splitConfigurations,
  openCredentials,
  type ReferenceScope,
  type SealedCredentials,
  type SecretMapping,
} from '../credentials.js';
import type { IntegrationModelRow, IntegrationRow } from '../repository.js';
import type { ProviderStore } from '../service.js';
import { insertProvider } from './providers.js';

const doc = docsFor('Integrations');

const SecretMappingSchema = v.strictObject({
  target_field: v.pipe(v.string(), v.regex(/^(key|configurations\.[a-z][a-z0-9_]*)$/, 'must be "key" or "configurations.<field>"')),
  secret_reference: v.pipe(
    v.string(),
    // The form here; whether the integration's scope may read it, in the handler (checkScopedReferences).
    v.check((s) => checkReference(s, ORGANISATION_WIDE) === null, (issue) => checkReference(String(issue.input), ORGANISATION_WIDE) ?? 'is invalid'),
  ),
  value_format: v.optional(v.picklist(['string', 'json'], 'must be "string" or "json"'), 'string'),
});

const ORGANISATION_WIDE: ReferenceScope = Object.freeze({ workspaceSlug: null });

/** Each mapping's reference must be one the integration's owner may read: a 400 naming the first that is not. */
async function checkScopedReferences(store: ProviderStore, workspaceId: string | null, mappings: readonly SecretMapping[] | null | undefined): Promise<void> {
  if (!mappings?.length || workspaceId === null) return;
  const ws = await store.identity.workspace(workspaceId);
  const scope: ReferenceScope = { workspaceSlug: ws?.slug ?? workspaceId };
  mappings.forEach((m, i) => {
    const problem = checkReference(m.secret_reference, scope);
    if (problem !== null) {
      throw new GatewayError('invalid_request', `Invalid request body: 'secret_mappings[${i}].secret_reference' ${problem}.`, { param: `secret_mappings[${i}].secret_reference` });
    }
  });
}

const Configurations = v.pipe(
  plainObject('must be an object of provider settings'),
  v.check((c) => Object.keys(c).length <= 50, 'holds at most 50 settings'),
  v.check((c) => c.custom_host === undefined || validUrl(c.custom_host), "'custom_host' must be an http or https URL without user info"),
);

const Fields = {
  name: Name,
  description: Description,
  key: v.optional(v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'), v.maxLength(8192))),
  configurations: v.optional(Configurations),
  secret_mappings: v.nullish(v.pipe(v.array(SecretMappingSchema), v.maxLength(20))),
  pricing_adjustments: v.nullish(v.strictObject({ multiplier: v.pipe(v.number('must be a number'), v.gtValue(0, 'must be greater than 0'), v.maxValue(1000)) })),
};

const CreateBody = v.strictObject({
  ...Fields,
  slug: v.optional(Slug),
  ai_provider_id: v.pipe(v.string(), v.minLength(1)),
  workspace_id: v.nullish(v.string()),
  create_default_provider: v.optional(v.boolean(), false),
  default_provider_slug: v.optional(Slug),
});

const UpdateBody = v.strictObject({
  ...Fields,
  name: v.optional(Name),
  status: v.optional(v.picklist(['active', 'archived'], 'must be "active" or "archived"')),
});

const ModelsBody = v.strictObject({
  models: v.pipe(
    v.array(
      v.strictObject({
        slug: v.pipe(v.string(), v.minLength(1, 'must not be empty'), v.maxLength(200)),
        enabled: v.optional(v.boolean(), true),
        configurations: v.optional(
          v.pipe(
            plainObject('must be an object'),
            v.check((c) => Object.keys(c).length > 0, 'must be a non-empty object'),
            v.strictObject({ custom_host: v.pipe(v.string('must be a string'), v.check((s: string) => validUrl(s), 'must be a valid http or https URL without user info')) }),
          ),
        ),
      }),
    ),
    v.maxLength(1000, 'holds at most 1000 models'),
    v.check((list) => new Set(list.map((m) => m.slug)).size === list.length, 'lists a model slug twice'),
  ),
});

const ListQuery = v.strictObject({ ...PAGE_QUERY, workspace_id: v.optional(v.string()) });

/** The same rule as a config's `custom_host`: an absolute http(s) URL with no user info. */
function validUrl(value: unknown): boolean {
  return typeof value === 'string' && upstreamUrlProblem(value) === null;
}

export function presentIntegration(row: IntegrationRow) {
  const masked = JSON.parse(row.masked) as ReturnType<typeof maskCredentials>;
  return {
    id: row.id,
    object: 'integration',
    slug: row.slug,
    name: row.name,
    description: row.description,
    ai_provider_id: row.provider,
    workspace_id: row.workspace_id,
    status: row.status,
    masked_key: masked.key,
    configurations: { ...(JSON.parse(row.configurations) as Record<string, unknown>), ...masked.configurations },
    secret_mappings: json<SecretMapping[]>(row.secret_mappings) ?? [],
    pricing_adjustments: row.pricing_multiplier === null ? null : { multiplier: row.pricing_multiplier },
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

function presentModel(row: IntegrationModelRow) {
  return { object: 'integration-model', slug: row.slug, enabled: row.enabled === 1, configurations: json(row.configurations) ?? {} };
}

/** An integration's models as both model routes answer: by slug, unpaged. */
async function modelList(store: ProviderStore, integrationId: string) {
  const models = await store.repo.integrationModels(integrationId);
  return ok({ object: 'list', total_count: models.length, data: models.map(presentModel) });
}

async function visibleIntegration(ctx: RequestContext, store: ProviderStore, id: string, write: boolean): Promise<IntegrationRow> {
  const row = await store.repo.integration(id);
  if (row === undefined || !canSee(ctx, row.workspace_id)) throw notFound('integration', id);
  if (write && !canWrite(ctx, row.workspace_id)) throw forbidden('This integration is organisation-wide: only an organisation-level key may change it.');
  return row;
}

function openStored(store: ProviderStore, row: IntegrationRow): SealedCredentials {
  try {
    return openCredentials(store.box, row.id, row.secret);
  } catch {
    throw new GatewayError(
      'conflict',
      'The stored credentials of this integration cannot be decrypted with the current encryption key; send both "key" and "configurations" to replace them.',
      { param: 'key' },
    );
  }
}

function checkProvider(providers: Registry<Provider>, name: string): void {
  if (!providers.has(name)) {
    throw new GatewayError('invalid_request', `Invalid request body: 'ai_provider_id' names no loaded provider ("${name.slice(0, 64)}"). Known: ${providers.names().join(', ')}.`, {
      param: 'ai_provider_id',
    });
  }
}

/** Seals the credentials and builds the stored columns for them. */
function credentialColumns(store: ProviderStore, id: string, key: string | undefined, configurations: Record<string, unknown>) {
  const { clear, secret } = splitConfigurations(configurations, store.secretFields);
  const creds: SealedCredentials = {};
  if (key !== undefined) creds.key = key;
  if (Object.keys(secret).length > 0) creds.configurations = secret;
  return { secret: sealCredentials(store.box, id, creds), masked: JSON.stringify(maskCredentials(creds)), configurations: JSON.stringify(clear) };
}

export function integrationRoutes(providers: Registry<Provider>): AdminRoute<ProviderStore>[] {
  return [
    ...crudRoutes<ProviderStore, typeof CreateBody, typeof UpdateBody, typeof ListQuery, v.GenericSchema, IntegrationRow>({
      name: 'integrations',
      path: '/integrations',
      tag: 'Integrations',
      params: BY_ID,
      create: {
        summary: 'Create an integration',
        description: 'Provider credentials, sealed at rest and never shown again (answers mask them). `create_default_provider` also creates a provider slug for it.',
        body: CreateBody,
        async run(ctx, store, body) {
          checkProvider(providers, body.ai_provider_id);
          // Organisation keys create organisation-wide integrations unless they name a workspace.
          const workspaceId = ctx.auth?.workspaceId || body.workspace_id ? await workspaceFor(ctx, store.identity, body.workspace_id) : null;
          await checkScopedReferences(store, workspaceId, body.secret_mappings);
          checkStoredUrls(store.upstream, body.configurations, 'configurations');
          const slug = body.slug ?? `${body.ai_provider_id.replace(/[^a-z0-9-]/g, '')}-${randomSlug(6)}`;
          if ((await store.repo.integration(slug)) !== undefined) throw conflict(`An integration with slug "${slug}" exists.`, 'slug');
          const id = newId();
          const now = store.now();
          const row: IntegrationRow = {
            id,
            organisation_id: await store.identity.organisationId(),
            workspace_id: workspaceId,
            slug,
            name: body.name,
            description: body.description ?? null,
            provider: body.ai_provider_id,
            status: 'active',
            ...credentialColumns(store, id, body.key, body.configurations ?? {}),
            secret_mappings: body.secret_mappings ? JSON.stringify(body.secret_mappings) : null,
            pricing_multiplier: body.pricing_adjustments?.multiplier ?? null,
            created_at: now,
            updated_at: now,
          };
          let provider = null;
          if (body.create_default_provider) {
            // The default provider lives in the integration's workspace, or the caller's (default) one for organisation-wide integrations.
            const providerWorkspace = workspaceId ?? (await workspaceFor(ctx, store.identity, undefined));
            const providerSlug = body.default_provider_slug ?? slug;
            if ((await store.repo.provider(providerWorkspace, providerSlug)) !== undefined) throw conflict(`A provider with slug "@${providerSlug}" exists in the workspace.`, 'default_provider_slug');
            await store.repo.insert('cp_integrations', { ...row });
            provider = await insertProvider(store, { workspaceId: providerWorkspace, slug: providerSlug, name: body.name, integrationId: id, note: null });
          } else {
            await store.repo.insert('cp_integrations', { ...row });
          }
          store.invalidate();
          return { ...presentIntegration(row), ...(provider === null ? {} : { default_provider: provider }) };
        },
      },
      list: {
        summary: 'List integrations',
        query: ListQuery,
        async run(ctx, store, q) {
          const own = ctx.auth?.workspaceId ?? null;
          const workspaceId = own !== null || q.workspace_id !== undefined ? await workspaceFor(ctx, store.identity, q.workspace_id) : null;
          return mapPage(await store.repo.integrations(workspaceId, pageOf(q)), presentIntegration);
        },
      },
      get: { summary: 'Get an integration', run: async (ctx, store, id) => presentIntegration(await visibleIntegration(ctx, store, id, false)) },
      update: {
        summary: 'Update an integration',
        body: UpdateBody,
        find: (ctx, store, id) => visibleIntegration(ctx, store, id, true),
        async run(_ctx, store, _id, body, row) {
          await checkScopedReferences(store, row.workspace_id, body.secret_mappings);
          checkStoredUrls(store.upstream, body.configurations, 'configurations');
          const patch = patchOf(body, ['name', 'description', 'status'], store.now());
          if (body.secret_mappings !== undefined) patch.secret_mappings = body.secret_mappings === null ? null : JSON.stringify(body.secret_mappings);
          if (body.pricing_adjustments !== undefined) patch.pricing_multiplier = body.pricing_adjustments?.multiplier ?? null;
          if (body.key !== undefined || body.configurations !== undefined) {
            // Unsent credentials stay as they were: a new key alone keeps the secret settings, and new settings keep the key.
            // Replacing both needs no decryption: the way out when the encryption key was lost.
            const current = body.key !== undefined && body.configurations !== undefined ? {} : openStored(store, row);
            const configurations = body.configurations ?? { ...(JSON.parse(row.configurations) as Record<string, unknown>), ...(current.configurations ?? {}) };
            Object.assign(patch, credentialColumns(store, row.id, body.key ?? current.key, configurations));
          }
          await store.repo.update('cp_integrations', { id: row.id }, patch);
          store.invalidate();
          return presentIntegration((await store.repo.integration(row.id))!);
        },
      },
      remove: {
        summary: 'Delete an integration',
        async run(ctx, store, id) {
          const row = await visibleIntegration(ctx, store, id, true);
          const users = await store.repo.providersUsingIntegration(row.id);
          if (users > 0) throw conflict(`The integration is used by ${users} provider${users === 1 ? '' : 's'}; delete ${users === 1 ? 'it' : 'them'} first.`, 'id');
          await store.repo.deleteIntegration(row.id);
          store.invalidate();
          return { id: row.id, object: 'integration', deleted: true };
        },
      },
    }),
    {
      name: 'integrations.models.list',
      method: 'GET',
      path: '/integrations/:id/integration-models',
      scope: 'integrations.read',
      doc: doc('List an integration\'s models', { params: BY_ID }),
      async handler(ctx, store) {
        const row = await visibleIntegration(ctx, store, ctx.params!.id!, false);
        return modelList(store, row.id);
      },
    },
    {
      name: 'integrations.models.update',
      method: 'PUT',
      path: '/integrations/:id/integration-models',
      scope: 'integrations.update',
      doc: doc('Set an integration\'s models', { params: BY_ID, body: ModelsBody, description: 'Replaces the list: the models `GET /models` offers for providers of this integration.' }),
      async handler(ctx, store) {
        const row = await visibleIntegration(ctx, store, ctx.params!.id!, true);
        const body = parseBody(ctx, ModelsBody);
        body.models.forEach((m, i) => checkStoredUrls(store.upstream, m.configurations, `models[${i}].configurations`));
        const now = store.now();
        await store.repo.setIntegrationModels(
          row.id,
          body.models.map((m) => ({
            integration_id: row.id,
            slug: m.slug,
            enabled: m.enabled ? 1 : 0,
            configurations: m.configurations === undefined ? null : JSON.stringify(m.configurations),
            created_at: now,
            updated_at: now,
          })),
        );
        store.invalidate();
        return modelList(store, row.id);
      },
    },
  ];
}
