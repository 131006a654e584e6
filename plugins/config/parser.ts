import * as v from 'valibot';
import type { ConfigParser, TargetFields } from '../../sdk/index.js';
import { configError, toConfigIssues } from './errors.js';
import { createConfigSchema } from './schema.js';
import { buildTarget, inheritanceOf } from './tree.js';

/**
 * The config parser of one gateway: the schema is built once from the declared
 * target fields, and a valid config becomes its target tree (inheritance
 * resolved). Offered to other plugins under the SDK's `CONFIG_PARSER` token.
 */
export function createConfigParser(fields: TargetFields): ConfigParser {
  const parse = v.safeParser(createConfigSchema(fields));
  const inheritance = inheritanceOf(fields);
  return {
    parse(input) {
      const result = parse(input);
      if (!result.success) throw configError(toConfigIssues(result.issues));
      return buildTarget(result.output, inheritance);
    },
    check(input) {
      const result = parse(input);
      return result.success ? [] : toConfigIssues(result.issues);
    },
    error: configError,
  };
}
