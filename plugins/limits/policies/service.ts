import { GatewayError, type LimitPolicy, type LimitPolicySet, type RequestContext } from '../../../sdk/index.js';
import { forbidden, isOrgLevel, notFound, requestWorkspaceOf, TtlCache, workspaceFor, type Identity } from '../../../sdk/admin/index.js';
import { toPolicy } from './present.js';
import { PolicyRepository, type LimitPolicyRow, type PolicyKind } from './repository.js';

/** One group's consumption of a policy in its current window or period. */
export interface LimitGroupUsage {
  /** The group_by values of the bucket (`{}` for a policy without group_by). */
  group: Record<string, string>;
  /** Settled consumption: requests, tokens, or USD for a cost budget. */
  used: number;
  /** Held by requests in flight (reserved before the call, not settled yet). */
  reserved: number;
}

/** The current counters of a policy, for the `…/usage` routes. */
export interface LimitCounters {
  /** Every group with a counter in the policy's current window (rate limits) or period (budgets), most used first. */
  usage(policy: LimitPolicy): Promise<{ start: number; end: number | null; groups: LimitGroupUsage[] }>;
}

/** The answer for a request in no workspace: nothing to enforce. */
const NO_LIMITS: LimitPolicySet = Object.freeze({ workspaceId: null, policies: Object.freeze([]) });
const MAX_CACHED = 10_000;

export const policyLabel = (kind: PolicyKind): string => (kind === 'rate' ? 'rate-limit policy' : 'usage-limit policy');

/** A 400 naming a body field, worded as the body parser words its own. */
export const bad = (message: string, param: string): GatewayError => new GatewayError('invalid_request', `Invalid request body: '${param}' ${message}`, { param });

/**
 * The rate-limit and usage-limit policies the control plane's workspaces
 * keep: the request path reads a workspace's active ones through a TTL cache
 * (cleared with identity's on every admin write); the admin routes read and
 * write them here, scoped to what the caller may see.
 */
export class PolicyStore {
  readonly repo: PolicyRepository;
  readonly #sets: TtlCache<LimitPolicySet>;

  constructor(
    readonly identity: Identity,
    readonly counters: LimitCounters,
  ) {
    this.repo = new PolicyRepository(() => identity.sql());
    this.#sets = new TtlCache<LimitPolicySet>(identity.cacheTtlMs, MAX_CACHED, () => identity.now());
    identity.onInvalidate(() => this.#sets.clear());
  }

  now(): number {
    return this.identity.now();
  }

  /**
   * The active rate limits and budgets of the workspace a request acts in
   * ({@link requestWorkspaceOf}), through the cache: synchronous when cached,
   * the same object until it expires or an admin write clears it (the
   * enforcer compiles each set once).
   */
  policies(ctx: RequestContext): LimitPolicySet | Promise<LimitPolicySet> {
    const workspaceId = requestWorkspaceOf(ctx, this.identity);
    return workspaceId instanceof Promise ? workspaceId.then((id) => this.#setOf(id)) : this.#setOf(workspaceId);
  }

  #setOf(workspaceId: string | null): LimitPolicySet | Promise<LimitPolicySet> {
    if (workspaceId === null) return NO_LIMITS;
    return this.#sets.get(workspaceId, async () => {
      const policies = (await this.repo.active(workspaceId)).map(toPolicy);
      return Object.freeze({ workspaceId, policies: Object.freeze(policies) });
    });
  }

  /** A policy the caller may see: its workspace's (any, for organisation-level keys), else 404 as if it did not exist. */
  async visible(ctx: RequestContext, kind: PolicyKind, id: string): Promise<LimitPolicyRow> {
    const row = await this.repo.get(kind, id);
    const own = ctx.auth?.workspaceId ?? null;
    if (row === undefined || (own !== null && row.workspace_id !== own)) throw notFound(policyLabel(kind), id);
    return row;
  }

  /** A policy the caller may change: writes to one made by an organisation-level key need one too, so a team cannot lift the budget its organisation set. */
  async writable(ctx: RequestContext, kind: PolicyKind, id: string): Promise<LimitPolicyRow> {
    const row = await this.visible(ctx, kind, id);
    if (row.managed_by === 'organisation' && !isOrgLevel(ctx)) {
      throw forbidden(`This ${policyLabel(row.kind)} was set by an organisation-level key; only such a key may change or archive it.`);
    }
    return row;
  }

  /** Which workspace a list shows: a workspace key its own; an organisation-level key the one named, else every workspace. */
  async listWorkspace(ctx: RequestContext, named: string | undefined): Promise<string | null> {
    if (isOrgLevel(ctx) && named === undefined) return null;
    return workspaceFor(ctx, this.identity, named);
  }

  /**
   * Conditions as stored: a `workspace_id` condition must name the policy's own
   * workspace (a policy only ever sees its workspace's requests) and is stored as its id.
   */
  async conditions(conditions: readonly { key: string; value: string }[], workspaceId: string): Promise<string> {
    const out: { key: string; value: string }[] = [];
    for (const [i, c] of conditions.entries()) {
      if (c.key === 'workspace_id') {
        const ws = await this.identity.workspace(c.value);
        if (ws === null || ws.id !== workspaceId) throw bad('must name the policy\'s own workspace: a policy limits only the requests of its workspace', `conditions[${i}].value`);
        out.push({ key: c.key, value: ws.id });
      } else out.push({ key: c.key, value: c.value });
    }
    return JSON.stringify(out);
  }

  async insert(row: LimitPolicyRow): Promise<void> {
    await this.repo.insert(row);
    this.identity.invalidate();
  }

  /** Sets `patch`'s columns on a policy; the policy as it is now. */
  async update(row: LimitPolicyRow, patch: Record<string, unknown>): Promise<LimitPolicyRow> {
    await this.repo.update(row.id, patch);
    this.identity.invalidate();
    return (await this.repo.get(row.kind, row.id))!;
  }
}
