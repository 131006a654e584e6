import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { GatewayPlugin } from '../../../core/index.js';
import { controlPlane } from '../../../plugins/control-plane/index.js';
import { scim } from '../../../plugins/scim/index.js';
import { postgresStore } from '../../../plugins/stores/postgres/index.js';
import { sqliteStore } from '../../../plugins/stores/sqlite/index.js';
import { serveGateway } from '../../helpers/serve.js';
import { DATABASE_URL, dropSchema, requireService, uniqueSchema } from '../../helpers/services.js';

const ADMIN = 'admin-bootstrap-key-scim-000001';
const ENV_TOKEN = 'scim-env-token-0123456789abcdefghijklmnop';
const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const LIST = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';

type Json = Record<string, any>;
interface Reply {
  status: number;
  body: Json;
  headers: Headers;
}

/**
 * SCIM on one SQL store: the admin routes (tokens, group → workspace mappings), the SCIM service, and the
 * request sequences Okta and Microsoft Entra send according to their public SCIM documentation.
 */
function suite(name: string, makeStore: () => Promise<(() => GatewayPlugin) | null>) {
  describe(`SCIM on ${name}`, () => {
    let store: (() => GatewayPlugin) | null = null;
    let gw: Awaited<ReturnType<typeof serveGateway>>;
    const ids: Json = {};
    const keys: Record<string, string> = {};
    let token = '';

    const send = async (method: string, url: string, headers: Record<string, string>, body?: unknown): Promise<Reply> => {
      const res = await fetch(`${gw.url}${url}`, {
        method,
        headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/scim+json; charset=utf-8' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: text === '' ? {} : JSON.parse(text), headers: res.headers };
    };
    const admin = (method: string, path: string, body?: unknown, key = ADMIN) => send(method, `/v1${path}`, { 'x-gateway-api-key': key }, body);
    const scimCall = (method: string, path: string, body?: unknown, bearer = token) => send(method, `/scim/v2${path}`, { authorization: `Bearer ${bearer}`, accept: 'application/scim+json' }, body);
    const expectStatus = async (p: Promise<Reply>, status: number) => {
      const r = await p;
      expect(r.status, JSON.stringify(r.body)).toBe(status);
      return r.body;
    };
    const members = async (ws: string) => (await expectStatus(admin('GET', `/workspaces/${ws}/members`), 200)).data as Json[];
    const userKeys = async (ws: string) => (await expectStatus(admin('GET', `/api-keys?workspace_id=${ws}&type=workspace-user`), 200)).data as Json[];

    beforeAll(async () => {
      store = await makeStore();
      if (store === null) return;
      gw = await serveGateway({
        plugins: [store(), controlPlane({ bootstrapKey: ADMIN, dataDir: await mkdtemp(join(tmpdir(), 'gw-scim-')), announce: () => undefined }), scim({ token: ENV_TOKEN })],
      });
      await gw.gateway.ready;
      ids.eng = (await expectStatus(admin('POST', '/workspaces', { name: 'Engineering', slug: 'eng' }), 200)).id;
      ids.ops = (await expectStatus(admin('POST', '/workspaces', { name: 'Operations', slug: 'ops' }), 200)).id;
      keys.eng = (await expectStatus(admin('POST', '/api-keys', { type: 'workspace-service', name: 'eng', workspace_id: ids.eng }), 200)).key;
      keys.engOrg = (await expectStatus(admin('POST', '/api-keys', { type: 'workspace-service', name: 'eng org scopes', workspace_id: ids.eng, scopes: ['organisation.read', 'organisation.update'] }), 200)).key;
      keys.orgReader = (await expectStatus(admin('POST', '/api-keys', { type: 'organisation-service', name: 'reader', scopes: ['organisation.read'] }), 200)).key;
      await expectStatus(admin('PUT', '/organisation/settings', { user_api_key_auto_create: true }), 200);
      const created = await expectStatus(admin('POST', '/scim/tokens', { name: 'Okta' }), 200);
      token = created.token;
    });

    afterAll(async () => {
      if (store === null) return;
      await gw?.close();
    });

    const it = (title: string, fn: () => Promise<void>) =>
      test(title, async (ctx) => {
        if (store === null) ctx.skip();
        await fn();
      });

    it('SCIM tokens: shown once, listed masked, used as bearer tokens, refused once deleted; GATEWAY_SCIM_TOKEN works too', async () => {
      expect(token).toMatch(/^scim-[A-Za-z0-9_-]{43}$/);
      const list = await expectStatus(admin('GET', '/scim/tokens'), 200);
      expect(list.total_count).toBe(1);
      expect(list.data[0]).toMatchObject({ object: 'scim-token', name: 'Okta', masked_token: `scim****${token.slice(-4)}` });
      expect(JSON.stringify(list)).not.toContain(token);
      expect((await expectStatus(scimCall('GET', '/Users'), 200)).schemas).toEqual([LIST]);
      expect((await expectStatus(admin('GET', '/scim/tokens'), 200)).data[0].last_used_at).not.toBeNull();
      await expectStatus(scimCall('GET', '/Users', undefined, ENV_TOKEN), 200);

      const spare = await expectStatus(admin('POST', '/scim/tokens', { name: 'spare' }), 200);
      await expectStatus(scimCall('GET', '/Users', undefined, spare.token), 200);
      await expectStatus(admin('DELETE', `/scim/tokens/${spare.id}`), 200);
      const refused = await scimCall('GET', '/Users', undefined, spare.token);
      expect(refused.status).toBe(401);
      expect(refused.body).toMatchObject({ schemas: [ERROR], status: '401', detail: 'Unknown SCIM token.' });
      expect(refused.headers.get('www-authenticate')).toContain('Bearer');
      // No header, a gateway key instead of a SCIM token: 401 too.
      expect((await send('GET', '/scim/v2/Users', {})).status).toBe(401);
      expect((await scimCall('GET', '/Users', undefined, ADMIN)).status).toBe(401);
      await expectStatus(admin('DELETE', `/scim/tokens/${spare.id}`), 404);
    });

    it('the admin routes are organisation-level and scoped: 403 for a workspace key or a missing scope', async () => {
      const ws = await admin('POST', '/scim/tokens', { name: 'x' }, keys.engOrg);
      expect(ws.status).toBe(403);
      expect(ws.body.error.message).toMatch(/needs an organisation-level API key/);
      expect((await admin('GET', '/scim/workspaces', undefined, keys.engOrg)).body.error.message).toMatch(/needs an organisation-level API key/);
      expect((await admin('POST', '/scim/workspaces', { workspace_id: 'eng', role: 'member', scim_group_name: 'x' }, keys.engOrg)).status).toBe(403);
      expect((await admin('GET', '/scim/workspaces', undefined, keys.eng)).body.error.message).toMatch(/lacks the "organisation.read" scope/);
      const scope = await admin('POST', '/scim/workspaces', { workspace_id: 'eng', role: 'member', scim_group_name: 'x' }, keys.orgReader);
      expect(scope.status).toBe(403);
      expect(scope.body.error.message).toMatch(/lacks the "organisation.update" scope/);
      expect((await admin('DELETE', '/scim/tokens/whatever', undefined, keys.orgReader)).status).toBe(403);
      await expectStatus(admin('GET', '/scim/workspaces', undefined, keys.orgReader), 200);
      await expectStatus(admin('GET', '/scim/tokens', undefined, keys.orgReader), 200);
    });

    it('POST /scim/workspaces: workspace_id, a role in any case, exactly one of scim_group_id and scim_group_name', async () => {
      const bad = async (body: Json, param: string | null, message: RegExp) => {
        const r = await admin('POST', '/scim/workspaces', body);
        expect(r.status, JSON.stringify(r.body)).toBe(400);
        expect(r.body.error).toMatchObject({ code: 'invalid_request', param });
        expect(r.body.error.message).toMatch(message);
      };
      await bad({ workspace_id: 'eng', role: 'member', scim_group_id: 'a', scim_group_name: 'b' }, 'scim_group_id', /exactly one of scim_group_id and scim_group_name/);
      await bad({ workspace_id: 'eng', role: 'member' }, 'scim_group_id', /exactly one of/);
      await bad({ workspace_id: 'eng', role: 'owner', scim_group_name: 'b' }, 'role', /"admin", "manager" or "member"/);
      await bad({ role: 'member', scim_group_name: 'b' }, 'workspace_id', /.+/);
      await bad({ workspace_id: 'eng', role: 'member', scim_group_name: '' }, 'scim_group_name', /must not be empty/);
      await bad({ workspace_id: 'eng', role: 'member', scim_group_name: 'b', extra: 1 }, 'extra', /.+/);
      expect((await admin('POST', '/scim/workspaces', { workspace_id: 'nope', role: 'member', scim_group_name: 'b' })).status).toBe(404);

      const m = await expectStatus(admin('POST', '/scim/workspaces', { workspace_id: 'eng', role: 'MANAGER', scim_group_name: 'Engineers' }), 200);
      expect(m).toMatchObject({ object: 'scim-workspace-mapping', workspace_id: ids.eng, role: 'manager', scim_group_id: null, scim_group_name: 'Engineers' });
      ids.engMapping = m.id;
      const dup = await admin('POST', '/scim/workspaces', { workspace_id: ids.eng, role: 'member', scim_group_name: 'engineers' });
      expect(dup.status).toBe(409);
      expect((await expectStatus(admin('GET', `/scim/workspaces/${m.id}`), 200)).role).toBe('manager');
      const list = await expectStatus(admin('GET', '/scim/workspaces?workspace_id=eng'), 200);
      expect(list).toMatchObject({ object: 'list', total_count: 1 });
      expect((await expectStatus(admin('GET', '/scim/workspaces?workspace_id=ops'), 200)).total_count).toBe(0);
      await expectStatus(admin('GET', '/scim/workspaces/unknown-mapping'), 404);
    });

    it('the discovery endpoints: ServiceProviderConfig, ResourceTypes, Schemas', async () => {
      const spc = await expectStatus(scimCall('GET', '/ServiceProviderConfig'), 200);
      expect(spc).toMatchObject({ patch: { supported: true }, filter: { supported: true, maxResults: 100 }, bulk: { supported: false } });
      expect(spc.authenticationSchemes[0].type).toBe('oauthbearertoken');
      const types = await expectStatus(scimCall('GET', '/ResourceTypes'), 200);
      expect(types.Resources.map((r: Json) => r.endpoint)).toEqual(['/Users', '/Groups']);
      expect((await expectStatus(scimCall('GET', '/ResourceTypes/User'), 200)).schema).toBe(USER);
      const schemas = await expectStatus(scimCall('GET', '/Schemas'), 200);
      expect(schemas.Resources.map((s: Json) => s.id)).toEqual([USER, GROUP]);
      expect((await expectStatus(scimCall('GET', `/Schemas/${GROUP}`), 200)).name).toBe('Group');
      expect((await scimCall('GET', '/Schemas/urn:nothing')).status).toBe(404);
    });

    it('the Okta sequence: look up, create, read, push a group, add to it (membership), remove from it (membership and key gone), deactivate', async () => {
      // Okta: GET /Users?filter=userName eq "…"&startIndex=1&count=100 before creating.
      const lookup = await expectStatus(scimCall('GET', `/Users?filter=${encodeURIComponent('userName eq "test.user@okta.local"')}&startIndex=1&count=100`), 200);
      expect(lookup).toMatchObject({ schemas: [LIST], totalResults: 0, startIndex: 1, itemsPerPage: 0, Resources: [] });
      const created = await scimCall('POST', '/Users', {
        schemas: [USER],
        userName: 'test.user@okta.local',
        name: { givenName: 'Test', familyName: 'User' },
        emails: [{ primary: true, value: 'test.user@okta.local', type: 'work' }],
        displayName: 'Test User',
        locale: 'en-US',
        externalId: '00ujl29u0le5T6Aj10h7',
        groups: [],
        password: '1mz050nq',
        active: true,
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      expect(created.headers.get('content-type')).toMatch(/^application\/scim\+json/);
      const user = created.body;
      expect(user).toMatchObject({
        schemas: [USER],
        userName: 'test.user@okta.local',
        externalId: '00ujl29u0le5T6Aj10h7',
        name: { givenName: 'Test', familyName: 'User' },
        displayName: 'Test User',
        emails: [{ primary: true, value: 'test.user@okta.local', type: 'work' }],
        active: true,
        groups: [],
        meta: { resourceType: 'User' },
      });
      expect(created.headers.get('location')).toBe(`/scim/v2/Users/${user.id}`);
      expect(user.password).toBeUndefined();
      expect(gw.logs.text()).not.toContain('1mz050nq');
      ids.okta = user.id;
      // The lookup finds it now, whatever the case of the userName; a second create is a 409 uniqueness.
      const found = await expectStatus(scimCall('GET', `/Users?filter=${encodeURIComponent('userName eq "Test.User@okta.local"')}&startIndex=1&count=100`), 200);
      expect(found.totalResults).toBe(1);
      expect(found.Resources[0].id).toBe(user.id);
      const again = await scimCall('POST', '/Users', { schemas: [USER], userName: 'test.user@okta.local', emails: [{ value: 'other@okta.local' }] });
      expect(again.status).toBe(409);
      expect(again.body).toMatchObject({ schemas: [ERROR], status: '409', scimType: 'uniqueness' });
      expect((await expectStatus(scimCall('GET', `/Users/${user.id}`), 200)).userName).toBe('test.user@okta.local');
      // Profile update: Okta PUTs the whole user.
      const put = await expectStatus(scimCall('PUT', `/Users/${user.id}`, { schemas: [USER], id: user.id, userName: 'test.user@okta.local', name: { givenName: 'Tess', familyName: 'User' }, emails: [{ primary: true, value: 'test.user@okta.local', type: 'work' }], active: true }), 200);
      expect(put.name.givenName).toBe('Tess');

      // Push group: create it empty, find it by displayName, rename it, add the user.
      const group = await expectStatus(scimCall('POST', '/Groups', { schemas: [GROUP], displayName: 'Engineering team', members: [] }), 201);
      ids.oktaGroup = group.id;
      const byName = await expectStatus(scimCall('GET', `/Groups?filter=${encodeURIComponent('displayName eq "Engineering team"')}&startIndex=1&count=100`), 200);
      expect(byName.Resources.map((g: Json) => g.id)).toEqual([group.id]);
      expect(await expectStatus(scimCall('PATCH', `/Groups/${group.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', value: { id: group.id, displayName: 'Engineers' } }] }), 204)).toEqual({});
      expect((await members(ids.eng)).length).toBe(0);
      await expectStatus(scimCall('PATCH', `/Groups/${group.id}`, { schemas: [PATCH], Operations: [{ op: 'add', path: 'members', value: [{ value: user.id, display: 'test.user@okta.local' }] }] }), 204);

      // Engineers is mapped to eng as manager: the user is a member, with an auto-created user key.
      const joined = await members(ids.eng);
      expect(joined).toEqual([expect.objectContaining({ user_id: user.id, email: 'test.user@okta.local', role: 'manager', name: 'Tess User' })]);
      const [key] = await userKeys(ids.eng);
      expect(key).toMatchObject({ user_id: user.id, status: 'active', name: 'test.user@okta.local (auto-created)' });
      expect(key.key).toBeUndefined();
      const inGroup = await expectStatus(scimCall('GET', `/Users/${user.id}`), 200);
      expect(inGroup.groups).toEqual([expect.objectContaining({ value: group.id, display: 'Engineers' })]);
      expect((await expectStatus(scimCall('GET', `/Groups/${group.id}`), 200)).members).toEqual([expect.objectContaining({ value: user.id, display: 'test.user@okta.local' })]);

      // Okta removes a member with a value filter in the path.
      await expectStatus(scimCall('PATCH', `/Groups/${group.id}`, { schemas: [PATCH], Operations: [{ op: 'remove', path: `members[value eq "${user.id}"]` }] }), 204);
      expect(await members(ids.eng)).toEqual([]);
      expect((await userKeys(ids.eng))[0]).toMatchObject({ id: key.id, status: 'disabled' });
      // Added back: the membership returns and the key SCIM disabled is turned back on (no second key).
      await expectStatus(scimCall('PATCH', `/Groups/${group.id}`, { schemas: [PATCH], Operations: [{ op: 'add', path: 'members', value: [{ value: user.id }] }] }), 204);
      expect((await members(ids.eng)).map((m) => m.role)).toEqual(['manager']);
      expect((await userKeys(ids.eng)).map((k) => [k.id, k.status])).toEqual([[key.id, 'active']]);

      // Deactivation: Okta PATCHes active false with no path. Membership stays recorded, but nothing works.
      const off = await expectStatus(scimCall('PATCH', `/Users/${user.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', value: { active: false } }] }), 200);
      expect(off.active).toBe(false);
      expect(await members(ids.eng)).toEqual([]);
      expect((await userKeys(ids.eng))[0].status).toBe('disabled');
      const on = await expectStatus(scimCall('PATCH', `/Users/${user.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', value: { active: true } }] }), 200);
      expect(on.active).toBe(true);
      expect((await members(ids.eng)).length).toBe(1);
      expect((await userKeys(ids.eng))[0].status).toBe('active');

      // Deleting the group removes the memberships it gave.
      await expectStatus(scimCall('DELETE', `/Groups/${group.id}`), 204);
      expect(await members(ids.eng)).toEqual([]);
      expect((await scimCall('GET', `/Groups/${group.id}`)).status).toBe(404);
    });

    it('the Microsoft Entra sequence: filters, create with the enterprise extension, PATCH with "Replace", value-filtered paths and string booleans, groups by externalId, members removed by value list, delete', async () => {
      const userName = 'Test_User_ab6490ee-1e48-479e-a20b-2d77186b5dd1';
      expect((await expectStatus(scimCall('GET', `/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}`), 200)).totalResults).toBe(0);
      const user = await expectStatus(
        scimCall('POST', '/Users', {
          schemas: [USER, 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User'],
          externalId: '0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef',
          userName,
          active: true,
          emails: [{ primary: true, type: 'work', value: 'Test_User_fd0ea19b-0777-472c-9f96-4f70d2226f2e@testuser.com' }],
          meta: { resourceType: 'User' },
          name: { formatted: 'givenName familyName', familyName: 'familyName', givenName: 'givenName' },
          roles: [],
          'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User': { department: 'R&D', employeeNumber: '42' },
        }),
        201,
      );
      ids.entra = user.id;
      expect(user).toMatchObject({ userName, externalId: '0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef', active: true, name: { givenName: 'givenName', familyName: 'familyName' } });
      expect((await expectStatus(scimCall('GET', `/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}`), 200)).Resources[0].id).toBe(user.id);
      expect((await expectStatus(scimCall('GET', `/Users?filter=${encodeURIComponent('externalId eq "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef"')}`), 200)).totalResults).toBe(1);
      expect((await expectStatus(scimCall('GET', `/Users?filter=${encodeURIComponent('userName eq "non-existent user"')}`), 200)).totalResults).toBe(0);

      const patched = await expectStatus(
        scimCall('PATCH', `/Users/${user.id}`, {
          schemas: [PATCH],
          Operations: [
            { op: 'Replace', path: 'emails[type eq "work"].value', value: 'updatedEmail@microsoft.com' },
            { op: 'Replace', path: 'name.familyName', value: 'updatedFamilyName' },
            { op: 'Add', path: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager', value: 'someone' },
            { op: 'Replace', path: 'title', value: 'Engineer' },
          ],
        }),
        200,
      );
      expect(patched.emails).toEqual([{ primary: true, type: 'work', value: 'updatedEmail@microsoft.com' }]);
      expect(patched.name.familyName).toBe('updatedFamilyName');
      const renamed = await expectStatus(scimCall('PATCH', `/Users/${user.id}`, { schemas: [PATCH], Operations: [{ op: 'Replace', path: 'userName', value: '5b50642d-79fc-4410-9e90-4c077cdd1a59@testuser.com' }] }), 200);
      expect(renamed.userName).toBe('5b50642d-79fc-4410-9e90-4c077cdd1a59@testuser.com');

      // Groups: Entra creates them with its own externalId; a mapping by that id makes members admins of ops.
      const group = await expectStatus(
        scimCall('POST', '/Groups', { schemas: [GROUP, 'http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group'], externalId: '8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159', displayName: 'displayName', meta: { resourceType: 'Group' } }),
        201,
      );
      expect(group.members).toEqual([]);
      const bare = await expectStatus(scimCall('GET', `/Groups/${group.id}?excludedAttributes=members`), 200);
      expect(bare.members).toBeUndefined();
      const byName = await expectStatus(scimCall('GET', `/Groups?excludedAttributes=members&filter=${encodeURIComponent('displayName eq "displayName"')}`), 200);
      expect(byName.Resources).toEqual([expect.objectContaining({ id: group.id, displayName: 'displayName' })]);
      expect(byName.Resources[0].members).toBeUndefined();
      await expectStatus(scimCall('PATCH', `/Groups/${group.id}`, { schemas: [PATCH], Operations: [{ op: 'Replace', path: 'displayName', value: '1879db59-3bdf-4490-ad68-ab880a269474updatedDisplayName' }] }), 204);
      await expectStatus(admin('POST', '/scim/workspaces', { workspace_id: ids.ops, role: 'Admin', scim_group_id: '8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159' }), 200);
      await expectStatus(scimCall('PATCH', `/Groups/${group.id}`, { schemas: [PATCH], Operations: [{ name: 'addMember', op: 'Add', path: 'members', value: [{ $ref: null, value: user.id }] }] }), 204);
      expect(await members(ids.ops)).toEqual([expect.objectContaining({ user_id: user.id, role: 'admin', email: 'updatedemail@microsoft.com' })]);
      // Entra removes members with a value list, not a filter.
      await expectStatus(scimCall('PATCH', `/Groups/${group.id}`, { schemas: [PATCH], Operations: [{ name: 'removeMember', op: 'Remove', path: 'members', value: [{ $ref: null, value: user.id }] }] }), 204);
      expect(await members(ids.ops)).toEqual([]);
      expect((await userKeys(ids.ops)).map((k) => k.status)).toEqual(['disabled']);
      await expectStatus(scimCall('PATCH', `/Groups/${group.id}`, { schemas: [PATCH], Operations: [{ op: 'Add', path: 'members', value: [{ value: user.id }] }] }), 204);
      // Entra disables with a string boolean.
      const disabled = await expectStatus(scimCall('PATCH', `/Users/${user.id}`, { schemas: [PATCH], Operations: [{ op: 'Replace', path: 'active', value: 'False' }] }), 200);
      expect(disabled.active).toBe(false);
      expect(await members(ids.ops)).toEqual([]);

      await expectStatus(scimCall('DELETE', `/Users/${user.id}`), 204);
      expect((await scimCall('GET', `/Users/${user.id}`)).status).toBe(404);
      expect((await expectStatus(scimCall('GET', `/Groups/${group.id}`), 200)).members).toEqual([]);
      // Deleted for good: the key stays disabled.
      await expectStatus(scimCall('DELETE', `/Groups/${group.id}`), 204);
      expect((await userKeys(ids.ops)).map((k) => k.status)).toEqual(['disabled']);
    });

    it('a membership added through the admin API is never changed by SCIM; deleting a mapping takes the memberships it gave', async () => {
      await expectStatus(admin('POST', `/workspaces/ops/members`, { email: 'manual@corp.example', role: 'member' }), 200);
      const person = await expectStatus(scimCall('POST', '/Users', { schemas: [USER], userName: 'manual@corp.example', emails: [{ value: 'manual@corp.example', primary: true }] }), 201);
      // The same person (by email), linked rather than duplicated.
      expect((await members(ids.ops)).map((m) => m.user_id)).toEqual([person.id]);
      const group = await expectStatus(scimCall('POST', '/Groups', { schemas: [GROUP], displayName: 'Ops admins', members: [{ value: person.id }] }), 201);
      const mapping = await expectStatus(admin('POST', '/scim/workspaces', { workspace_id: 'ops', role: 'admin', scim_group_id: group.id }), 200);
      // Mapped to eng as well, by name: a new membership there.
      const engMapping = await expectStatus(admin('POST', '/scim/workspaces', { workspace_id: 'eng', role: 'member', scim_group_name: 'ops admins' }), 200);
      expect((await members(ids.ops)).map((m) => m.role)).toEqual(['member']);
      expect((await members(ids.eng)).map((m) => [m.user_id, m.role])).toEqual([[person.id, 'member']]);
      await expectStatus(scimCall('PATCH', `/Groups/${group.id}`, { schemas: [PATCH], Operations: [{ op: 'remove', path: 'members' }] }), 204);
      expect((await members(ids.ops)).map((m) => m.role)).toEqual(['member']);
      expect(await members(ids.eng)).toEqual([]);
      await expectStatus(scimCall('PATCH', `/Groups/${group.id}`, { schemas: [PATCH], Operations: [{ op: 'add', path: 'members', value: [{ value: person.id }] }] }), 204);
      expect((await members(ids.eng)).length).toBe(1);
      await expectStatus(admin('DELETE', `/scim/workspaces/${engMapping.id}`), 200);
      expect(await members(ids.eng)).toEqual([]);
      await expectStatus(admin('DELETE', `/scim/workspaces/${mapping.id}`), 200);
      expect((await members(ids.ops)).length).toBe(1);
    });

    it('bad requests are SCIM errors: filters outside the subset, bad PATCH bodies, unknown members, bad JSON, unknown resources', async () => {
      const err = async (p: Promise<Reply>, status: number, scimType: string | null, detail: RegExp) => {
        const r = await p;
        expect(r.status, JSON.stringify(r.body)).toBe(status);
        expect(r.body).toMatchObject({ schemas: [ERROR], status: String(status) });
        if (scimType !== null) expect(r.body.scimType).toBe(scimType);
        expect(r.body.detail).toMatch(detail);
      };
      await err(scimCall('GET', `/Users?filter=${encodeURIComponent('userName co "test"')}`), 400, 'invalidFilter', /"eq" on userName/);
      await err(scimCall('GET', `/Users?filter=${encodeURIComponent('title eq "x"')}`), 400, 'invalidFilter', /"eq"/);
      await err(scimCall('GET', `/Groups?filter=${encodeURIComponent('displayName eq')}`), 400, 'invalidFilter', /not a valid SCIM filter/);
      await err(scimCall('GET', '/Users?count=abc'), 400, 'invalidValue', /"count" must be an integer/);
      await err(scimCall('PATCH', `/Users/${ids.okta}`, { schemas: [PATCH] }), 400, 'invalidSyntax', /Operations/);
      await err(scimCall('PATCH', `/Users/${ids.okta}`, { Operations: [{ op: 'move', path: 'active' }] }), 400, 'invalidSyntax', /"add", "replace" or "remove"/);
      await err(scimCall('PATCH', `/Users/${ids.okta}`, { Operations: [{ op: 'replace', path: 'active', value: 'maybe' }] }), 400, 'invalidValue', /active must be a boolean/);
      await err(scimCall('PATCH', `/Users/${ids.okta}`, { Operations: [{ op: 'remove', path: 'userName' }] }), 400, 'mutability', /userName/);
      await err(scimCall('PATCH', `/Users/${ids.okta}`, { Operations: [{ op: 'replace', path: 'emails[type eq', value: 'x' }] }), 400, 'invalidPath', /.+/);
      await err(scimCall('POST', '/Users', { schemas: [USER], userName: 'nomail' }), 400, 'invalidValue', /email/);
      await err(scimCall('POST', '/Users', { schemas: [USER] }), 400, 'invalidValue', /userName/);
      await err(scimCall('POST', '/Groups', { schemas: [GROUP], displayName: 'x', members: [{ value: 'not-a-user' }] }), 400, 'invalidValue', /No user "not-a-user"/);
      await err(send('POST', '/scim/v2/Users', { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' }), 400, 'invalidSyntax', /empty/);
      await err(scimCall('GET', '/Users/does-not-exist'), 404, null, /No user/);
      await err(scimCall('PATCH', '/Groups/does-not-exist', { Operations: [{ op: 'add', path: 'members', value: [] }] }), 404, null, /No group/);
      // Paging: startIndex from 1, count at most 100.
      const page = await expectStatus(scimCall('GET', '/Users?startIndex=2&count=1'), 200);
      expect(page).toMatchObject({ startIndex: 2, itemsPerPage: 1 });
      expect(page.totalResults).toBeGreaterThanOrEqual(2);
      expect((await expectStatus(scimCall('GET', '/Users?count=0'), 200)).Resources).toEqual([]);
    });
  });
}

suite('sqlite', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'gw-scim-sql-'));
  return () => sqliteStore({ dataDir: dir });
});

const schema = uniqueSchema('scim');
suite('postgres', async () => {
  if (!(await requireService('PostgreSQL', DATABASE_URL))) return null;
  return () => postgresStore({ url: DATABASE_URL, schema });
});

afterAll(async () => {
  if (await requireService('PostgreSQL', DATABASE_URL).catch(() => false)) await dropSchema(schema);
});
