import * as v from 'valibot';
import { GatewayError, hasScope, type RequestContext } from '../../../sdk/index.js';
import { ExpiresAt, insertKey, KEY_TYPES, presentKey, RotationPolicySchema, rotateKey, Scopes, settleRotationPolicy } from '../api-keys.js';
import type { ApiKeyRow } from '../repository.js';
import { requireAuthority, requireAuthorityOverKey, requireGrantable, roleHolder } from '../grants.js';
import { defaultScopes } from '../scopes.js';
import type { ControlPlane, RotationPolicy } from '../service.js';
import { BY_ID, crudRoutes, Description, docsFor, mapPage, Metadata, Name, notFound, ok, optionalBody, PAGE_QUERY, pageOf, patchOf, requireOrgLevel, workspaceFor, type AdminRoute } from './http.js';
import { MIN_TRANSITION_MS } from '../keys.js';

const doc = docsFor('API keys');

const CreateBody = v.strictObject({
  type: v.picklist(KEY_TYPES, `must be one of ${KEY_TYPES.join(', ')}`),
  name: Name,
  description: Description,
  workspace_id: v.nullish(v.string()),
  user_id: v.nullish(v.string()),
  scopes: v.optional(Scopes),
  rotation_policy: v.nullish(RotationPolicySchema),
  expires_at: ExpiresAt,
  metadata: Metadata,
});

const UpdateBody = v.strictObject({
  name: v.optional(Name),
  description: Description,
  scopes: v.optional(Scopes),
  status: v.optional(v.picklist(['active', 'disabled'], 'must be "active" or "disabled"')),
  rotation_policy: v.nullish(RotationPolicySchema),
  expires_at: ExpiresAt,
  metadata: Metadata,
});

const RotateBody = v.strictObject({
  key_transition_period_ms: v.optional(
    v.pipe(v.number('must be a number of milliseconds'), v.integer('must be an integer'), v.minValue(MIN_TRANSITION_MS, `must be at least ${MIN_TRANSITION_MS} (30 minutes)`)),
  ),
});

const ListQuery = v.strictObject({ ...PAGE_QUERY, workspace_id: v.optional(v.string()), type: v.optional(v.picklist(KEY_TYPES)) });

/** A key the caller may see: any for organisation keys, its workspace's for workspace keys; else a 404. */
async function visibleKey(ctx: RequestContext, cp: ControlPlane, id: string): Promise<ApiKeyRow> {
  const row = id.length > 64 ? undefined : await cp.repo.apiKey(id);
  const own = ctx.auth?.workspaceId ?? null;
  if (row === undefined || (own !== null && row.workspace_id !== own)) throw notFound('API key', id);
  return row;
}

