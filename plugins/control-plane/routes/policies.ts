import { randomUUID } from 'node:crypto';
import * as v from 'valibot';
import {
  firstReset,
  GatewayError,
  type LimitPolicy,
  LimitConditionsSchema,
  LimitGroupBySchema,
  PERIODIC_RESETS,
  POLICY_STATUSES,
  RATE_LIMIT_TYPES,
  RATE_LIMIT_UNITS,
  type RequestContext,
  USAGE_LIMIT_TYPES,
  type UsageLimitPolicy,
  usagePeriod,
  utcMidnight,
} from '../../../sdk/index.js';
import { presentPolicy, toPolicy } from '../policies.js';
import type { LimitPolicyRow, Paged } from '../repository.js';
import type { ControlPlane } from '../service.js';
import { BY_ID, docsFor, forbidden, isOrgLevel, Name, notFound, ok, PAGE_QUERY, pageOf, parseBody, parseQuery, workspaceFor, type AdminRoute } from './http.js';

const doc = docsFor('Policies');

type Kind = LimitPolicyRow['kind'];

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

const RateCreate = v.strictObject({
  name: Name,
  type: picklist(RATE_LIMIT_TYPES),
  unit: picklist(RATE_LIMIT_UNITS),
  value: Count,
  conditions: v.optional(LimitConditionsSchema, []),
  group_by: v.optional(LimitGroupBySchema, []),
  workspace_id: v.nullish(v.string()),
  fail_open: v.optional(v.boolean(), true),
});
const RateUpdate = v.strictObject({
  name: v.optional(Name),
  type: v.optional(picklist(RATE_LIMIT_TYPES)),
  unit: v.optional(picklist(RATE_LIMIT_UNITS)),
  value: v.optional(Count),
  conditions: v.optional(LimitConditionsSchema),
  group_by: v.optional(LimitGroupBySchema),
  status: v.optional(picklist(POLICY_STATUSES)),
  fail_open: v.optional(v.boolean()),
});
const UsageFields = {
  alert_threshold: v.nullish(Amount),
  periodic_reset: v.nullish(picklist(PERIODIC_RESETS)),
  periodic_reset_days: v.nullish(ResetDays),
  next_usage_reset_at: v.nullish(ResetAt),
};
const UsageCreate = v.strictObject({
  name: Name,
  type: picklist(USAGE_LIMIT_TYPES),
  credit_limit: Amount,
  ...UsageFields,
  conditions: v.optional(LimitConditionsSchema, []),
  group_by: v.optional(LimitGroupBySchema, []),
  workspace_id: v.nullish(v.string()),
  fail_open: v.optional(v.boolean(), true),
});
const UsageUpdate = v.strictObject({
  name: v.optional(Name),
  type: v.optional(picklist(USAGE_LIMIT_TYPES)),
  credit_limit: v.optional(Amount),
  ...UsageFields,
  conditions: v.optional(LimitConditionsSchema),
  group_by: v.optional(LimitGroupBySchema),
  status: v.optional(picklist(POLICY_STATUSES)),
  fail_open: v.optional(v.boolean()),
});

const PageQuery = v.strictObject({ ...PAGE_QUERY });
const StatusQuery = v.strictObject({ status: v.optional(picklist(POLICY_STATUSES)) });
const RateListQuery = v.strictObject({ ...PAGE_QUERY, workspace_id: v.optional(v.string()), status: v.optional(picklist(POLICY_STATUSES)), type: v.optional(picklist(RATE_LIMIT_TYPES)), unit: v.optional(picklist(RATE_LIMIT_UNITS)) });
const UsageListQuery = v.strictObject({
  ...PAGE_QUERY,
  workspace_id: v.optional(v.string()),
  status: v.optional(picklist(POLICY_STATUSES)),
  type: v.optional(picklist(USAGE_LIMIT_TYPES)),
  periodic_reset: v.optional(picklist(PERIODIC_RESETS)),
});

