import { randomUUID } from 'node:crypto';
import type * as v from 'valibot';
import { firstReset, type GatewayResponse, type LimitCondition, type LimitGroupBy, type RequestContext, type UsageLimitPolicy, usagePeriod, utcMidnight } from '../../../sdk/index.js';
import { BY_ID, crudRoutes, docsFor, isOrgLevel, mapPage, notFound, ok, pageOf, parseQuery, workspaceFor, type AdminRoute } from '../../../sdk/admin/index.js';
import { presentPolicy, toPolicy } from './present.js';
import type { LimitPolicyRow, PolicyFilter, PolicyKind } from './repository.js';
import {
  PageQuerySchema,
  RateCreateSchema,
  RateListQuerySchema,
  RateUpdateSchema,
  StatusQuerySchema,
  UsageCreateSchema,
  UsageListQuerySchema,
  UsageUpdateSchema,
} from './schema.js';
import { bad, policyLabel, type PolicyStore } from './service.js';

/** What a new policy of either kind is given. */
interface CommonCreate {
  name: string;
  type: string;
  conditions: LimitCondition[];
  group_by: LimitGroupBy[];
  workspace_id?: string | null;
  fail_open: boolean;
}
/** What an update of either kind may change. */
interface CommonUpdate {
  name?: string;
  type?: string;
  conditions?: LimitCondition[];
  group_by?: LimitGroupBy[];
  status?: LimitPolicyRow['status'];
  fail_open?: boolean;
}

/** What a list of either kind is asked for. */
interface CommonQuery {
  workspace_id?: string;
  current_page?: number;
  page_size?: number;
}

/** The columns a policy of the other kind keeps, null here. */
const NO_COLUMNS = {
  unit: null,
  value: null,
  credit_limit: null,
  alert_threshold: null,
  periodic_reset: null,
  periodic_reset_days: null,
  next_usage_reset_at: null,
  period_start_at: null,
} as const;

/** What one kind of policy has of its own; the routes, the scoping and the common fields are {@link familyRoutes}'. */
interface Family<C extends CommonCreate, U extends CommonUpdate, Q extends CommonQuery> {
  kind: PolicyKind;
  path: string;
  /** What the reference says of creating one. */
  about: string;
  create: v.GenericSchema<unknown, C>;
  update: v.GenericSchema<unknown, U>;
  query: v.GenericSchema<unknown, Q>;
  /** The list's filters besides the workspace. */
  filter(q: Q): Omit<PolicyFilter, 'workspaceId'>;
  /** Checks of a new policy's body that need no lookup (they come before its workspace is resolved). */
  check?(body: C): void;
  /** This kind's columns of a new policy. */
  columns(body: C, now: number): Partial<LimitPolicyRow>;
  /** Checks an update against the stored policy, and sets this kind's columns on `patch`. */
  patch(row: LimitPolicyRow, body: U, now: number, patch: Record<string, unknown>): void;
}

/**
 * The routes of one kind: create, list, get (with `status`), update, archive
 * (policies are archived, never deleted: the log keeps naming their ids), and
 * the consumption of each group in the current window or period.
 */
function familyRoutes<C extends CommonCreate, U extends CommonUpdate, Q extends CommonQuery>(f: Family<C, U, Q>): AdminRoute<PolicyStore>[] {
  const { kind } = f;
  const label = policyLabel(kind);
  return [
    ...crudRoutes<PolicyStore, v.GenericSchema<unknown, C>, v.GenericSchema<unknown, U>, v.GenericSchema<unknown, Q>, typeof StatusQuerySchema>({
      name: `policies.${kind}`,
      path: f.path,
      tag: 'Policies',
      scope: 'policies',
      params: BY_ID,
      create: {
        summary: `Create a ${label}`,
        description: f.about,
        body: f.create,
        async run(ctx, s, body) {
          f.check?.(body);
          const workspaceId = await workspaceFor(ctx, s.identity, body.workspace_id);
          const organisationId = await s.identity.organisationId();
          const now = s.now();
          const row: LimitPolicyRow = {
            id: randomUUID(),
            kind,
            organisation_id: organisationId,
            workspace_id: workspaceId,
            name: body.name,
            type: body.type,
            ...NO_COLUMNS,
            ...f.columns(body, now),
            conditions: await s.conditions(body.conditions, workspaceId),
            group_by: JSON.stringify(body.group_by),
            fail_open: body.fail_open ? 1 : 0,
            status: 'active',
            managed_by: isOrgLevel(ctx) ? 'organisation' : 'workspace',
            created_at: now,
            updated_at: now,
            archived_at: null,
          };
          await s.insert(row);
          return presentPolicy(row, now);
        },
      },
      list: {
        summary: `List ${label.replace(/policy$/, 'policies')}`,
        query: f.query,
        // The spec's envelope has `total`; `total_count` is what every other admin list carries.
        total: true,
        async run(ctx, s, q) {
          const workspaceId = await s.listWorkspace(ctx, q.workspace_id);
          const paged = await s.repo.list(kind, { workspaceId, ...f.filter(q) }, pageOf(q));
          const now = s.now();
          return mapPage(paged, (row) => presentPolicy(row, now));
        },
      },
      get: {
        summary: `Get a ${label}`,
        query: StatusQuerySchema,
        async run(ctx, s, id, { status }) {
          const row = await s.visible(ctx, kind, id);
          if (status !== undefined && row.status !== status) throw notFound(`${status} ${label}`, row.id);
          return presentPolicy(row, s.now());
        },
      },
      update: {
        summary: `Update a ${label}`,
        body: f.update,
        find: async (ctx, s, id) => void (await s.writable(ctx, kind, id)),
        async run(ctx, s, id, body) {
          const row = await s.visible(ctx, kind, id);
          if (body.type !== undefined && body.type !== row.type) throw bad(`cannot change (it is "${row.type}"): archive this policy and create another`, 'type');
          const now = s.now();
          const patch: Record<string, unknown> = { updated_at: now };
          if (body.name !== undefined) patch.name = body.name;
          f.patch(row, body, now, patch);
          if (body.conditions !== undefined) patch.conditions = await s.conditions(body.conditions, row.workspace_id);
          if (body.group_by !== undefined) patch.group_by = JSON.stringify(body.group_by);
          if (body.fail_open !== undefined) patch.fail_open = body.fail_open ? 1 : 0;
          if (body.status !== undefined && body.status !== row.status) {
            patch.status = body.status;
            patch.archived_at = body.status === 'archived' ? now : null;
          }
          return presentPolicy(await s.update(row, patch), now);
        },
      },
      remove: {
        summary: `Archive a ${label}`,
        description: 'An archived policy no longer limits requests.',
        async run(ctx, s, id) {
          const row = await s.writable(ctx, kind, id);
          const now = s.now();
          return presentPolicy(row.status === 'archived' ? row : await s.update(row, { status: 'archived', archived_at: now, updated_at: now }), now);
        },
      },
    }),
    {
      name: `policies.${kind}.usage`,
      method: 'GET',
      path: `${f.path}/:id/usage`,
      scope: 'policies.read',
      doc: docsFor('Policies')(`Get a ${label}'s consumption`, {
        params: BY_ID,
        query: PageQuerySchema,
        description: 'What each group (`group_by` value) has used, holds reserved and has left in the current period.',
      }),
      handler: (ctx, s) => usageOf(ctx, s, kind),
    },
  ];
}

