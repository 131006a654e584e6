import { randomUUID } from 'node:crypto';
import { GatewayError, type GatewayResponse, parseJsonObject, type RequestContext, type RouteDefinition, type RouteDoc, type SqlClient, v } from '../../sdk/index.js';
import { parseFilter } from './filter.js';
import { bool, emailList, memberIds, operations, patchGroup, patchUser, str, type GroupModel, type UserModel } from './patch.js';
import { ERROR_SCHEMA, errorResponse, GROUP_SCHEMA, listResponse, MAX_RESULTS, pageOf, resourceTypes, schemas, ScimError, scimResponse, serviceProviderConfig, USER_SCHEMA } from './protocol.js';
import {
  groupMembers,
  hashSecret,
  knownUsers,
  nameKey,
  scimGroup,
  scimGroups,
  scimUser,
  scimUsers,
  userGroups,
  type ScimEmail,
  type ScimGroupRow,
  type Scim,
  type ScimUserRow,
} from './store.js';
import { scimWrite } from './write.js';

/*
 * The SCIM 2.0 service identity providers call (RFC 7644): /Users and
 * /Groups (create, get, list with filters, PUT, PATCH, DELETE) and the three
 * discovery endpoints. Authenticated with a SCIM bearer token, never a
 * gateway key. Every write runs in one transaction, then reconciles the
 * workspace memberships of the users it touched (store.ts).
 */

export interface ScimServiceOptions {
  /** Path the service is served under, e.g. `/scim/v2`. */
  prefix: string;
  /** Public URL prefix for `meta.location` (e.g. `https://gateway.example.com`); relative locations without it. */
  publicUrl: string;
  /** SHA-256 digest of GATEWAY_SCIM_TOKEN, when set. */
  envTokenDigest: string | null;
  scim: () => Scim;
}

const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,253}$/;
/** How often a token's `last_used_at` is written, at most. */
const LAST_USED_EVERY_MS = 60_000;

const iso = (ms: number) => new Date(ms).toISOString();

/** The gateway user's email: the primary address, else the first, else the userName when it is one. */
function emailOf(user: UserModel): string {
  const candidate = (user.emails.find((e) => e.primary === true) ?? user.emails[0])?.value ?? (EMAIL.test(user.userName) ? user.userName : undefined);
  if (candidate === undefined || !EMAIL.test(candidate)) {
    throw new ScimError(400, 'invalidValue', 'A user needs an email address (in "emails", or as the userName): people are matched by email when they sign in.');
  }
  return candidate.toLowerCase();
}

function displayNameOf(user: UserModel): string | null {
  const name = user.displayName ?? user.formatted ?? [user.givenName, user.familyName].filter((x) => x).join(' ');
  return name === '' ? null : name.slice(0, 200);
}

/** A user as the body of a POST or PUT gives it (RFC 7644: PUT replaces every attribute it may write). */
function userFromBody(body: Record<string, unknown>): UserModel {
  const name = body.name;
  if (name !== undefined && name !== null && (typeof name !== 'object' || Array.isArray(name))) throw new ScimError(400, 'invalidValue', 'name must be an object.');
  const n = (name ?? {}) as Record<string, unknown>;
  return {
    userName: str(body.userName, 'userName', false),
    externalId: str(body.externalId, 'externalId', true),
    givenName: str(n.givenName, 'name.givenName', true),
    familyName: str(n.familyName, 'name.familyName', true),
    formatted: str(n.formatted, 'name.formatted', true),
    displayName: str(body.displayName, 'displayName', true),
    emails: emailList(body.emails),
    active: body.active === undefined || body.active === null ? true : bool(body.active, 'active'),
  };
}

function userModel(row: ScimUserRow): UserModel {
  return {
    userName: row.user_name,
    externalId: row.external_id,
    givenName: row.given_name,
    familyName: row.family_name,
    formatted: null,
    displayName: row.display_name,
    emails: row.emails === null ? [] : (JSON.parse(row.emails) as ScimEmail[]),
    active: row.active === 1,
  };
}

/** What the API reference says of each SCIM route, by name. */
const SUMMARIES: Readonly<Record<string, string>> = Object.freeze({
  service_provider_config: 'What this SCIM service supports',
  resource_types: 'List the resource types',
  resource_type: 'Get a resource type',
  schemas: 'List the schemas',
  schema: 'Get a schema',
  'users.list': 'List users',
  'users.create': 'Provision a user',
  'users.get': 'Get a user',
  'users.replace': 'Replace a user',
  'users.patch': 'Change a user',
  'users.delete': 'Deprovision a user',
  'groups.list': 'List groups',
  'groups.create': 'Create a group',
  'groups.get': 'Get a group',
  'groups.replace': 'Replace a group',
  'groups.patch': 'Change a group (members)',
  'groups.delete': 'Delete a group',
});