const bad = (message: string, param: string) => new GatewayError('invalid_request', `Invalid request body: '${param}' ${message}`, { param });
const label = (kind: Kind) => (kind === 'rate' ? 'rate-limit policy' : 'usage-limit policy');

/**
 * Conditions as stored: a `workspace_id` condition must name the policy's own
 * workspace (a policy only ever sees its workspace's requests) and is stored as its id.
 */
async function checkConditions(cp: ControlPlane, conditions: readonly { key: string; value: string }[], workspaceId: string): Promise<string> {
  const out: { key: string; value: string }[] = [];
  for (const [i, c] of conditions.entries()) {
    if (c.key === 'workspace_id') {
      const ws = await cp.workspace(c.value);
      if (ws === null || ws.id !== workspaceId) throw bad('must name the policy\'s own workspace: a policy limits only the requests of its workspace', `conditions[${i}].value`);
      out.push({ key: c.key, value: ws.id });
    } else out.push({ key: c.key, value: c.value });
  }
  return JSON.stringify(out);
}

/** `next_usage_reset_at` as stored: 00:00 UTC of the day it names, which must still be ahead. */
function resetAt(value: string, now: number): number {
  const at = utcMidnight(Date.parse(value));
  if (at <= now) throw bad(`must be a day after today (it is normalised to 00:00 UTC: ${new Date(at).toISOString()})`, 'next_usage_reset_at');
  return at;
}

function checkTokens(type: string, credit: number | null | undefined, param: string): void {
  if (type === 'tokens' && credit !== null && credit !== undefined && !Number.isInteger(credit)) throw bad('must be a whole number of tokens', param);
}

/** A policy the caller may see: its workspace's (any, for organisation-level keys), else 404 as if it did not exist. */
async function visiblePolicy(ctx: RequestContext, cp: ControlPlane, kind: Kind, id: string): Promise<LimitPolicyRow> {
  const row = await cp.repo.limitPolicy(kind, id);
  const own = ctx.auth?.workspaceId ?? null;
  if (row === undefined || (own !== null && row.workspace_id !== own)) throw notFound(label(kind), id);
  return row;
}

/** Writes to a policy made by an organisation-level key need one too: a team cannot lift the budget its organisation set. */
function requireWritable(ctx: RequestContext, row: LimitPolicyRow): void {
  if (row.managed_by === 'organisation' && !isOrgLevel(ctx)) {
    throw forbidden(`This ${label(row.kind)} was set by an organisation-level key; only such a key may change or archive it.`);
  }
}

function list(paged: Paged<LimitPolicyRow>, now: number) {
  // The spec's envelope has `total`; `total_count` is what every other admin list carries.
  return ok({ object: 'list', total: paged.total, total_count: paged.total, data: paged.data.map((row) => presentPolicy(row, now)) });
}

/** Which workspace a list shows: a workspace key its own; an organisation-level key the one named, else every workspace. */
async function listWorkspace(ctx: RequestContext, cp: ControlPlane, named: string | undefined): Promise<string | null> {
  if (isOrgLevel(ctx) && named === undefined) return null;
  return workspaceFor(ctx, cp, named);
}

async function usageOf(ctx: RequestContext, cp: ControlPlane, kind: Kind): Promise<ReturnType<typeof ok>> {
  const row = await visiblePolicy(ctx, cp, kind, ctx.params!.id!);
  const q = parseQuery(ctx, PageQuery);
  const counters = cp.counters;
  if (counters === undefined) throw new GatewayError('service_unavailable', 'The limits plugin is not loaded: policies are stored but not enforced, and there are no counters to read.');
  const policy: LimitPolicy = toPolicy(row);
  const usage = await counters.usage(policy);
  const limit = policy.kind === 'rate' ? policy.value : policy.credit_limit;
  const page = pageOf(q);
  const data = usage.groups.slice(page.current * page.size, (page.current + 1) * page.size).map((g) => ({
    group: g.group,
    used: g.used,
    reserved: g.reserved,
    remaining: Math.max(0, limit - g.used - g.reserved),
    ...(policy.kind === 'usage' && policy.alert_threshold !== null ? { alert_threshold_reached: g.used + g.reserved >= policy.alert_threshold } : {}),
  }));
  return ok({
    object: 'list',
    policy_id: row.id,
    status: row.status,
    limit,
    period_start: new Date(usage.start).toISOString(),
    period_end: usage.end === null ? null : new Date(usage.end).toISOString(),
    total: usage.groups.length,
    total_count: usage.groups.length,
    data,
  });
}

