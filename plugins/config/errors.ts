import type * as v from 'valibot';
import { GatewayError, issuePath, type ConfigIssue } from '../../sdk/index.js';

/** The request parameter every config error points at. */
export const CONFIG_PARAM = 'x-gateway-config';

/** More than a few issues bury the first one, which is usually the cause of the rest. */
export const MAX_REPORTED_ISSUES = 3;

/** valibot issues as paths and rules. */
export function toConfigIssues(issues: readonly v.BaseIssue<unknown>[]): ConfigIssue[] {
  return issues.map((issue) => ({ path: issuePath(issue), message: issue.message }));
}

/**
 * One line per issue, `path: rule`, so a client can find the field in a
 * deeply nested config: `targets[1].cb_config.cooldown_interval: must be at
 * least 30000 (got 1000)`. Issues on the config object itself have no path.
 */
export function formatConfigIssues(issues: readonly ConfigIssue[]): string {
  const lines = issues.slice(0, MAX_REPORTED_ISSUES).map(({ path, message }) => (path === '' ? message : `${path}: ${message}`));
  return `Invalid config: ${lines.join('; ')}`;
}

/** The 400 a client gets for a config that breaks the schema. */
export function configError(issues: readonly ConfigIssue[]): GatewayError {
  return new GatewayError('invalid_request', formatConfigIssues(issues), { param: CONFIG_PARAM });
}
