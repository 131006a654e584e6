import * as v from 'valibot';
import { bundledPricingData, entriesOf, jsonResponse } from '../../../../sdk/index.js';
import { docsFor, PAGE_QUERY, pageOf, parseQuery, workspaceFor, type AdminRoute } from '../../../../sdk/admin/index.js';
import type { ProviderStore } from '../service.js';

const doc = docsFor('Models');

const ListQuery = v.strictObject({
  ...PAGE_QUERY,
  workspace_id: v.optional(v.string()),
  provider: v.optional(v.string()),
  provider_slug: v.optional(v.string()),
  search: v.optional(v.pipe(v.string(), v.maxLength(200))),
});

let catalog: Map<string, string[]> | null = null;

/** Models the bundled price list knows per provider (with its aliases), for integrations that list none of their own. */
function catalogModels(provider: string): string[] {
  if (catalog === null) {
    const data = bundledPricingData();
    const idsOf = (list: string) => (data.providers[list] === undefined ? [] : entriesOf(data.providers[list]!).map((e) => e.id).filter((m) => m !== '*'));
    catalog = new Map();
    for (const name of Object.keys(data.providers)) {
      const lists = [name, ...((data.aliases ?? {})[name] ?? [])];
      catalog.set(name, [...new Set(lists.flatMap(idsOf))].sort());
    }
    for (const [alias, lists] of Object.entries(data.aliases ?? {})) {
      if (catalog.has(alias)) continue;
      catalog.set(alias, [...new Set(lists.flatMap(idsOf))].sort());
    }
  }
  return catalog.get(provider) ?? [];
}

/**
 * `GET /models`: the models a workspace can call, one per provider slug and
 * model, as `@slug/model`. An integration's enabled models when it lists
 * some, otherwise the models the price list knows for its provider. Every
 * workspace role may call it; `total_count` is the filtered total. A request
 * that selects a provider (`x-gateway-provider`, `x-gateway-virtual-key`,
 * `x-gateway-config`) gets that provider's own list instead.
 */
export const modelRoutes: AdminRoute<ProviderStore>[] = [
  {
    name: 'models.list',
    method: 'GET',
    path: '/models',
    scope: null,
    doc: doc('List the models a workspace can call', { query: ListQuery, selectsProvider: true, description: 'One per provider slug and model, as `@slug/model`: an integration\'s enabled models, else those the price list knows for its provider. With a provider selected (`x-gateway-provider`, `x-gateway-virtual-key` or `x-gateway-config`), the provider\'s own list, through the generic proxy.' }),
    // With a provider selected, `GET /models` is the provider's own list, through the generic proxy.
    deferToFallback: (ctx) => ctx.header('x-gateway-provider') !== undefined || ctx.header('x-gateway-virtual-key') !== undefined || ctx.header('x-gateway-config') !== undefined,
    async handler(ctx, store) {
      const q = parseQuery(ctx, ListQuery);
      const workspaceId = await workspaceFor(ctx, store.identity, q.workspace_id);
      const items: Array<Record<string, unknown>> = [];
      const search = q.search?.toLowerCase();
      for (const p of await store.repo.providersWithIntegrations(workspaceId)) {
        if (q.provider !== undefined && p.integration_provider !== q.provider) continue;
        if (q.provider_slug !== undefined && p.slug !== q.provider_slug.replace(/^@/, '')) continue;
        const configured = await store.repo.integrationModels(p.integration_id);
        const models = configured.length > 0 ? configured.filter((m) => m.enabled === 1).map((m) => m.slug) : catalogModels(p.integration_provider);
        const source = configured.length > 0 ? 'integration' : 'catalog';
        for (const model of models) {
          if (search !== undefined && !model.toLowerCase().includes(search)) continue;
          items.push({ id: `@${p.slug}/${model}`, object: 'model', slug: model, provider_slug: p.slug, ai_provider_id: p.integration_provider, integration_id: p.integration_id, source });
        }
      }
      const page = pageOf(q);
      return jsonResponse(200, { object: 'list', total_count: items.length, data: items.slice(page.current * page.size, (page.current + 1) * page.size) });
    },
  },
];
