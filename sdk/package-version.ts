import { readFileSync } from 'node:fs';

/** The gateway's own package name, as its package.json and the npm registry have it. */
export const GATEWAY_PACKAGE = 'switchyard-gateway';

/** The fields of the gateway's package.json that the gateway reads about itself. */
export interface GatewayPackageJson {
  name: string;
  version: string;
  devDependencies?: Record<string, string>;
}

let manifest: GatewayPackageJson | null | undefined;

/**
 * The gateway's own package.json, read once: one folder up from this file in the source tree
 * (`sdk/`), two from the build (`dist/sdk/`); null when neither is the gateway's.
 */
export function gatewayPackageJson(): GatewayPackageJson | null {
  if (manifest !== undefined) return manifest;
  manifest = null;
  for (const path of ['../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(path, import.meta.url), 'utf8')) as Partial<GatewayPackageJson>;
      if (pkg.name === GATEWAY_PACKAGE && typeof pkg.version === 'string') {
        manifest = pkg as GatewayPackageJson;
        break;
      }
    } catch {
      // not there: the other layout
    }
  }
  return manifest;
}

/** The gateway's own version (package.json's), for documents and telemetry that name it; '0.0.0' when unknown. */
export function gatewayPackageVersion(): string {
  return gatewayPackageJson()?.version ?? '0.0.0';
}
