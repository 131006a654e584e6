import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { staticFile, type StaticFile } from '../../sdk/index.js';

/** The viewer: its page and every file the page loads, by the name in the URL. */
export interface Viewer {
  page: StaticFile;
  /** Their URLs carry the content hash (`?v=`), so a page always asks for the files it was written against. */
  files: ReadonlyMap<string, StaticFile>;
}

/**
 * The files served from swagger-ui-dist, by name, with their media types.
 * Only these: the package's folder holds more (source maps, the ES bundles,
 * its example start-up script pointing at a public demo document), none of
 * which the page needs.
 */
const SWAGGER_UI_FILES: Readonly<Record<string, string>> = Object.freeze({
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
  'favicon-16x16.png': 'image/png',
});

/** The name our start-up script is served under, beside swagger-ui's files. */
export const INIT_FILE = 'init.js';

/**
 * Starts swagger-ui on the document the page names. A file, not an inline
 * script, so the page's CSP can allow scripts from this origin only. The
 * online validator badge is off (it would send the document to a third
 * party); an API key pasted in "Authorize" lives as long as the tab (not
 * persisted).
 */
const INIT_SCRIPT = `'use strict';
// Reads the document's URL from the page and renders it; see plugins/openapi in the gateway.
(function start() {
  var root = document.getElementById('swagger-ui');
  window.ui = window.SwaggerUIBundle({
    url: root.getAttribute('data-openapi-url'),
    domNode: root,
    layout: 'BaseLayout',
    presets: [window.SwaggerUIBundle.presets.apis],
    deepLinking: true,
    filter: true,
    displayRequestDuration: true,
    persistAuthorization: false,
    validatorUrl: null,
  });
})();
`;

/**
 * The page's Content-Security-Policy: scripts, styles, fonts and requests
 * from this origin only (`connect` also to the document's other servers), no
 * inline script or style, no plugins, no base or form targets, not framed.
 * swagger-ui styles what it renders through the DOM (which a policy does not
 * govern); only an aligned Markdown table in a description would lose its
 * alignment. Images may be `data:` (the icons in swagger-ui's CSS) or `blob:`
 * (an image answer shown by "Try it out").
 */
export function viewerCsp(connectOrigins: readonly string[]): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    ["connect-src 'self'", ...connectOrigins].join(' '),
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** swagger-ui-dist's folder, found as Node resolves the package from here (the source tree or the build). */
export function swaggerUiDir(): string {
  return dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
}

/** Reads swagger-ui's files and writes the page that loads them, its document at `documentUrl`, its files under `base`. */
export async function loadViewer(options: { dir: string; base: string; documentUrl: string; title: string }): Promise<Viewer> {
  const files = new Map<string, StaticFile>();
  for (const [name, type] of Object.entries(SWAGGER_UI_FILES)) files.set(name, staticFile(await readFile(join(options.dir, name)), type));
  files.set(INIT_FILE, staticFile(Buffer.from(INIT_SCRIPT), 'text/javascript; charset=utf-8'));
  const url = (name: string) => `${options.base}/${name}?v=${files.get(name)!.version}`;
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(options.title)}: API reference</title>
<link rel="stylesheet" href="${escapeHtml(url('swagger-ui.css'))}">
<link rel="icon" type="image/png" sizes="32x32" href="${escapeHtml(url('favicon-32x32.png'))}">
<link rel="icon" type="image/png" sizes="16x16" href="${escapeHtml(url('favicon-16x16.png'))}">
</head>
<body>
<noscript>This viewer needs JavaScript. The OpenAPI document itself is at <a href="${escapeHtml(options.documentUrl)}">${escapeHtml(options.documentUrl)}</a>.</noscript>
<div id="swagger-ui" data-openapi-url="${escapeHtml(options.documentUrl)}"></div>
<script src="${escapeHtml(url('swagger-ui-bundle.js'))}"></script>
<script src="${escapeHtml(url(INIT_FILE))}"></script>
</body>
</html>
`;
  return { page: staticFile(Buffer.from(html), 'text/html; charset=utf-8'), files };
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