async function usageOf(ctx: RequestContext, s: PolicyStore, kind: PolicyKind): Promise<GatewayResponse> {
  const row = await s.visible(ctx, kind, ctx.params!.id!);
  const page = pageOf(parseQuery(ctx, PageQuerySchema));
  const policy = toPolicy(row);
  const usage = await s.counters.usage(policy);
  const limit = policy.kind === 'rate' ? policy.value : policy.credit_limit;
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

/** `next_usage_reset_at` as stored: 00:00 UTC of the day it names, which must still be ahead. */
function resetAt(value: string, now: number): number {
  const at = utcMidnight(Date.parse(value));
  if (at <= now) throw bad(`must be a day after today (it is normalised to 00:00 UTC: ${new Date(at).toISOString()})`, 'next_usage_reset_at');
  return at;
}

function checkTokens(type: string, credit: number | null | undefined, param: string): void {
  if (type === 'tokens' && credit !== null && credit !== undefined && !Number.isInteger(credit)) throw bad('must be a whole number of tokens', param);
}

function exclusiveRules(body: { periodic_reset?: string | null; periodic_reset_days?: number | null }): void {
  if (body.periodic_reset != null && body.periodic_reset_days != null) throw bad('cannot be given with periodic_reset: the two are mutually exclusive', 'periodic_reset_days');
}

const rate = familyRoutes({
  kind: 'rate',
  path: '/policies/rate-limits',
  about: 'Requests or tokens per minute, hour, day or week for each group of `group_by`, among the requests `conditions` select.',
  create: RateCreateSchema,
  update: RateUpdateSchema,
  query: RateListQuerySchema,
  filter: (q) => ({ status: q.status, type: q.type, unit: q.unit }),
  columns: (body) => ({ unit: body.unit, value: body.value }),
  patch(_row, body, _now, patch) {
    if (body.unit !== undefined) patch.unit = body.unit;
    if (body.value !== undefined) patch.value = body.value;
  },
});

const usage = familyRoutes({
  kind: 'usage',
  path: '/policies/usage-limits',
  about: 'A budget: tokens or dollars per group of `group_by`, over a week, a month or N days, with an alert threshold.',
  create: UsageCreateSchema,
  update: UsageUpdateSchema,
  query: UsageListQuerySchema,
  filter: (q) => ({ status: q.status, type: q.type, periodicReset: q.periodic_reset }),
  check(body) {
    exclusiveRules(body);
    checkTokens(body.type, body.credit_limit, 'credit_limit');
    checkTokens(body.type, body.alert_threshold, 'alert_threshold');
    if (body.alert_threshold != null && body.alert_threshold > body.credit_limit) throw bad('must not exceed credit_limit', 'alert_threshold');
  },
  columns(body, now) {
    const rule = { periodic_reset: body.periodic_reset ?? null, periodic_reset_days: body.periodic_reset_days ?? null };
    return {
      credit_limit: body.credit_limit,
      alert_threshold: body.alert_threshold ?? null,
      ...rule,
      next_usage_reset_at: body.next_usage_reset_at != null ? resetAt(body.next_usage_reset_at, now) : firstReset(rule, now),
      period_start_at: now,
    };
  },
  patch(row, body, now, patch) {
    exclusiveRules(body);
    checkTokens(row.type, body.credit_limit, 'credit_limit');
    checkTokens(row.type, body.alert_threshold, 'alert_threshold');
    const credit = body.credit_limit ?? row.credit_limit!;
    const alert = body.alert_threshold !== undefined ? body.alert_threshold : row.alert_threshold;
    if (alert !== null && alert > credit) throw bad('must not exceed credit_limit', body.alert_threshold !== undefined ? 'alert_threshold' : 'credit_limit');
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
  },
});

/** The admin routes of rate-limit and usage-limit policies (docs/admin-api.md), under the base path. */
export const policyRoutes: AdminRoute<PolicyStore>[] = [...rate, ...usage];
