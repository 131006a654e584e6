import * as v from 'valibot';
import { GatewayError, gatewayPackageVersion, type GatewayPlugin, parseOptions, type RequestContext, staticAnswer, staticFile, type StaticFile } from '../../sdk/index.js';
import { buildDocument } from './document.js';
import { createConverter } from './json-schema.js';
import { loadViewer, swaggerUiDir, type Viewer, viewerCsp } from './viewer.js';

export const PLUGIN_NAME = 'openapi';
export { buildDocument, pathTemplate, type DocumentInfo, type DocumentInput } from './document.js';
export { createConverter } from './json-schema.js';

/** A `servers` entry: a path on the document's origin, or an absolute http(s) URL. */
function serverUrl(value: string): boolean {
  if (value.startsWith('/')) return !value.startsWith('//');
  return /^https?:\/\//.test(value) && URL.canParse(value);
}

const Path = v.pipe(v.string(), v.regex(/^(\/[A-Za-z0-9._~-]+)+$/, 'must be a path such as /docs'));

const OptionsSchema = v.strictObject({
  /** Where the document is served. Default `{basePath}/openapi.json` (`/v1/openapi.json`). */
  path: v.optional(Path),
  /** Where the viewer is served (its files under it), or false for none. Default `/docs`. */
  docsPath: v.optional(v.union([Path, v.literal(false)], 'must be a path such as /docs, or false'), '/docs'),
  /**
   * Serve the document without a key (default true: it lists routes and fields, no secret). With
   * false it takes a gateway key or a signed-in session, like the admin API; the viewer's own files
   * stay public either way (they are swagger-ui's).
   */
  public: v.optional(v.boolean(), true),
  /** The document's `info.title`. */
  title: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(200)), 'AI gateway'),
  /** The document's `info.version`. Default: the gateway's package version. */
  version: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(50))),
  /** The document's `servers` URLs. Default `['/']`: the origin the document was fetched from. */
  servers: v.optional(v.pipe(v.array(v.pipe(v.string(), v.check(serverUrl, 'must be a path from / or an http(s) URL'))), v.minLength(1)), ['/']),
});

export type OpenApiOptions = v.InferInput<typeof OptionsSchema>;

const DESCRIPTION = [
  'One OpenAI-compatible API in front of many providers, and the admin API of its control plane.',
  'Authenticate with a gateway API key in `x-gateway-api-key` (the "Authorize" button). The inference routes also take the provider to call',
  '(`x-gateway-provider` with the provider key as `Authorization: Bearer …`, or a config in `x-gateway-config`).',
  'Errors come in one envelope, `{"error":{"message","type","param","code"}}`, unless a route says otherwise.',
  'Generated from the schemas the routes validate with; see docs/openapi.md for what is approximated.',
].join(' ');

/**
 * The OpenAPI 3.1 document of every route the gateway serves, at
 * `/v1/openapi.json`, and a viewer for it (swagger-ui, served from the
 * installed `swagger-ui-dist` package: no CDN, works offline) at `/docs`.
 * The document is built from the route table (`api.routes.list()`) and each
 * route's `doc` on its first request, after every plugin has registered its
 * routes, and kept as bytes with an ETag. See docs/openapi.md.
 */
export function openapi(options: OpenApiOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  return {
    name: PLUGIN_NAME,
    state: [],
    apply(api) {
      const documentPath = opts.path ?? `${api.options.basePath}/openapi.json`;
      let document: StaticFile | null = null;
      // Built once, on first use: routes are all known by then (the table is frozen after boot) and a gateway nobody asks for its
      // document pays nothing at start.
      const documentFile = (): StaticFile => {
        if (document !== null) return document;
        const convert = createConverter((err) => api.logger.warn({ err }, 'openapi: a schema could not be converted; it is documented as any value'));
        const built = buildDocument({
          info: { title: opts.title, version: opts.version ?? gatewayPackageVersion(), description: DESCRIPTION, servers: opts.servers },
          routes: api.routes.list(),
          errorCodes: api.errorCodes,
          convert,
        });
        document = staticFile(Buffer.from(JSON.stringify(built)), 'application/json');
        return document;
      };

      api.routes.add({
        name: 'openapi.document',
        method: 'GET',
        path: documentPath,
        kind: 'handler',
        body: 'none',
        auth: !opts.public,
        doc: {
          summary: 'This OpenAPI document',
          description: 'The OpenAPI 3.1 document of every route this gateway serves, generated from the schemas the routes validate with.',
          tags: ['Reference'],
          public: opts.public,
        },
        handler: (ctx) => staticAnswer(ctx, documentFile(), opts.public ? 'no-cache' : 'private, no-cache', {}),
      });

      const docsPath = opts.docsPath;
      if (docsPath === false) return;
      const csp = viewerCsp(opts.servers.filter((s) => s !== '/' && /^https?:/.test(s)).map((s) => new URL(s).origin));
      let viewer: Promise<Viewer> | null = null;
      const loaded = (): Promise<Viewer> => {
        viewer ??= loadViewer({ dir: swaggerUiDir(), base: docsPath, documentUrl: documentPath, title: opts.title });
        // A failed read (the package missing) is tried again on the next request, not remembered.
        viewer.catch(() => (viewer = null));
        return viewer;
      };
      const pageHeaders = { 'content-security-policy': csp, 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer', 'x-frame-options': 'DENY' };
      const page = async (ctx: RequestContext) => staticAnswer(ctx, (await loaded()).page, 'no-cache', pageHeaders);
      api.routes.add({
        name: 'openapi.viewer',
        method: 'GET',
        path: docsPath,
        kind: 'handler',
        body: 'none',
        auth: false,
        doc: { summary: 'The API reference viewer', description: 'An HTML page rendering this document with swagger-ui; paste a key in "Authorize" to try routes.', tags: ['Reference'], responseTypes: ['text/html'] },
        handler: page,
      });
      api.routes.add({
        name: 'openapi.viewer.file',
        method: 'GET',
        path: `${docsPath}/:file`,
        kind: 'handler',
        body: 'none',
        auth: false,
        doc: {
          summary: 'A file of the viewer',
          description: "swagger-ui's stylesheet, script and icons (from the installed swagger-ui-dist package), and the viewer's start-up script. Their URLs carry a content hash, so they are cached for a year.",
          tags: ['Reference'],
          params: { file: '`swagger-ui.css`, `swagger-ui-bundle.js`, `init.js`, `favicon-32x32.png` or `favicon-16x16.png`.' },
          responseTypes: ['text/css', 'text/javascript', 'image/png'],
        },
        async handler(ctx) {
          const name = ctx.params!.file!;
          const file = (await loaded()).files.get(name);
          if (file === undefined) throw new GatewayError('not_found', `No viewer file "${name.slice(0, 64)}".`, { param: 'file' });
          return staticAnswer(ctx, file, 'public, max-age=31536000, immutable', { 'x-content-type-options': 'nosniff' });
        },
      });
    },
  };
}

export default openapi;
