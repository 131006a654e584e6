import { readFileSync } from 'node:fs';

let version: string | null = null;

/**
 * The gateway's own version (package.json's), for documents and telemetry that name it: read once.
 * package.json is one folder up from this file in the source tree (`sdk/`), two from the build
 * (`dist/sdk/`); '0.0.0' when neither is the gateway's.
 */
export function gatewayPackageVersion(): string {
  if (version !== null) return version;
  version = '0.0.0';
  for (const path of ['../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(path, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'switchyard-gateway' && typeof pkg.version === 'string') {
        version = pkg.version;
        break;
      }
    } catch {
      // not there: the other layout
    }
  }
  return version;
}