/** The query of a list, read by hand (RFC 7644 clamps out-of-range values instead of refusing them); for the API reference. */
const ListQuery = v.strictObject({
  filter: v.optional(v.pipe(v.string(), v.description('A SCIM filter, e.g. `userName eq "ada@example.com"`.'))),
  startIndex: v.optional(v.pipe(v.string(), v.description('The first result, from 1.'))),
  count: v.optional(v.pipe(v.string(), v.description(`Results per page, at most ${MAX_RESULTS}.`))),
  excludedAttributes: v.optional(v.pipe(v.string(), v.description('`members` leaves groups\' members out.'))),
});

/** A SCIM error (RFC 7644 §3.12), as every SCIM route answers errors; for the API reference. */
const ErrorSchema = v.object({ schemas: v.tuple([v.literal(ERROR_SCHEMA)]), status: v.string(), scimType: v.optional(v.string()), detail: v.string() });

function scimDoc(name: string, method: RouteDefinition['method']): RouteDoc {
  return {
    summary: SUMMARIES[name] ?? name,
    description: 'SCIM 2.0 (RFC 7643/7644) for identity providers such as Okta and Microsoft Entra; users in groups mapped to workspaces become their members.',
    tags: ['SCIM 2.0'],
    bearer: 'a SCIM token (from `POST /v1/scim/tokens`, or `GATEWAY_SCIM_TOKEN`)',
    ...(name.endsWith('.list') ? { query: ListQuery } : {}),
    ...(method === 'GET' || method === 'DELETE' ? {} : { bodyType: 'application/scim+json' }),
    responseTypes: ['application/scim+json'],
    error: ErrorSchema,
  };
}

