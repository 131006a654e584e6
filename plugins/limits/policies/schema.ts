import * as v from 'valibot';
import {
  LimitConditionsSchema,
  LimitGroupBySchema,
  PERIODIC_RESETS,
  POLICY_STATUSES,
  RATE_LIMIT_TYPES,
  RATE_LIMIT_UNITS,
  USAGE_LIMIT_TYPES,
} from '../../../sdk/index.js';
import { Name, PAGE_QUERY } from '../../../sdk/admin/index.js';

/** The admin API's bodies and queries of rate-limit and usage-limit policies (docs/admin-api.md). */

const picklist = <T extends readonly string[]>(values: T) => v.picklist(values, `must be one of ${values.join(', ')}`);
/**
 * A rate limit's `value`: a number (spec) from 1 up to 10^12 (requests, tokens: far beyond any real limit, well
 * inside exact doubles). Requests and tokens are counted whole, and a window admits while its count stays within
 * the value, so 2.5 admits exactly what 2 does: a fraction is rounded down on write, and the policy stores and
 * shows the whole limit it enforces (docs/limits.md).
 */
const Count = v.pipe(v.number('must be a number'), v.minValue(1, 'must be at least 1'), v.maxValue(1e12, 'must be at most 10^12'), v.transform(Math.floor));
const Amount = v.pipe(v.number('must be a number'), v.gtValue(0, 'must be above 0'), v.maxValue(1e12, 'must be at most 10^12'));
const ResetDays = v.pipe(v.number('must be a number'), v.integer('must be an integer'), v.minValue(1, 'must be from 1 to 365'), v.maxValue(365, 'must be from 1 to 365'));
const ResetAt = v.pipe(
  v.string('must be an ISO 8601 date or date-time'),
  v.check((s) => /^\d{4}-\d{2}-\d{2}/.test(s) && Number.isFinite(Date.parse(s)), 'must be an ISO 8601 date or date-time'),
);

/** The fields of both kinds, when created. */
const CreateFields = {
  conditions: v.optional(LimitConditionsSchema, []),
  group_by: v.optional(LimitGroupBySchema, []),
  workspace_id: v.nullish(v.string()),
  fail_open: v.optional(v.boolean(), true),
};
/** The fields of both kinds an update may change. */
const UpdateFields = {
  conditions: v.optional(LimitConditionsSchema),
  group_by: v.optional(LimitGroupBySchema),
  status: v.optional(picklist(POLICY_STATUSES)),
  fail_open: v.optional(v.boolean()),
};

export const RateCreateSchema = v.strictObject({
  name: Name,
  type: picklist(RATE_LIMIT_TYPES),
  unit: picklist(RATE_LIMIT_UNITS),
  value: Count,
  ...CreateFields,
});
export const RateUpdateSchema = v.strictObject({
  name: v.optional(Name),
  type: v.optional(picklist(RATE_LIMIT_TYPES)),
  unit: v.optional(picklist(RATE_LIMIT_UNITS)),
  value: v.optional(Count),
  ...UpdateFields,
});
const UsageFields = {
  alert_threshold: v.nullish(Amount),
  periodic_reset: v.nullish(picklist(PERIODIC_RESETS)),
  periodic_reset_days: v.nullish(ResetDays),
  next_usage_reset_at: v.nullish(ResetAt),
};
export const UsageCreateSchema = v.strictObject({
  name: Name,
  type: picklist(USAGE_LIMIT_TYPES),
  credit_limit: Amount,
  ...UsageFields,
  ...CreateFields,
});
export const UsageUpdateSchema = v.strictObject({
  name: v.optional(Name),
  type: v.optional(picklist(USAGE_LIMIT_TYPES)),
  credit_limit: v.optional(Amount),
  ...UsageFields,
  ...UpdateFields,
});

export const PageQuerySchema = v.strictObject({ ...PAGE_QUERY });
export const StatusQuerySchema = v.strictObject({ status: v.optional(picklist(POLICY_STATUSES)) });
const ListFields = { ...PAGE_QUERY, workspace_id: v.optional(v.string()), status: v.optional(picklist(POLICY_STATUSES)) };
export const RateListQuerySchema = v.strictObject({ ...ListFields, type: v.optional(picklist(RATE_LIMIT_TYPES)), unit: v.optional(picklist(RATE_LIMIT_UNITS)) });
export const UsageListQuerySchema = v.strictObject({ ...ListFields, type: v.optional(picklist(USAGE_LIMIT_TYPES)), periodic_reset: v.optional(picklist(PERIODIC_RESETS)) });
