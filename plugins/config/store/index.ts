import { CONFIG_SOURCE, GatewayError, GUARDRAIL_VALIDATOR, type ConfigSource, type PluginAPI, type Target } from '../../../sdk/index.js';
import { checkStoredUrls, DocumentStore, IDENTITY, toRouteDefinitions } from '../../../sdk/admin/index.js';
import type { ConfigParser } from '../parser.js';
import { SAVED_CONFIGS_MIGRATIONS, SAVED_CONFIGS_NAMESPACE } from './migrations.js';
import { configRoutes } from './routes.js';

/** Validates with the inline-config schema; a bad config is a 400 whose param is `config.<path>`. */
function checkConfig(parser: ConfigParser, config: Record<string, unknown>): void {
  const issues = parser.check(config);
  if (issues.length > 0) {
    const path = issues[0]!.path;
    throw new GatewayError('invalid_request', `Invalid request body: ${parser.error(issues).message}`, { param: path === '' ? 'config' : `config.${path}` });
  }
}

/**
 * Saved configs of workspaces, kept beside identity's tables when the control
 * plane is loaded: their admin routes (`/configs`), and `CONFIG_SOURCE`, which
 * finds one by id or slug in a request's workspace (`x-gateway-config: <id>`,
 * a stored prompt's config) through a cache that every admin write clears.
 * Their credentials (the target fields declared `credential`, and the loaded
 * guardrail checks' credential parameters) are sealed at rest, masked in
 * every answer.
 */
export function savedConfigs(api: PluginAPI, parser: ConfigParser): void {
  const store: DocumentStore<Target | null> = new DocumentStore<Target | null>(
    {
      kind: 'config',
      title: 'Saved config',
      idPrefix: 'pc-',
      table: 'cp_configs',
      counter: 'version',
      versions: 'cp_config_versions',
      key: 'config_id',
      field: 'config',
      archives: false,
      listBodies: false,
      namespace: SAVED_CONFIGS_NAMESPACE,
      migrations: SAVED_CONFIGS_MIGRATIONS,
    },
    {
      credentialKeys: () => new Set([...api.targetFields.credentials(), ...(api.tryResolve(GUARDRAIL_VALIDATOR)?.credentialKeys() ?? [])]),
      check(config) {
        checkConfig(parser, config);
        checkStoredUrls(api.upstream, config, 'config');
      },
      build: (row) => (row.status === 'active' ? parser.parse(store.open(row)) : null),
    },
  );
  for (const route of toRouteDefinitions(api.options.basePath, configRoutes, () => store, () => store.identity.adminRoutes)) api.routes.add(route);
  const source: ConfigSource = {
    async find(ctx, id) {
      const workspaceId = await store.identity.requestWorkspace(ctx);
      return workspaceId === null ? undefined : ((await store.lookup(workspaceId, id)) ?? undefined);
    },
    async exists(workspaceId, ref) {
      return (await store.find(workspaceId, ref))?.status === 'active';
    },
  };
  api.provide(CONFIG_SOURCE, source);
  api.onReady(() => store.ready(api.resolve(IDENTITY), api.logger));
}