export const apiKeyRoutes: AdminRoute[] = [
  ...crudRoutes<ControlPlane, typeof CreateBody, typeof UpdateBody, typeof ListQuery, v.GenericSchema, ApiKeyRow>({
    name: 'api_keys',
    path: '/api-keys',
    tag: 'API keys',
    params: BY_ID,
    create: {
      summary: 'Create an API key',
      description: 'The secret is in the answer, once. Default scopes follow the type and role, trimmed to what the calling key holds; scopes given must all be held by it.',
      body: CreateBody,
      async run(ctx, cp, body) {
        let workspaceId: string | null = null;
        let userId: string | null = null;
        let role = 'admin';
        if (body.type === 'organisation-service') {
          requireOrgLevel(ctx, 'Creating an organisation-service key');
          if (body.workspace_id) throw new GatewayError('invalid_request', "Invalid request body: 'workspace_id' must be absent for an organisation-service key.", { param: 'workspace_id' });
        } else {
          workspaceId = await workspaceFor(ctx, cp, body.workspace_id);
          role = 'manager';
        }
        if (body.type === 'workspace-user') {
          if (!body.user_id) throw new GatewayError('invalid_request', "Invalid request body: 'user_id' is required for a workspace-user key.", { param: 'user_id' });
          const member = await cp.repo.member(workspaceId!, body.user_id);
          if (member === undefined) throw notFound('member of this workspace with user id', body.user_id, 'user_id');
          userId = member.user_id;
          role = member.role;
        } else if (body.user_id) {
          throw new GatewayError('invalid_request', "Invalid request body: 'user_id' is only for workspace-user keys.", { param: 'user_id' });
        }
        // Default scopes follow the type and role, trimmed to what the caller holds; explicit ones must all be held,
        // and the key's role (a user key acts as its owner) must be one the caller holds at least.
        const scopes = body.scopes ?? defaultScopes(body.type, role).filter((s) => ctx.auth === null || hasScope(ctx.auth.scopes, s));
        requireGrantable(ctx, scopes);
        if (body.type !== 'organisation-service') requireAuthority(ctx, { ...roleHolder(role), scopes }, `create a key that acts as "${role}"`, body.type === 'workspace-user' ? 'user_id' : 'type');
        const policy = settleRotationPolicy(body.rotation_policy, body.type, await cp.settings(), cp.now(), null);
        const { row, secret } = await insertKey(cp, {
          type: body.type,
          name: body.name,
          description: body.description ?? null,
          workspaceId,
          userId,
          scopes,
          rotationPolicy: policy,
          expiresAt: body.expires_at ? Date.parse(body.expires_at) : null,
          metadata: body.metadata ?? null,
        });
        return presentKey(row, cp.now(), secret);
      },
    },
    list: {
      summary: 'List API keys',
      query: ListQuery,
      async run(ctx, cp, q) {
        const own = ctx.auth?.workspaceId ?? null;
        const workspaceId = own !== null || q.workspace_id !== undefined ? await workspaceFor(ctx, cp, q.workspace_id) : undefined;
        const now = cp.now();
        return mapPage(await cp.repo.apiKeys({ workspaceId, type: q.type }, pageOf(q)), (row) => presentKey(row, now));
      },
    },
    get: { summary: 'Get an API key', run: async (ctx, cp, id) => presentKey(await visibleKey(ctx, cp, id), cp.now()) },
    update: {
      summary: 'Update an API key',
      body: UpdateBody,
      find: visibleKey,
      async run(ctx, cp, _id, body, row) {
        await requireAuthorityOverKey(ctx, cp.repo, row, 'change this API key');
        const patch = patchOf(body, ['name', 'description', 'status'], cp.now());
        if (body.metadata !== undefined) patch.metadata = body.metadata === null ? null : JSON.stringify(body.metadata);
        if (body.expires_at !== undefined) patch.expires_at = body.expires_at === null ? null : Date.parse(body.expires_at);
        if (body.scopes !== undefined) {
          requireGrantable(ctx, body.scopes);
          patch.scopes = JSON.stringify(body.scopes);
        }
        if (body.rotation_policy !== undefined) {
          const previous = row.rotation_policy === null ? null : (JSON.parse(row.rotation_policy) as RotationPolicy);
          const policy = settleRotationPolicy(body.rotation_policy, row.type, await cp.settings(), cp.now(), body.rotation_policy === null ? null : previous);
          patch.rotation_policy = policy === null ? null : JSON.stringify(policy);
        }
        await cp.repo.update('cp_api_keys', { id: row.id }, patch);
        cp.invalidate();
        return presentKey((await cp.repo.apiKey(row.id))!, cp.now());
      },
    },
    remove: {
      summary: 'Delete an API key',
      async run(ctx, cp, id) {
        const row = await visibleKey(ctx, cp, id);
        await requireAuthorityOverKey(ctx, cp.repo, row, 'delete this API key');
        await cp.repo.deleteApiKey(row.id);
        cp.invalidate();
        return { id: row.id, object: 'api-key', deleted: true };
      },
    },
  }),
  {
    name: 'api_keys.rotate',
    method: 'POST',
    path: '/api-keys/:id/rotate',
    scope: 'api_keys.rotate',
    doc: doc('Rotate an API key', { params: BY_ID, body: RotateBody, description: 'A new secret, in the answer once; the old one keeps working for `key_transition_period_ms` (default: the organisation\'s). The body may be empty.' }),
    body: 'optional',
    async handler(ctx, cp) {
      const row = await visibleKey(ctx, cp, ctx.params!.id!);
      const result = v.safeParse(RotateBody, optionalBody(ctx));
      if (!result.success) {
        throw new GatewayError('invalid_request', `Invalid request body: 'key_transition_period_ms' ${result.issues[0].message}`, { param: 'key_transition_period_ms' });
      }
      // The new secret holds all the key holds: only the key itself, or a caller with its scopes and at least its role, gets it.
      await requireAuthorityOverKey(ctx, cp.repo, row, 'rotate this API key');
      if (row.status !== 'active') throw new GatewayError('invalid_request', 'A disabled API key cannot be rotated.', { param: 'id' });
      const rotated = await rotateKey(cp, row, result.output.key_transition_period_ms);
      return ok(presentKey(rotated.row, cp.now(), rotated.secret));
    },
  },
];
