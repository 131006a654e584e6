import * as v from 'valibot';
import { GatewayError, type GatewayPlugin, type GatewayResponse, parseOptions, type RequestContext, staticAnswer } from '../../sdk/index.js';
import { loadAssets, type Asset } from './assets.js';
import { DEFAULT_OUT_DIR } from './build.js';

export const PLUGIN_NAME = 'dashboard';

const OptionsSchema = v.strictObject({
  /** Where the built dashboard is (`npm run build` writes `dist/dashboard`). */
  dir: v.optional(v.pipe(v.string(), v.minLength(1))),
  /** The path it is served under. Default `/dashboard`. */
  path: v.optional(v.pipe(v.string(), v.regex(/^\/[a-z0-9/_-]*[a-z0-9_-]$/, 'must be a path such as /dashboard')), '/dashboard'),
});

export type DashboardOptions = v.InferInput<typeof OptionsSchema>;

/**
 * Everything the page may load comes from this gateway; no inline script or
 * style element, no frame may hold it (clickjacking), and it may call only
 * this origin's API.
 */
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const SECURITY_HEADERS = {
  'content-security-policy': CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

/**
 * The web dashboard at `/dashboard`: static files built from `plugins/dashboard/ui`
 * (Preact and uPlot, bundled by esbuild at `npm run build`), held in memory and
 * served without a key. The page signs in with an API key or a single sign-on
 * session and then calls the gateway's own routes, so it shows only what that
 * key's scopes allow. See docs/dashboard.md.
 */
export function dashboard(options: DashboardOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  const dir = opts.dir ?? DEFAULT_OUT_DIR;
  return {
    name: PLUGIN_NAME,
    apply(api) {
      let assets: Map<string, Asset> | null = null;
      api.onReady(async () => {
        try {
          assets = await loadAssets(dir);
        } catch (err) {
          assets = null;
          api.logger.warn({ dir, code: (err as NodeJS.ErrnoException).code }, 'dashboard: no built dashboard found; run `npm run build` (the page answers 503 until then)');
          return;
        }
        if (!assets.has('index.html')) {
          api.logger.warn({ dir }, 'dashboard: the build has no index.html; run `npm run build`');
          assets = null;
        }
      });

      const serve = (ctx: RequestContext, path: string): GatewayResponse => {
        if (assets === null) throw new GatewayError('service_unavailable', 'The dashboard is not built: run `npm run build`.', { param: null });
        const asset = assets.get(path);
        if (asset === undefined) throw new GatewayError('not_found', `No dashboard file "${path.slice(0, 128)}".`, { param: null });
        return staticAnswer(ctx, asset, asset.immutable ? 'public, max-age=31536000, immutable' : 'no-cache', SECURITY_HEADERS);
      };

      const base = opts.path;
      const doc = { summary: 'The web dashboard', tags: ['Dashboard'], public: true, responseTypes: ['text/html'] };
      const page = { method: 'GET' as const, kind: 'handler' as const, auth: false, body: 'none' as const, doc };
      // `/dashboard` redirects to `/dashboard/`, so the page's relative asset paths resolve under it.
      api.routes.add({ ...page, name: 'dashboard.redirect', path: base, handler: () => ({ status: 308, headers: { location: `${base}/` }, body: '', observers: null }) });
      api.routes.add({ ...page, name: 'dashboard.index', path: `${base}/`, handler: (ctx) => serve(ctx, 'index.html') });
      api.routes.add({
        ...page,
        name: 'dashboard.asset',
        path: `${base}/assets/:file`,
        doc: { ...doc, summary: 'A file of the web dashboard (content-hashed, cached for a year)', params: { file: 'The file name, as index.html names it.' }, responseTypes: ['text/javascript', 'text/css'] },
        handler: (ctx) => serve(ctx, `assets/${ctx.params!.file!}`),
      });
    },
  };
}

export default dashboard;
