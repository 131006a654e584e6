import { flushLogger } from '../core/index.js';
import type { PluginOrigin } from './load-plugin.js';
import type { PluginEntry } from './schema.js';
import type { RunningServer, StartInfo } from './server.js';

/*
 * What the server says when it listens: the address bound, the config file and
 * what it extends, the data dir, the dashboard and API reference URLs, and every
 * plugin with where it came from. On a terminal, a few lines for a person; piped
 * or collected (a container, systemd, the tests), one JSON log line with the
 * same facts as fields. Both start with `gateway listening on <address>`.
 */

/** The facts of a start, as {@link reportStart} gives them. */
export interface StartReport extends StartInfo {
  /** The address really bound (`http://0.0.0.0:8787 (all interfaces; from this machine http://127.0.0.1:8787)`). */
  listening: string;
  port: number;
  /** A URL this machine reaches the server at. */
  url: string;
}

/** Where the start is written: a TTY gets lines for people, anything else one JSON log line. */
export interface StartOutput {
  isTTY?: boolean;
  columns?: number;
  write(text: string): unknown;
}

/** The facts of a running server's start: its address and {@link RunningServer.startInfo}. */
export function startReport(running: Pick<RunningServer, 'listening' | 'port' | 'url' | 'startInfo'>): StartReport {
  return { listening: running.listening, port: running.port, url: running.url, ...running.startInfo };
}

/** The start line's message, the same in both forms: `gateway listening on <address>`. */
export function startMessage(report: Pick<StartReport, 'listening'>): string {
  return `gateway listening on ${report.listening}`;
}

/**
 * The fields of the JSON start line: `port` and `url` (as before), `listening`, `configFile`
 * and `extends` (null for none), `dataDir`, `dashboardUrl` and `docsUrl` (null when not
 * served), and `plugins`: `{ name, origin }` per plugin in load order, `origin` being
 * `bundled`, `package` (with `package`, `version` and `file`) or `path` (with `file`);
 * `entry` is added where the config named the plugin otherwise than it names itself.
 */
export function startLogFields(report: StartReport): Record<string, unknown> {
  return {
    port: report.port,
    url: report.url,
    listening: report.listening,
    configFile: report.configFile,
    extends: report.extends,
    dataDir: report.dataDir,
    dashboardUrl: report.dashboardUrl,
    docsUrl: report.docsUrl,
    plugins: report.plugins.map(pluginField),
  };
}

function pluginField(p: PluginOrigin): Record<string, unknown> {
  const { entry, ...rest } = p;
  return entry === p.name ? rest : { ...rest, entry };
}

/** One external plugin as a line says it: `acme 1.0.0 (package, /srv/node_modules/acme/index.js)`. */
export function describeOrigin(p: PluginOrigin): string {
  switch (p.origin) {
    case 'bundled':
      return `${p.name} (bundled)`;
    case 'package': {
      const named = p.name === p.package ? p.package : `${p.name} from ${p.package}`;
      return `${named}${p.version === null ? '' : ` ${p.version}`} (package, ${p.file})`;
    }
    case 'path':
      return `${p.name} (path, ${p.file})`;
  }
}

/**
 * The start as lines for a person at a terminal, each ending in a newline:
 *
 * ```text
 * gateway listening on http://0.0.0.0:8787 (all interfaces; from this machine http://127.0.0.1:8787)
 *   config     /etc/gateway.json (extends default)
 *   data dir   /srv/gateway/data
 *   dashboard  http://127.0.0.1:8787/dashboard
 *   docs       http://127.0.0.1:8787/docs
 *   plugins    bundled: trace, traceparent, health, …
 *              acme-gateway-plugin 1.0.0 (package, /etc/node_modules/acme-gateway-plugin/index.js)
 * ```
 *
 * The bundled names wrap at `columns` (default 100). Lines for a page not served are left out.
 */
export function formatStartLines(report: StartReport, columns = 100): string {
  const label = (name: string) => `  ${name.padEnd(10)} `;
  const indent = ' '.repeat(label('').length);
  const lines = [startMessage(report)];
  const config = report.configFile === null ? 'the bundled default config' : report.configFile;
  lines.push(`${label('config')}${config}${report.extends === null ? '' : ` (extends ${report.extends})`}`);
  lines.push(`${label('data dir')}${report.dataDir}`);
  if (report.dashboardUrl !== null) lines.push(`${label('dashboard')}${report.dashboardUrl}`);
  if (report.docsUrl !== null) lines.push(`${label('docs')}${report.docsUrl}`);
  const bundled = report.plugins.filter((p) => p.origin === 'bundled').map((p) => p.name);
  const external = report.plugins.filter((p) => p.origin !== 'bundled');
  const pluginLines = [...wrap('bundled: ', bundled, Math.max(40, columns - indent.length)), ...external.map(describeOrigin)];
  if (pluginLines.length === 0) pluginLines.push('none');
  pluginLines.forEach((line, i) => lines.push(`${i === 0 ? label('plugins') : indent}${line}`));
  return `${lines.join('\n')}\n`;
}

/** `prefix` and the names, comma-separated, wrapped at `width`, continuation lines aligned under the first name. */
function wrap(prefix: string, names: readonly string[], width: number): string[] {
  if (names.length === 0) return [];
  const out: string[] = [];
  let line = prefix;
  for (const [i, name] of names.entries()) {
    const word = `${name}${i < names.length - 1 ? ',' : ''}`;
    if (line.length > prefix.length && line.length + 1 + word.length > width) {
      out.push(line);
      line = ' '.repeat(prefix.length) + word;
    } else {
      line = line.length > prefix.length ? `${line} ${word}` : `${line}${word}`;
    }
  }
  out.push(line);
  return out;
}

/**
 * Says that the server listens: on a TTY `out`, {@link formatStartLines} (after the log lines
 * already buffered, so the order holds); otherwise one info line on the gateway's logger, the
 * message {@link startMessage} and the fields {@link startLogFields}.
 */
export async function reportStart(running: Pick<RunningServer, 'gateway' | 'listening' | 'port' | 'url' | 'startInfo'>, out: StartOutput = process.stdout): Promise<void> {
  const report = startReport(running);
  if (out.isTTY === true) {
    await flushLogger(running.gateway.logger);
    // A terminal that reports no width (0, as a bare pty does) gets the default.
    out.write(formatStartLines(report, out.columns !== undefined && out.columns >= 60 ? out.columns : undefined));
    return;
  }
  running.gateway.logger.info(startLogFields(report), startMessage(report));
}

/** The dashboard's and the API reference's URLs, from the bundled `dashboard` and `openapi` entries and their path options. */
export function pageUrls(url: string, entries: readonly PluginEntry[], origins: readonly PluginOrigin[]): { dashboardUrl: string | null; docsUrl: string | null } {
  const bundled = (name: string) => entries.find((e, i) => e.name === name && origins[i]?.origin === 'bundled');
  const dashboard = bundled('dashboard');
  const openapi = bundled('openapi');
  const dashboardPath = typeof dashboard?.options?.path === 'string' ? dashboard.options.path : '/dashboard';
  // openapi's `docsPath: false` serves the document without the viewer.
  const docsPath = openapi?.options?.docsPath === false ? null : typeof openapi?.options?.docsPath === 'string' ? openapi.options.docsPath : '/docs';
  return {
    dashboardUrl: dashboard === undefined ? null : `${url}${dashboardPath}`,
    docsUrl: openapi === undefined || docsPath === null ? null : `${url}${docsPath}`,
  };
}
