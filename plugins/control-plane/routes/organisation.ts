import * as v from 'valibot';
import type { OrgSettings } from '../service.js';
import { ok, parseBody, requireOrgLevel, docsFor, type AdminRoute } from './http.js';

const doc = docsFor('Organisation');

export const MIN_SESSION_TTL_S = 900;

const SettingsBody = v.strictObject({
  user_api_key_rotation_period: v.optional(v.nullable(v.picklist(['weekly', 'monthly'], 'must be "weekly", "monthly" or null'))),
  user_api_key_auto_create: v.optional(v.boolean('must be a boolean')),
  session_settings: v.optional(
    v.strictObject({
      max_session_ttl: v.nullable(
        v.pipe(v.number('must be a number of seconds'), v.integer('must be an integer'), v.minValue(MIN_SESSION_TTL_S, `must be at least ${MIN_SESSION_TTL_S} seconds`)),
      ),
    }),
  ),
});

function present(settings: OrgSettings) {
  return { object: 'organisation-settings', ...settings };
}

export const organisationRoutes: AdminRoute[] = [
  {
    name: 'organisation.settings.get',
    method: 'GET',
    path: '/organisation/settings',
    scope: 'organisation.read',
    doc: doc('Get the organisation settings', { description: 'Needs an organisation-level key.' }),
    async handler(ctx, cp) {
      requireOrgLevel(ctx, 'Reading organisation settings');
      return ok(present(await cp.settings()));
    },
  },
  {
    name: 'organisation.settings.update',
    method: 'PUT',
    path: '/organisation/settings',
    scope: 'organisation.update',
    doc: doc('Update the organisation settings', { body: SettingsBody, description: 'Needs an organisation-level key. Fields left out keep their value.' }),
    async handler(ctx, cp) {
      requireOrgLevel(ctx, 'Changing organisation settings');
      const body = parseBody(ctx, SettingsBody);
      const org = (await cp.repo.organisation())!;
      const current = { ...(await cp.settings()) };
      const next: OrgSettings = {
        user_api_key_rotation_period: body.user_api_key_rotation_period !== undefined ? body.user_api_key_rotation_period : current.user_api_key_rotation_period,
        user_api_key_auto_create: body.user_api_key_auto_create ?? current.user_api_key_auto_create,
        session_settings: body.session_settings ?? current.session_settings,
      };
      await cp.repo.update('cp_organisations', { id: org.id }, { settings: JSON.stringify(next), updated_at: cp.now() });
      cp.invalidate();
      return ok(present(next));
    },
  },
];