/** Routes shared by both kinds: get (with `status`), archive, usage. */
function commonRoutes(kind: Kind, path: string): AdminRoute[] {
  return [
    {
      name: `policies.${kind}.get`,
      method: 'GET',
      path: `${path}/:id`,
      scope: 'policies.read',
      doc: doc(`Get a ${label(kind)}`, { params: BY_ID, query: StatusQuery }),
      async handler(ctx, cp) {
        const { status } = parseQuery(ctx, StatusQuery);
        const row = await visiblePolicy(ctx, cp, kind, ctx.params!.id!);
        if (status !== undefined && row.status !== status) throw notFound(`${status} ${label(kind)}`, row.id);
        return ok(presentPolicy(row, cp.now()));
      },
    },
    {
      name: `policies.${kind}.archive`,
      method: 'DELETE',
      path: `${path}/:id`,
      scope: 'policies.delete',
      doc: doc(`Archive a ${label(kind)}`, { params: BY_ID, description: 'An archived policy no longer limits requests.' }),
      async handler(ctx, cp) {
        const row = await visiblePolicy(ctx, cp, kind, ctx.params!.id!);
        requireWritable(ctx, row);
        const now = cp.now();
        if (row.status !== 'archived') {
          await cp.repo.update('cp_limit_policies', { id: row.id }, { status: 'archived', archived_at: now, updated_at: now });
          cp.invalidate();
        }
        return ok(presentPolicy((await cp.repo.limitPolicy(kind, row.id))!, now));
      },
    },
    {
      name: `policies.${kind}.usage`,
      method: 'GET',
      path: `${path}/:id/usage`,
      scope: 'policies.read',
      doc: doc(`Get a ${label(kind)}'s consumption`, { params: BY_ID, query: PageQuery, description: 'What each group (`group_by` value) has used, holds reserved and has left in the current period.' }),
      handler: (ctx, cp) => usageOf(ctx, cp, kind),
    },
  ];
}

const RATE = '/policies/rate-limits';
const USAGE = '/policies/usage-limits';

