import * as v from 'valibot';
import { authenticatorsOf, GatewayError, type GatewayPlugin, type GatewayResponse, jsonResponse, parseOptions, type PluginAPI, type RequestContext, staticAnswer } from '../../sdk/index.js';
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

/** The answer of the sign-in probe (`GET {path}/session`). */
export const SessionAnswerSchema = v.strictObject({
  object: v.literal('dashboard.session'),
  signed_in: v.boolean(),
  reason: v.nullable(v.string()),
});
type SessionAnswer = v.InferOutput<typeof SessionAnswerSchema>;

/**
 * Whether the request carries a credential the gateway accepts (a key, a session cookie), found by the
 * same auth taps, in the same order, as any route's: accepted, or refused with its reason. Never an
 * error status: a browser logs every 4xx answer to a page's own fetch as a console error, and the page
 * asks this before anyone signed in. A 403 (a credential that is valid but may not do this, such as a
 * session of someone in no workspace yet) counts as signed in: whoami, which the page asks next, says what it may do.
 */
async function probe(api: PluginAPI, ctx: RequestContext): Promise<SessionAnswer> {
  // A build without auth accepts every request, as the pipeline does (a delegated tap, such as realtime client secrets, is no auth).
  if (authenticatorsOf(api.hooks).length === 0) return { object: 'dashboard.session', signed_in: true, reason: null };
  try {
    const auth = await api.hooks.auth.promise(ctx);
    if (auth === undefined) {
      const key = ctx.header('x-gateway-api-key');
      return { object: 'dashboard.session', signed_in: false, reason: key === undefined || key === '' ? null : 'This key is not accepted by the gateway.' };
    }
    // So the log names who probed.
    ctx.auth = auth;
    return { object: 'dashboard.session', signed_in: true, reason: null };
  } catch (err) {
    if (!(err instanceof GatewayError) || (err.status !== 401 && err.status !== 403)) throw err;
    return { object: 'dashboard.session', signed_in: err.status === 403, reason: err.message };
  }
}

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
    state: [],
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
      // The page's sign-in probe: always a 200 (see probe), so signing in leaves nothing in the browser's console.
      api.routes.add({
        ...page,
        name: 'dashboard.session',
        path: `${base}/session`,
        doc: {
          ...doc,
          summary: "Whether the caller is signed in (the dashboard's sign-in probe)",
          description:
            'Runs the gateway\'s auth on the request (`x-gateway-api-key`, or a single sign-on session cookie) and answers 200 either way: `signed_in`, and the reason when refused. ' +
            'The dashboard asks this before `GET /v1/auth/whoami`, which answers 401 to a caller that is not signed in.',
          response: SessionAnswerSchema,
          responseTypes: ['application/json'],
        },
        handler: async (ctx) => jsonResponse(200, await probe(api, ctx), { 'cache-control': 'no-store', ...SECURITY_HEADERS }),
      });
    },
  };
}

export default dashboard;
