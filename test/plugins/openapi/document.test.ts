import { Validator } from '@seriousme/openapi-schema-validator';
import * as v from 'valibot';
import { expect, test } from 'vitest';
import { CORE_ERROR_CODES, JSON_RPC_ERRORS, RouteTable, type RouteDefinition } from '../../../sdk/index.js';
import { buildDocument, pathTemplate } from '../../../plugins/openapi/document.js';
import { createConverter } from '../../../plugins/openapi/json-schema.js';

const handler = () => ({ status: 200, headers: {}, body: null, observers: null });
const info = { title: 'T', version: '1', description: 'D', servers: ['/'] };

function documentOf(routes: RouteDefinition[], fallback?: RouteDefinition) {
  const table = new RouteTable();
  for (const r of routes) table.add(r);
  if (fallback !== undefined) table.setFallback('/v1/', ['GET', 'POST'], fallback);
  const errors: unknown[] = [];
  const doc = buildDocument({ info, routes: table.list(), errorCodes: new Map(Object.entries(CORE_ERROR_CODES)), convert: createConverter((err) => errors.push(err)) }) as Record<string, any>;
  return { doc, errors };
}

test('path templates: `:name` segments become `{name}`', () => {
  expect(pathTemplate('/v1/workspaces/:id/members/:userId')).toEqual({ template: '/v1/workspaces/{id}/members/{userId}', names: ['id', 'userId'] });
  expect(pathTemplate('/health')).toEqual({ template: '/health', names: [] });
});

test('who may call: the key by default, public with auth: false, a bearer token the route names', async () => {
  const { doc } = documentOf([
    { name: 'keyed.get', method: 'GET', path: '/v1/keyed', kind: 'handler', handler },
    { name: 'open.get', method: 'GET', path: '/open', kind: 'handler', auth: false, handler },
    { name: 'token.get', method: 'GET', path: '/token', kind: 'handler', auth: false, doc: { summary: 'Token', bearer: 'the test token' }, handler },
  ]);
  expect(doc.paths['/v1/keyed'].get.security).toBeUndefined();
  expect(doc.paths['/v1/keyed'].get.responses['401']).toBeDefined();
  expect(doc.paths['/open'].get.security).toEqual([]);
  expect(doc.paths['/open'].get.responses['401']).toBeUndefined();
  expect(doc.paths['/token'].get.security).toEqual([{ bearerToken: [] }]);
  expect(doc.paths['/token'].get.description).toContain('Takes the test token as `Authorization: Bearer …`');
  expect(doc.components.securitySchemes.bearerToken).toMatchObject({ type: 'http', scheme: 'bearer' });
  // Undocumented routes are listed under their name, grouped by its first part.
  expect(doc.paths['/v1/keyed'].get).toMatchObject({ operationId: 'keyed.get', summary: 'keyed.get', tags: ['keyed'] });
  expect((await new Validator().validate(doc)).valid).toBe(true);
});

test('a route with its own error format and no schema for it does not claim the envelope', () => {
  const { doc } = documentOf([{ name: 'rpc', method: 'POST', path: '/v1/rpc', kind: 'handler', body: 'raw', errorFormat: JSON_RPC_ERRORS, handler }]);
  const responses = doc.paths['/v1/rpc'].post.responses;
  expect(responses['4XX']).toEqual({ description: "Refused. In this route's own error format." });
  expect(JSON.stringify(responses)).not.toContain('#/components/schemas/Error');
  // A raw body may be empty.
  expect(doc.paths['/v1/rpc'].post.requestBody).toEqual({ required: false, content: { 'application/octet-stream': {} } });
});

test('what JSON Schema cannot say is loosened, never a failure: transforms, custom checks, lazy schemas', () => {
  const body = v.strictObject({
    count: v.pipe(v.string(), v.transform(Number), v.number()),
    anything: v.custom<string>((x) => typeof x === 'string'),
    either: v.lazy((input) => (typeof input === 'string' ? v.string() : v.object({ text: v.string() }))),
    checked: v.pipe(v.array(v.string()), v.check((list) => list.length % 2 === 0, 'must be even')),
  });
  const { doc, errors } = documentOf([{ name: 'loose', method: 'POST', path: '/v1/loose', kind: 'handler', doc: { summary: 'Loose', body }, handler }]);
  const schema = doc.paths['/v1/loose'].post.requestBody.content['application/json'].schema;
  expect(schema).toEqual({
    type: 'object',
    properties: { count: { type: 'string' }, anything: {}, either: {}, checked: { type: 'array', items: { type: 'string' } } },
    required: ['count', 'anything', 'either', 'checked'],
    additionalProperties: false,
  });
  expect(errors).toEqual([]);
});

test('the fallback route is one template per method it serves', () => {
  const { doc } = documentOf([], { name: 'proxy', method: 'POST', path: '/v1/*', kind: 'provider', body: 'raw', handler });
  expect(Object.keys(doc.paths)).toEqual(['/v1/{path}']);
  expect(Object.keys(doc.paths['/v1/{path}'])).toEqual(['get', 'post']);
  expect(doc.paths['/v1/{path}'].get).toMatchObject({ operationId: 'proxy.get', 'x-gateway-fallback': true });
  expect(doc.paths['/v1/{path}'].get.requestBody).toBeUndefined();
  expect(doc.paths['/v1/{path}'].post.requestBody).toEqual({ required: false, content: { '*/*': {} } });
});
