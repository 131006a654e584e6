import { describe, expect, test } from 'vitest';
import { createGateway, defineErrors, fieldSchema, GatewayError, TargetFields, type GatewayPlugin } from '../../core/index.js';
import { memoryLogger } from '../helpers/gateway.js';
import { serveGateway } from '../helpers/serve.js';

const plugin = (name: string, extra: Partial<GatewayPlugin> = {}, apply: GatewayPlugin['apply'] = () => undefined): GatewayPlugin => ({ name, apply, ...extra });
const boot = (plugins: GatewayPlugin[]) => createGateway({ plugins, logger: memoryLogger().logger });

describe('error codes declared by plugins', () => {
  test('a declared code answers with its status and type in the one envelope', async () => {
    const teapot = plugin('teapot', { errorCodes: { teapot_refused: { status: 418, type: 'teapot_error' } } }, (api) => {
      api.routes.add({ name: 'tea', method: 'GET', path: '/v1/tea', kind: 'handler', auth: false, handler: () => { throw new GatewayError('teapot_refused', 'No coffee here.', { param: 'cup' }); } });
    });
    const gw = await serveGateway({ plugins: [teapot] });
    const res = await fetch(`${gw.url}/v1/tea`);
    expect(res.status).toBe(418);
    expect(await res.json()).toEqual({ error: { message: 'No coffee here.', type: 'teapot_error', param: 'cup', code: 'teapot_refused' } });
    await gw.close();
  });

  test('an undeclared code is a programming error: building it never throws (it is the error path), a request answers 500 and the log names the code', async () => {
    const e = new GatewayError('never_declared_code', 'x');
    expect([e.code, e.status, e.type, e.resolved]).toEqual(['never_declared_code', 500, 'server_error', false]);
    const gw = await serveGateway({
      plugins: [plugin('sloppy', {}, (api) => api.routes.add({ name: 's', method: 'GET', path: '/v1/s', kind: 'handler', auth: false, handler: () => { throw new GatewayError('never_declared_code', 'x'); } }))],
    });
    const res = await fetch(`${gw.url}/v1/s`);
    expect(res.status).toBe(500);
    expect((await res.json()).error.code).toBe('internal_error');
    await gw.close();
    expect(gw.logs.lines().some((l) => l.code === 'never_declared_code' && String(l.msg).startsWith('unknown error code'))).toBe(true);
  });

  test('two gateways in one process give one code two meanings: each answers with its own, whether the error was built with defineErrors or bare', async () => {
    const strict = defineErrors({ shared_code: { status: 409, type: 'conflict_error' } });
    const lenient = defineErrors({ shared_code: { status: 422, type: 'invalid_request_error' } });
    const withCodes = (name: string, codes: typeof strict.codes, raise: () => never) =>
      plugin(name, { errorCodes: codes }, (api) => {
        api.routes.add({ name: 'raise', method: 'GET', path: '/v1/raise', kind: 'handler', auth: false, handler: raise });
        api.routes.add({ name: 'bare', method: 'GET', path: '/v1/bare', kind: 'handler', auth: false, handler: () => { throw new GatewayError('shared_code', 'bare'); } });
      });
    const a = await serveGateway({ plugins: [withCodes('strict', strict.codes, () => { throw strict('shared_code', 'no'); })] });
    const b = await serveGateway({ plugins: [withCodes('lenient', lenient.codes, () => { throw lenient('shared_code', 'no'); })] });
    try {
      for (const [gw, status, type] of [[a, 409, 'conflict_error'], [b, 422, 'invalid_request_error']] as const) {
        for (const path of ['/v1/raise', '/v1/bare']) {
          const res = await fetch(`${gw.url}${path}`);
          expect(res.status, path).toBe(status);
          expect((await res.json()).error).toMatchObject({ code: 'shared_code', type });
        }
      }
      // The factory's error carries its plugin's meaning from the start, in any gateway.
      expect([strict('shared_code', 'x').status, lenient('shared_code', 'x').status]).toEqual([409, 422]);
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('a code is checked per gateway: another gateway may give it another meaning; a core code or a bad status stops the boot', () => {
    const twice = () => plugin('twice', { errorCodes: { twice_code: { status: 409, type: 'conflict_error' } } });
    boot([twice()]);
    boot([twice()]);
    boot([plugin('other', { errorCodes: { twice_code: { status: 400, type: 'invalid_request_error' } } })]);
    expect(() => boot([plugin('core-clash', { errorCodes: { not_found: { status: 404, type: 'invalid_request_error' } } })])).toThrow('error code "not_found" is one of the core\'s own');
    expect(() => boot([plugin('bad-status', { errorCodes: { bad_status_code: { status: 200, type: 'x' } } })])).toThrow('needs an HTTP status from 400 to 599');
    expect(() => boot([plugin('bad-name', { errorCodes: { 'Bad-Name': { status: 400, type: 'x' } } })])).toThrow('must be lower-case letters');
  });

  test('the bundled feature codes belong to their plugins, not to the core', async () => {
    const { CORE_ERROR_CODES } = await import('../../core/index.js');
    expect(Object.keys(CORE_ERROR_CODES)).not.toContain('guardrail_denied');
    expect(Object.keys(CORE_ERROR_CODES)).not.toContain('circuit_open');
    const { guardrails } = await import('../../plugins/guardrails/index.js');
    const { breaker } = await import('../../plugins/breaker/index.js');
    expect(guardrails().errorCodes).toEqual({ guardrail_denied: { status: 446, type: 'guardrail_error' } });
    expect(breaker().errorCodes).toEqual({ circuit_open: { status: 503, type: 'server_error' } });
  });
});

describe('target fields declared by plugins', () => {
  const field = { schema: fieldSchema.string() };

  test('the core declares its own fields first; plugins follow in load order, read-only to every plugin', () => {
    let seen: string[] = [];
    boot([plugin('a', { targetFields: { a_one: field } }), plugin('b', { targetFields: { b_one: { ...field, credential: true } } }, (api) => (seen = api.targetFields.names()))]);
    expect(seen).toEqual(['provider', 'api_key', 'custom_host', 'a_one', 'b_one']);
  });

  test('credentials come from the flags, the core api_key among them', () => {
    const fields = new TargetFields();
    fields.declare('p', { x_secret: { ...field, credential: true }, x_region: { ...field, placement: true } });
    expect([...fields.credentials()]).toEqual(['x_secret']);
    expect(fields.names((f) => f.placement === true)).toEqual(['x_region']);
  });

  test('one field, two owners: the same declaration object is shared, another one stops the boot naming both', () => {
    const shared = { ...field, credential: true };
    boot([plugin('one', { targetFields: { shared_secret: shared } }), plugin('two', { targetFields: { shared_secret: shared } })]);
    expect(() => boot([plugin('one', { targetFields: { clash: field } }), plugin('two', { targetFields: { clash: { schema: fieldSchema.boolean() } } })])).toThrow(
      'plugin "two": target field "clash" is already declared by "one"',
    );
    expect(() => boot([plugin('core-clash', { targetFields: { api_key: { schema: fieldSchema.boolean() } } })])).toThrow('is already declared by "core"');
  });

  test('aliases, names and combinations are checked at boot', () => {
    expect(() => boot([plugin('a', { targetFields: { a_field: { ...field, aliases: ['api_key'] } } })])).toThrow('alias "api_key" of "a_field" is already taken');
    expect(() => boot([plugin('a', { targetFields: { 'bad-name': field } })])).toThrow('must be letters, digits and _');
    expect(() => boot([plugin('a', { targetFields: { a_field: { ...field, combination: ['provider'] } } })])).toThrow('the combination of target field "a_field" must include it');
  });
});

test('a plugin may state the plugin API range it needs', () => {
  boot([plugin('ok', { gatewayApi: '^2.0.0' }), plugin('ok2', { gatewayApi: '>=2.0.0 <3' })]);
  expect(() => boot([plugin('next', { gatewayApi: '^3.0.0' })])).toThrow('plugin "next" needs gateway plugin API ^3.0.0, but this gateway provides 2.0.0');
  // A plugin written for 1.x is told what 2.0 changed.
  expect(() => boot([plugin('old', { gatewayApi: '^1.0.0' })])).toThrow(
    'plugin "old" needs gateway plugin API ^1.0.0, but this gateway provides 2.0.0 (2.0: UpstreamResponse.body is no longer a Readable; see docs/plugins.md, "Upstream bodies")',
  );
  expect(() => boot([plugin('typo', { gatewayApi: 'one point oh' })])).toThrow('plugin "typo": gatewayApi "one point oh" is not a semver range');
});

test('services: tryResolve answers undefined for an absent one, resolve throws', () => {
  let result: unknown = 'unset';
  const token = Symbol.for('test.absent-service') as never;
  boot([plugin('probe', {}, (api) => (result = api.tryResolve(token)))]);
  expect(result).toBeUndefined();
  expect(() => boot([plugin('probe', {}, (api) => api.resolve(token))])).toThrow();
});

describe('declarations are settled before any plugin is applied', () => {
  test('declaring a field from apply() is refused: everything derived from the fields has already seen them', () => {
    expect(() => boot([plugin('late', {}, (api) => api.targetFields.declare('late', { late_field: { schema: fieldSchema.string() } }))])).toThrow(
      'plugin "late": target fields are declared on the plugin object (targetFields), not from apply()',
    );
  });

  test('two plugins of one gateway giving a code two meanings stop the boot', () => {
    expect(() =>
      boot([
        plugin('first', { errorCodes: { half_registered_code: { status: 409, type: 'conflict_error' }, first_only_code: { status: 400, type: 'x' } } }),
        plugin('second', { errorCodes: { half_registered_code: { status: 400, type: 'invalid_request_error' } } }),
      ]),
    ).toThrow('plugin "second": error code "half_registered_code" is already declared by "first" as 409 conflict_error');
  });

  test("api.errorCodes holds this gateway's codes: the core's and its plugins'", () => {
    let codes: ReadonlyMap<string, unknown> = new Map();
    boot([plugin('mine', { errorCodes: { mine_code: { status: 451, type: 'legal_error' } } }, (api) => (codes = api.errorCodes))]);
    expect(codes.get('mine_code')).toEqual({ status: 451, type: 'legal_error', owner: 'mine' });
    expect(codes.get('not_found')).toMatchObject({ status: 404, owner: 'core' });
    expect(codes.has('teapot_refused')).toBe(false);
  });
});