/** Builds the SCIM routes. */
export function scimRoutes(o: ScimServiceOptions): RouteDefinition[] {
  const base = `${o.publicUrl}${o.prefix}`;
  const presentUser = async (db: SqlClient, row: ScimUserRow) => {
    const name: Record<string, string> = {};
    if (row.given_name !== null) name.givenName = row.given_name;
    if (row.family_name !== null) name.familyName = row.family_name;
    const formatted = [row.given_name, row.family_name].filter((x) => x).join(' ');
    if (formatted !== '') name.formatted = formatted;
    return {
      schemas: [USER_SCHEMA],
      id: row.user_id,
      ...(row.external_id === null ? {} : { externalId: row.external_id }),
      userName: row.user_name,
      name,
      ...(row.display_name === null ? {} : { displayName: row.display_name }),
      emails: row.emails === null ? [] : (JSON.parse(row.emails) as ScimEmail[]),
      active: row.active === 1,
      groups: (await userGroups(db, row.user_id)).map((g) => ({ value: g.id, display: g.display_name, $ref: `${base}/Groups/${g.id}` })),
      meta: { resourceType: 'User', created: iso(row.created_at), lastModified: iso(row.updated_at), location: `${base}/Users/${row.user_id}` },
    };
  };
  const presentGroup = async (db: SqlClient, row: ScimGroupRow, withMembers: boolean) => ({
    schemas: [GROUP_SCHEMA],
    id: row.id,
    ...(row.external_id === null ? {} : { externalId: row.external_id }),
    displayName: row.display_name,
    ...(withMembers ? { members: (await groupMembers(db, row.id)).map((m) => ({ value: m.user_id, display: m.user_name, $ref: `${base}/Users/${m.user_id}` })) } : {}),
    meta: { resourceType: 'Group', created: iso(row.created_at), lastModified: iso(row.updated_at), location: `${base}/Groups/${row.id}` },
  });

  const authorize = async (ctx: RequestContext, scim: Scim): Promise<void> => {
    const m = /^Bearer\s+(\S{1,512})\s*$/i.exec(ctx.header('authorization') ?? '');
    if (m === null) throw new ScimError(401, null, 'A SCIM request needs "Authorization: Bearer <SCIM token>" (POST /v1/scim/tokens, or GATEWAY_SCIM_TOKEN).');
    const digest = hashSecret(m[1]!);
    if (o.envTokenDigest !== null && digest === o.envTokenDigest) return;
    const row = await scim.db().get<{ id: string; last_used_at: number | string | null }>('SELECT id, last_used_at FROM cp_scim_tokens WHERE token_hash = ?', [digest]);
    if (row === undefined) throw new ScimError(401, null, 'Unknown SCIM token.');
    const now = scim.now();
    if (row.last_used_at === null || Number(row.last_used_at) < now - LAST_USED_EVERY_MS) await scim.tables.update('cp_scim_tokens', { id: row.id }, { last_used_at: now });
  };

  const write = <T>(scim: Scim, fn: (tx: SqlClient, touched: Set<string>) => Promise<T>) => scimWrite(scim, fn);

  /** Stores a user's attributes (after a create, PUT or PATCH); userName and email stay unique. */
  const saveUser = async (tx: SqlClient, scim: Scim, id: string, user: UserModel, existing: boolean): Promise<void> => {
    const now = scim.now();
    const email = emailOf(user);
    const key = nameKey(user.userName);
    const clash = await tx.get<{ user_id: string }>('SELECT user_id FROM cp_scim_users WHERE user_name_key = ? AND user_id <> ?', [key, id]);
    if (clash !== undefined) throw new ScimError(409, 'uniqueness', `A user with userName "${user.userName.slice(0, 200)}" exists.`);
    const owner = await scim.people.userByEmail(email, tx);
    if (owner !== null && owner.id !== id) throw new ScimError(409, 'uniqueness', `Another user has the email ${email}.`);
    await scim.people.updateUser(id, { email, name: displayNameOf(user) }, tx);
    const fields = {
      user_name: user.userName,
      user_name_key: key,
      external_id: user.externalId,
      active: user.active ? 1 : 0,
      given_name: user.givenName,
      family_name: user.familyName,
      display_name: user.displayName,
      emails: JSON.stringify(user.emails),
      updated_at: now,
    };
    if (existing) await scim.tables.update('cp_scim_users', { user_id: id }, fields, tx);
    else await scim.tables.insert('cp_scim_users', { user_id: id, ...fields, created_at: now }, tx);
  };

  const setMembers = async (tx: SqlClient, scim: Scim, groupId: string, before: ReadonlySet<string>, after: ReadonlySet<string>, touched: Set<string>) => {
    const added = [...after].filter((id) => !before.has(id));
    const known = await knownUsers(tx, added);
    const unknown = added.find((id) => !known.has(id));
    if (unknown !== undefined) throw new ScimError(400, 'invalidValue', `No user "${unknown.slice(0, 64)}": a group's members must be provisioned users.`);
    const now = scim.now();
    for (const id of added) {
      await scim.tables.insert('cp_scim_group_members', { group_id: groupId, user_id: id, created_at: now }, tx);
      touched.add(id);
    }
    for (const id of before) {
      if (after.has(id)) continue;
      await tx.run('DELETE FROM cp_scim_group_members WHERE group_id = ? AND user_id = ?', [groupId, id]);
      touched.add(id);
    }
  };

  const groupModel = async (db: SqlClient, row: ScimGroupRow): Promise<GroupModel> => ({
    displayName: row.display_name,
    externalId: row.external_id,
    members: new Set((await groupMembers(db, row.id)).map((m) => m.user_id)),
  });

  const saveGroup = async (tx: SqlClient, scim: Scim, id: string, group: GroupModel): Promise<void> => {
    await scim.tables.update('cp_scim_groups', { id }, { display_name: group.displayName, display_name_key: nameKey(group.displayName), external_id: group.externalId, updated_at: scim.now() }, tx);
  };

  const body = (ctx: RequestContext): Record<string, unknown> => {
    try {
      return parseJsonObject(ctx.rawBody ?? Buffer.alloc(0));
    } catch (err) {
      throw new ScimError(400, 'invalidSyntax', err instanceof GatewayError ? err.message : 'The request body is not valid JSON.');
    }
  };
  const query = (ctx: RequestContext) => new URLSearchParams(ctx.query);
  const withoutMembers = (q: URLSearchParams) => (q.get('excludedAttributes') ?? '').split(',').some((a) => a.trim().toLowerCase() === 'members');
  const userOr404 = async (db: SqlClient, id: string) => {
    const row = await scimUser(db, id);
    if (row === undefined) throw new ScimError(404, null, `No user "${id.slice(0, 64)}".`);
    return row;
  };
  const groupOr404 = async (db: SqlClient, id: string) => {
    const row = await scimGroup(db, id);
    if (row === undefined) throw new ScimError(404, null, `No group "${id.slice(0, 64)}".`);
    return row;
  };

  type Handler = (ctx: RequestContext, scim: Scim) => Promise<GatewayResponse>;
  const route = (name: string, method: RouteDefinition['method'], path: string, handler: Handler): RouteDefinition => ({
    name: `scim.${name}`,
    method,
    path: `${o.prefix}${path}`,
    kind: 'handler',
    doc: scimDoc(name, method),
    // A SCIM token, not a gateway key: checked here. Bodies (userName, emails; Okta sends a password) are never stored by log sinks.
    auth: false,
    sensitive: true,
    body: method === 'GET' || method === 'DELETE' ? 'none' : 'raw',
    async handler(ctx) {
      const scim = o.scim();
      try {
        await authorize(ctx, scim);
        return await handler(ctx, scim);
      } catch (err) {
        if (err instanceof ScimError) {
          const res = errorResponse(err);
          if (err.status === 401) res.headers['www-authenticate'] = 'Bearer realm="scim"';
          return res;
        }
        if (err instanceof GatewayError && err.status < 500) return errorResponse(new ScimError(err.status, null, err.message));
        throw err;
      }
    },
  });

  return [
    route('service_provider_config', 'GET', '/ServiceProviderConfig', async () => scimResponse(200, serviceProviderConfig(`${base}/ServiceProviderConfig`))),
    route('resource_types', 'GET', '/ResourceTypes', async () => listResponse(2, 1, resourceTypes(base))),
    route('resource_type', 'GET', '/ResourceTypes/:id', async (ctx) => {
      const found = resourceTypes(base).find((r) => r.id === ctx.params!.id);
      if (found === undefined) throw new ScimError(404, null, `No resource type "${ctx.params!.id!.slice(0, 64)}".`);
      return scimResponse(200, found);
    }),
    route('schemas', 'GET', '/Schemas', async () => listResponse(2, 1, schemas(base))),
    route('schema', 'GET', '/Schemas/:id', async (ctx) => {
      const found = schemas(base).find((s) => s.id === ctx.params!.id);
      if (found === undefined) throw new ScimError(404, null, `No schema "${ctx.params!.id!.slice(0, 128)}".`);
      return scimResponse(200, found);
    }),

    route('users.list', 'GET', '/Users', async (ctx, scim) => {
      const q = query(ctx);
      const where = parseFilter(q.get('filter') ?? undefined, 'User');
      const page = pageOf(q);
      const db = scim.db();
      const { total, rows } = await scimUsers(db, scim.people, where, page.startIndex, page.count);
      return listResponse(total, page.startIndex, await Promise.all(rows.map((r) => presentUser(db, r))));
    }),
    route('users.create', 'POST', '/Users', async (ctx, scim) => {
      const user = userFromBody(body(ctx));
      const email = emailOf(user);
      const id = await write(scim, async (tx, touched) => {
        // A person added through the admin API (or signed in) before is the same user: linked, not duplicated.
        const existing = await scim.people.userByEmail(email, tx);
        if (existing !== null && (await scimUser(tx, existing.id)) !== undefined) throw new ScimError(409, 'uniqueness', `A user with the email ${email} is provisioned already.`);
        const userId = existing?.id ?? (await scim.people.createUser(email, displayNameOf(user), tx)).id;
        await saveUser(tx, scim, userId, user, false);
        touched.add(userId);
        return userId;
      });
      const db = scim.db();
      const created = await presentUser(db, (await scimUser(db, id))!);
      return scimResponse(201, created, { location: created.meta.location });
    }),
    route('users.get', 'GET', '/Users/:id', async (ctx, scim) => {
      const db = scim.db();
      return scimResponse(200, await presentUser(db, await userOr404(db, ctx.params!.id!)));
    }),
    route('users.replace', 'PUT', '/Users/:id', async (ctx, scim) => {
      const user = userFromBody(body(ctx));
      const id = ctx.params!.id!;
      await write(scim, async (tx, touched) => {
        await userOr404(tx, id);
        await saveUser(tx, scim, id, user, true);
        touched.add(id);
      });
      const db = scim.db();
      return scimResponse(200, await presentUser(db, (await scimUser(db, id))!));
    }),
    route('users.patch', 'PATCH', '/Users/:id', async (ctx, scim) => {
      const ops = operations(body(ctx));
      const id = ctx.params!.id!;
      await write(scim, async (tx, touched) => {
        const user = userModel(await userOr404(tx, id));
        patchUser(user, ops);
        await saveUser(tx, scim, id, user, true);
        touched.add(id);
      });
      const db = scim.db();
      return scimResponse(200, await presentUser(db, (await scimUser(db, id))!));
    }),
    route('users.delete', 'DELETE', '/Users/:id', async (ctx, scim) => {
      const id = ctx.params!.id!;
      await write(scim, async (tx, touched) => {
        await userOr404(tx, id);
        await tx.run('DELETE FROM cp_scim_group_members WHERE user_id = ?', [id]);
        await tx.run('DELETE FROM cp_scim_users WHERE user_id = ?', [id]);
        touched.add(id);
      });
      // The keys reconciling disabled stay disabled for good: the person is gone, not paused.
      await scim.db().run('DELETE FROM cp_scim_suspended_keys WHERE user_id = ?', [id]);
      return scimResponse(204, null);
    }),

    route('groups.list', 'GET', '/Groups', async (ctx, scim) => {
      const q = query(ctx);
      const where = parseFilter(q.get('filter') ?? undefined, 'Group');
      const page = pageOf(q);
      const db = scim.db();
      const { total, rows } = await scimGroups(db, where, page.startIndex, page.count);
      const members = !withoutMembers(q);
      return listResponse(total, page.startIndex, await Promise.all(rows.map((r) => presentGroup(db, r, members))));
    }),
    route('groups.create', 'POST', '/Groups', async (ctx, scim) => {
      const b = body(ctx);
      const group: GroupModel = {
        displayName: str(b.displayName, 'displayName', false),
        externalId: str(b.externalId, 'externalId', true),
        members: new Set(b.members === undefined || b.members === null ? [] : memberIds(b.members)),
      };
      const id = randomUUID();
      await write(scim, async (tx, touched) => {
        const now = scim.now();
        await scim.tables.insert('cp_scim_groups', { id, display_name: group.displayName, display_name_key: nameKey(group.displayName), external_id: group.externalId, created_at: now, updated_at: now }, tx);
        await setMembers(tx, scim, id, new Set(), group.members, touched);
      });
      const db = scim.db();
      const created = await presentGroup(db, (await scimGroup(db, id))!, true);
      return scimResponse(201, created, { location: created.meta.location });
    }),
    route('groups.get', 'GET', '/Groups/:id', async (ctx, scim) => {
      const db = scim.db();
      return scimResponse(200, await presentGroup(db, await groupOr404(db, ctx.params!.id!), !withoutMembers(query(ctx))));
    }),
    route('groups.replace', 'PUT', '/Groups/:id', async (ctx, scim) => {
      const b = body(ctx);
      const id = ctx.params!.id!;
      await write(scim, async (tx, touched) => {
        const row = await groupOr404(tx, id);
        const before = await groupModel(tx, row);
        const after: GroupModel = {
          displayName: str(b.displayName, 'displayName', false),
          externalId: str(b.externalId, 'externalId', true),
          members: new Set(b.members === undefined || b.members === null ? [] : memberIds(b.members)),
        };
        await saveGroup(tx, scim, id, after);
        await setMembers(tx, scim, id, before.members, after.members, touched);
        // A new name or external id may match other mappings: every member's memberships are recomputed.
        for (const m of after.members) touched.add(m);
      });
      const db = scim.db();
      return scimResponse(200, await presentGroup(db, (await scimGroup(db, id))!, true));
    }),
    route('groups.patch', 'PATCH', '/Groups/:id', async (ctx, scim) => {
      const ops = operations(body(ctx));
      const id = ctx.params!.id!;
      await write(scim, async (tx, touched) => {
        const row = await groupOr404(tx, id);
        const before = await groupModel(tx, row);
        const after: GroupModel = { ...before, members: new Set(before.members) };
        patchGroup(after, ops);
        if (after.displayName !== before.displayName || after.externalId !== before.externalId) {
          await saveGroup(tx, scim, id, after);
          for (const m of after.members) touched.add(m);
        } else await scim.tables.update('cp_scim_groups', { id }, { updated_at: scim.now() }, tx);
        await setMembers(tx, scim, id, before.members, after.members, touched);
      });
      // 204, as Entra and Okta expect: a group's member list can be long, and neither reads it back.
      return scimResponse(204, null);
    }),
    route('groups.delete', 'DELETE', '/Groups/:id', async (ctx, scim) => {
      const id = ctx.params!.id!;
      await write(scim, async (tx, touched) => {
        await groupOr404(tx, id);
        for (const m of await groupMembers(tx, id)) touched.add(m.user_id);
        await tx.run('DELETE FROM cp_scim_group_members WHERE group_id = ?', [id]);
        await tx.run('DELETE FROM cp_scim_groups WHERE id = ?', [id]);
      });
      return scimResponse(204, null);
    }),
  ];
}
