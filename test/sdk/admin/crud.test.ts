import { afterAll, beforeAll, expect, test } from 'vitest';
import * as v from 'valibot';
import { GatewayError, type GatewayPlugin } from '../../../sdk/index.js';
import { crudRoutes, forbidden, mapPage, notFound, PAGE_QUERY, pageOf, toRouteDefinitions, type CrudAccess } from '../../../sdk/admin/index.js';
import { serveGateway } from '../../helpers/serve.js';

// A resource under another (widgets of a shelf), on the builder, served by a real gateway: what the kit does in one place.
interface Shelf {
  id: string;
  widgets: Map<string, { id: string; name: string }>;
}
const shelves = new Map<string, Shelf>([['s1', { id: 's1', widgets: new Map([['w1', { id: 'w1', name: 'first' }]]) }]]);
const calls: string[] = [];

const Body = v.strictObject({ name: v.pipe(v.string(), v.minLength(1)) });
const Query = v.strictObject({ ...PAGE_QUERY });

async function shelfOf(ctx: { params: Record<string, string> | null }): Promise<Shelf> {
  const shelf = shelves.get(ctx.params!.id!);
  if (shelf === undefined) throw notFound('shelf', ctx.params!.id!);
  return shelf;
}

const routes = crudRoutes<null, typeof Body, typeof Body, typeof Query, v.GenericSchema, Shelf, Shelf>({
  name: 'widgets',
  path: '/shelves/:id/widgets',
  item: '/shelves/:id/widgets/:widgetId',
  key: 'widgetId',
  tag: 'Widgets',
  scopes: { delete: 'shelves.admin' },
  guard(ctx, access: CrudAccess) {
    calls.push(access);
    if (ctx.header('x-test-locked') === 'yes') throw forbidden('Locked.');
  },
  create: {
    summary: 'Add a widget',
    body: Body,
    find: shelfOf,
    async run(_ctx, _s, body, shelf) {
      const widget = { id: `w${shelf.widgets.size + 1}`, name: body.name };
      shelf.widgets.set(widget.id, widget);
      return widget;
    },
  },
  list: { summary: 'List widgets', query: Query, run: async (ctx, _s, q) => mapPage({ total: (await shelfOf(ctx)).widgets.size, data: [...(await shelfOf(ctx)).widgets.values()].slice(0, pageOf(q).size) }, (w) => ({ ...w, object: 'widget' })) },
  get: {
    summary: 'Get a widget',
    async run(ctx, _s, id) {
      const widget = (await shelfOf(ctx)).widgets.get(id);
      if (widget === undefined) throw notFound('widget', id, 'widgetId');
      return widget;
    },
  },
  update: {
    summary: 'Rename a widget',
    body: Body,
    find: shelfOf,
    async run(_ctx, _s, id, body, shelf) {
      const widget = shelf.widgets.get(id);
      if (widget === undefined) throw new GatewayError('not_found', `No widget "${id}".`, { param: 'widgetId' });
      widget.name = body.name;
      return widget;
    },
  },
  remove: { summary: 'Delete a widget', run: async (ctx, _s, id) => ({ id, deleted: (await shelfOf(ctx)).widgets.delete(id) }) },
});

let gw: Awaited<ReturnType<typeof serveGateway>>;
beforeAll(async () => {
  const plugin: GatewayPlugin = {
    name: 'widgets',
    apply(api) {
      for (const route of toRouteDefinitions('/v1', routes, () => null)) api.routes.add(route);
    },
  };
  gw = await serveGateway({ plugins: [plugin] });
});
afterAll(() => gw.close());

const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
  const res = await fetch(`${gw.url}/v1${path}`, { method, headers: { 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as any };
};

test('routes, names and scopes: <name>.<op>, <scope>.<access> unless an operation has its own', () => {
  expect(routes.map((r) => [r.name, r.method, r.path, r.scope])).toEqual([
    ['widgets.create', 'POST', '/shelves/:id/widgets', 'widgets.create'],
    ['widgets.list', 'GET', '/shelves/:id/widgets', 'widgets.read'],
    ['widgets.get', 'GET', '/shelves/:id/widgets/:widgetId', 'widgets.read'],
    ['widgets.update', 'PUT', '/shelves/:id/widgets/:widgetId', 'widgets.update'],
    ['widgets.delete', 'DELETE', '/shelves/:id/widgets/:widgetId', 'shelves.admin'],
  ]);
});

test('an item under another: the operations get the key parameter, the parent stays in ctx.params', async () => {
  expect(await call('GET', '/shelves/s1/widgets/w1')).toEqual({ status: 200, body: { id: 'w1', name: 'first' } });
  const list = await call('GET', '/shelves/s1/widgets');
  expect(list.body).toMatchObject({ object: 'list', total_count: 1, data: [{ id: 'w1', object: 'widget' }] });
  expect((await call('GET', '/shelves/s1/widgets/nope')).body.error).toMatchObject({ code: 'not_found', param: 'widgetId' });
});

test('find runs before the body is parsed: an unknown parent is a 404 whatever was sent, a known one gets the 400', async () => {
  expect((await call('POST', '/shelves/none/widgets', { bogus: true })).status).toBe(404);
  expect((await call('PUT', '/shelves/none/widgets/w1', { bogus: true })).status).toBe(404);
  const bad = await call('POST', '/shelves/s1/widgets', { bogus: true });
  expect(bad.status).toBe(400);
  expect(bad.body.error.type).toBe('invalid_request_error');
  const made = await call('POST', '/shelves/s1/widgets', { name: 'second' });
  expect(made).toEqual({ status: 200, body: { id: 'w2', name: 'second' } });
});

test('the guard runs first on every route with its access, before anything is looked up or parsed', async () => {
  calls.length = 0;
  const locked = { 'x-test-locked': 'yes' };
  expect((await call('POST', '/shelves/none/widgets', '{not json', locked)).status).toBe(400); // the body is read by the core first
  expect((await call('POST', '/shelves/none/widgets', { bogus: true }, locked)).status).toBe(403);
  expect((await call('GET', '/shelves/none/widgets?page_size=x', undefined, locked)).status).toBe(403);
  expect((await call('PUT', '/shelves/none/widgets/w1', { bogus: true }, locked)).status).toBe(403);
  expect((await call('DELETE', '/shelves/s1/widgets/w1', undefined, locked)).status).toBe(403);
  expect(calls).toEqual(['create', 'read', 'update', 'delete']);
  expect(shelves.get('s1')!.widgets.has('w1')).toBe(true);
});
