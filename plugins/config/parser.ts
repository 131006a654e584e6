import * as v from 'valibot';
import { DEFAULT_MAX_JSON_DEPTH, exceedsValueDepth, type ConfigIssue, type GatewayError, type Target, type TargetFields } from '../../sdk/index.js';
import { configError, toConfigIssues } from './errors.js';
import { createConfigSchema } from './schema.js';
import { buildTarget, inheritanceOf } from './tree.js';

/** Largest config, as JSON, in bytes: inline, saved or in the server config. */
export const MAX_CONFIG_BYTES = 256 * 1024;

/** The config parser: the schema built from every declared target field. */
export interface ConfigParser {
  /**
   * Validates a config (JSON already decoded) and turns it into the target tree
   * the pipeline runs (inheritance resolved).
   * @throws GatewayError `invalid_request` (param `x-gateway-config`) naming the first issues.
   */
  parse(input: unknown): Target;
  /** The issues of a config, without throwing: empty when it is valid. */
  check(input: unknown): ConfigIssue[];
  /** The 400 for these issues, as `parse` throws it (`Invalid config: path: rule; …`). */
  error(issues: readonly ConfigIssue[]): GatewayError;
}

/** Bounds a config must keep before it is validated (the schema and the tree builder walk it recursively). */
export interface ConfigLimits {
  /** Deepest nesting of objects and arrays. Default 100 (the gateway's `maxJsonDepth`). */
  maxDepth?: number;
  /** Largest size as JSON, in bytes. Default {@link MAX_CONFIG_BYTES}. */
  maxBytes?: number;
}

/**
 * The config parser of one gateway: the schema is built once from the declared
 * target fields, and a valid config becomes its target tree (inheritance
 * resolved); saved configs are checked with it when they are stored.
 * A config deeper or larger than the limits is refused before the schema
 * walks it.
 */
export function createConfigParser(fields: TargetFields, limits: ConfigLimits = {}): ConfigParser {
  const parse = v.safeParser(createConfigSchema(fields));
  const inheritance = inheritanceOf(fields);
  const maxDepth = limits.maxDepth ?? DEFAULT_MAX_JSON_DEPTH;
  const maxBytes = limits.maxBytes ?? MAX_CONFIG_BYTES;
  const outOfBounds = (input: unknown): ConfigIssue[] => {
    if (exceedsValueDepth(input, maxDepth)) return [{ path: '', message: `nests objects and arrays deeper than ${maxDepth} levels, the limit (maxJsonDepth)` }];
    // Within the depth limit, serialising cannot overflow the stack.
    const size = Buffer.byteLength(JSON.stringify(input) ?? '');
    if (size > maxBytes) return [{ path: '', message: `is ${size} bytes as JSON, larger than the limit of ${maxBytes}` }];
    return [];
  };
  return {
    parse(input) {
      const bounds = outOfBounds(input);
      if (bounds.length > 0) throw configError(bounds);
      const result = parse(input);
      if (!result.success) throw configError(toConfigIssues(result.issues));
      return buildTarget(result.output, inheritance);
    },
    check(input) {
      const bounds = outOfBounds(input);
      if (bounds.length > 0) return bounds;
      const result = parse(input);
      return result.success ? [] : toConfigIssues(result.issues);
    },
    error: configError,
  };
}