export const policyRoutes: AdminRoute[] = [
  {
    name: 'policies.rate.create',
    method: 'POST',
    path: RATE,
    scope: 'policies.create',
    doc: doc('Create a rate-limit policy', { body: RateCreate, description: 'Requests or tokens per minute, hour, day or week for each group of `group_by`, among the requests `conditions` select.' }),
    async handler(ctx, cp) {
      const body = parseBody(ctx, RateCreate);
      const workspaceId = await workspaceFor(ctx, cp, body.workspace_id);
      const ws = (await cp.workspace(workspaceId))!;
      const now = cp.now();
      const row: LimitPolicyRow = {
        id: randomUUID(),
        kind: 'rate',
        organisation_id: ws.organisation_id,
        workspace_id: workspaceId,
        name: body.name,
        type: body.type,
        unit: body.unit,
        value: body.value,
        credit_limit: null,
        alert_threshold: null,
        periodic_reset: null,
        periodic_reset_days: null,
        next_usage_reset_at: null,
        period_start_at: null,
        conditions: await checkConditions(cp, body.conditions, workspaceId),
        group_by: JSON.stringify(body.group_by),
        fail_open: body.fail_open ? 1 : 0,
        status: 'active',
        managed_by: isOrgLevel(ctx) ? 'organisation' : 'workspace',
        created_at: now,
        updated_at: now,
        archived_at: null,
      };
      await cp.repo.insert('cp_limit_policies', { ...row });
      cp.invalidate();
      return ok(presentPolicy(row, now));
    },
  },
  {
    name: 'policies.rate.list',
    method: 'GET',
    path: RATE,
    scope: 'policies.read',
    doc: doc('List rate-limit policies', { query: RateListQuery }),
    async handler(ctx, cp) {
      const q = parseQuery(ctx, RateListQuery);
      const workspaceId = await listWorkspace(ctx, cp, q.workspace_id);
      return list(await cp.repo.limitPolicies('rate', { workspaceId, status: q.status, type: q.type, unit: q.unit }, pageOf(q)), cp.now());
    },
  },
  {
    name: 'policies.rate.update',
    method: 'PUT',
    path: `${RATE}/:id`,
    scope: 'policies.update',
    doc: doc('Update a rate-limit policy', { params: BY_ID, body: RateUpdate }),
    async handler(ctx, cp) {
      const row = await visiblePolicy(ctx, cp, 'rate', ctx.params!.id!);
      requireWritable(ctx, row);
      const body = parseBody(ctx, RateUpdate);
      if (body.type !== undefined && body.type !== row.type) throw bad(`cannot change (it is "${row.type}"): archive this policy and create another`, 'type');
      const now = cp.now();
      const patch: Record<string, unknown> = { updated_at: now };
      if (body.name !== undefined) patch.name = body.name;
      if (body.unit !== undefined) patch.unit = body.unit;
      if (body.value !== undefined) patch.value = body.value;
      if (body.conditions !== undefined) patch.conditions = await checkConditions(cp, body.conditions, row.workspace_id);
      if (body.group_by !== undefined) patch.group_by = JSON.stringify(body.group_by);
      if (body.fail_open !== undefined) patch.fail_open = body.fail_open ? 1 : 0;
      if (body.status !== undefined && body.status !== row.status) {
        patch.status = body.status;
        patch.archived_at = body.status === 'archived' ? now : null;
      }
      await cp.repo.update('cp_limit_policies', { id: row.id }, patch);
      cp.invalidate();
      return ok(presentPolicy((await cp.repo.limitPolicy('rate', row.id))!, now));
    },
  },
  ...commonRoutes('rate', RATE),
  {
    name: 'policies.usage.create',
    method: 'POST',
    path: USAGE,
    scope: 'policies.create',
    doc: doc('Create a usage-limit policy', { body: UsageCreate, description: 'A budget: tokens or dollars per group of `group_by`, over a week, a month or N days, with an alert threshold.' }),
    async handler(ctx, cp) {
      const body = parseBody(ctx, UsageCreate);
      if (body.periodic_reset != null && body.periodic_reset_days != null) throw bad('cannot be given with periodic_reset: the two are mutually exclusive', 'periodic_reset_days');
      checkTokens(body.type, body.credit_limit, 'credit_limit');
      checkTokens(body.type, body.alert_threshold, 'alert_threshold');
      if (body.alert_threshold != null && body.alert_threshold > body.credit_limit) throw bad('must not exceed credit_limit', 'alert_threshold');
      const workspaceId = await workspaceFor(ctx, cp, body.workspace_id);
      const ws = (await cp.workspace(workspaceId))!;
      const now = cp.now();
      const rule = { periodic_reset: body.periodic_reset ?? null, periodic_reset_days: body.periodic_reset_days ?? null };
      const row: LimitPolicyRow = {
        id: randomUUID(),
        kind: 'usage',
        organisation_id: ws.organisation_id,
        workspace_id: workspaceId,
        name: body.name,
        type: body.type,
        unit: null,
        value: null,
        credit_limit: body.credit_limit,
        alert_threshold: body.alert_threshold ?? null,
        ...rule,
        next_usage_reset_at: body.next_usage_reset_at != null ? resetAt(body.next_usage_reset_at, now) : firstReset(rule, now),
        period_start_at: now,
        conditions: await checkConditions(cp, body.conditions, workspaceId),
        group_by: JSON.stringify(body.group_by),
        fail_open: body.fail_open ? 1 : 0,
        status: 'active',
        managed_by: isOrgLevel(ctx) ? 'organisation' : 'workspace',
        created_at: now,
        updated_at: now,
        archived_at: null,
      };
      await cp.repo.insert('cp_limit_policies', { ...row });
      cp.invalidate();
      return ok(presentPolicy(row, now));
    },
  },
  {
    name: 'policies.usage.list',
    method: 'GET',
    path: USAGE,
    scope: 'policies.read',
    doc: doc('List usage-limit policies', { query: UsageListQuery }),
    async handler(ctx, cp) {
      const q = parseQuery(ctx, UsageListQuery);
      const workspaceId = await listWorkspace(ctx, cp, q.workspace_id);
      return list(await cp.repo.limitPolicies('usage', { workspaceId, status: q.status, type: q.type, periodicReset: q.periodic_reset }, pageOf(q)), cp.now());
    },
  },
  {
    name: 'policies.usage.update',
    method: 'PUT',
    path: `${USAGE}/:id`,
    scope: 'policies.update',
    doc: doc('Update a usage-limit policy', { params: BY_ID, body: UsageUpdate }),
    async handler(ctx, cp) {
      const row = await visiblePolicy(ctx, cp, 'usage', ctx.params!.id!);
      requireWritable(ctx, row);
      const body = parseBody(ctx, UsageUpdate);
      if (body.type !== undefined && body.type !== row.type) throw bad(`cannot change (it is "${row.type}"): archive this policy and create another`, 'type');
      if (body.periodic_reset != null && body.periodic_reset_days != null) throw bad('cannot be given with periodic_reset: the two are mutually exclusive', 'periodic_reset_days');
      checkTokens(row.type, body.credit_limit, 'credit_limit');
      checkTokens(row.type, body.alert_threshold, 'alert_threshold');
      const credit = body.credit_limit ?? row.credit_limit!;
      const alert = body.alert_threshold !== undefined ? body.alert_threshold : row.alert_threshold;
      if (alert !== null && alert > credit) throw bad('must not exceed credit_limit', body.alert_threshold !== undefined ? 'alert_threshold' : 'credit_limit');
      const now = cp.now();
      const patch: Record<string, unknown> = { updated_at: now };
      if (body.name !== undefined) patch.name = body.name;
      if (body.credit_limit !== undefined) patch.credit_limit = body.credit_limit;
      if (body.alert_threshold !== undefined) patch.alert_threshold = body.alert_threshold;
      const ruleChanged = body.periodic_reset !== undefined || body.periodic_reset_days !== undefined;
      if (ruleChanged || body.next_usage_reset_at !== undefined) {
        // The current period keeps its start (and so its counters); only when it ends changes.
        const current = usagePeriod(toPolicy(row) as UsageLimitPolicy, now);
        const rule = ruleChanged
          ? { periodic_reset: body.periodic_reset ?? null, periodic_reset_days: body.periodic_reset_days ?? null }
          : { periodic_reset: row.periodic_reset as UsageLimitPolicy['periodic_reset'], periodic_reset_days: row.periodic_reset_days };
        Object.assign(patch, rule);
        patch.period_start_at = current.start;
        patch.next_usage_reset_at = body.next_usage_reset_at != null ? resetAt(body.next_usage_reset_at, now) : firstReset(rule, now);
      }
      if (body.conditions !== undefined) patch.conditions = await checkConditions(cp, body.conditions, row.workspace_id);
      if (body.group_by !== undefined) patch.group_by = JSON.stringify(body.group_by);
      if (body.fail_open !== undefined) patch.fail_open = body.fail_open ? 1 : 0;
      if (body.status !== undefined && body.status !== row.status) {
        patch.status = body.status;
        patch.archived_at = body.status === 'archived' ? now : null;
      }
      await cp.repo.update('cp_limit_policies', { id: row.id }, patch);
      cp.invalidate();
      return ok(presentPolicy((await cp.repo.limitPolicy('usage', row.id))!, now));
    },
  },
  ...commonRoutes('usage', USAGE),
];
