import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { GatewayPlugin, RouteTable } from '../../../core/index.js';
import { staticAuth } from '../../../plugins/auth-static/index.js';
import { health } from '../../../plugins/health/index.js';
import { openapi } from '../../../plugins/openapi/index.js';
import { pathTemplate } from '../../../plugins/openapi/document.js';
import { swaggerUiDir } from '../../../plugins/openapi/viewer.js';
import { loadPlugins } from '../../../server/catalog.js';
import { DEFAULT_CONFIG } from '../../../server/default-config.js';
import { readEnv } from '../../../server/env.js';
import { BOOTSTRAP_KEY, GATEWAY_KEY } from '../../helpers/gateway.js';
import { LOOPBACK_ENV } from '../../helpers/outbound.js';
import { serveGateway } from '../../helpers/serve.js';

type Json = Record<string, any>;

// The default server config's plugins, plus one that keeps the route table, so the document can be checked against it.
let gw: Awaited<ReturnType<typeof serveGateway>>;
let routes: RouteTable;
let doc: Json;
beforeAll(async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'gw-openapi-'));
  const env = readEnv({ GATEWAY_API_KEYS: GATEWAY_KEY, GATEWAY_BOOTSTRAP_KEY: BOOTSTRAP_KEY, GATEWAY_DATA_DIR: dataDir, ...LOOPBACK_ENV });
  const spy: GatewayPlugin = {
    name: 'test-route-spy',
    apply(api) {
      routes = api.routes;
    },
  };
  gw = await serveGateway({ plugins: [...(await loadPlugins(DEFAULT_CONFIG, env)), spy] });
  await gw.gateway.ready;
  const res = await fetch(`${gw.url}/v1/openapi.json`);
  expect(res.status).toBe(200);
  doc = await res.json();
}, 60_000);
afterAll(async () => {
  await gw?.close();
});

/** Every operation of the document: method, path template, object. */
function operations(d: Json): Array<{ method: string; path: string; op: Json }> {
  return Object.entries(d.paths as Json).flatMap(([path, item]) => Object.entries(item as Json).map(([method, op]) => ({ method, path, op: op as Json })));
}

/** Every value under a `schema` key, anywhere in the document. */
function schemas(value: unknown, out: Json[] = []): Json[] {
  if (Array.isArray(value)) for (const v of value) schemas(v, out);
  else if (typeof value === 'object' && value !== null) {
    for (const [key, v] of Object.entries(value)) {
      if (key === 'schema' && typeof v === 'object' && v !== null) out.push(v as Json);
      else schemas(v, out);
    }
  }
  return out;
}

describe('the document of the default server', () => {
  test('is served without a key, as JSON with an ETag, and is a valid OpenAPI 3.1 document', async () => {
    const res = await fetch(`${gw.url}/v1/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    const etag = res.headers.get('etag');
    expect(etag).toMatch(/^"[\w-]+"$/);
    expect(await res.json()).toEqual(doc);
    // Built once: the same bytes, and a 304 for a client that has them.
    const again = await fetch(`${gw.url}/v1/openapi.json`, { headers: { 'if-none-match': etag! } });
    expect(again.status).toBe(304);

    expect(doc.openapi).toBe('3.1.0');
    const result = await new Validator().validate(doc);
    if (!result.valid) console.error(JSON.stringify(result.errors, null, 2));
    expect(result.valid).toBe(true);
  });

  test('its schemas are valid JSON Schema 2020-12, and every $ref points at a component that exists', () => {
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    const refs = new Set<string>();
    const collect = (value: unknown): void => {
      if (Array.isArray(value)) value.forEach(collect);
      else if (typeof value === 'object' && value !== null) {
        for (const [k, v] of Object.entries(value)) (k === '$ref' && typeof v === 'string' ? refs.add(v) : collect(v));
      }
    };
    collect(doc);
    for (const ref of refs) {
      expect(ref).toMatch(/^#\/components\//);
      const target = ref
        .slice(2)
        .split('/')
        .reduce<any>((node, key) => node?.[key], doc);
      expect(target, ref).toBeDefined();
    }
    const embedded = schemas(doc.paths).filter((s) => JSON.stringify(s).includes('"$ref"') === false);
    expect(embedded.length).toBeGreaterThan(100);
    for (const schema of embedded) {
      expect(schema.$defs).toBeUndefined();
      expect(() => ajv.compile(schema)).not.toThrow();
    }
  });

  test('every route in the route table is in it, under its method and path template, and nothing else is', () => {
    const listed = routes.list();
    expect(listed.length).toBeGreaterThan(100);
    let expected = 0;
    for (const { route, fallback } of listed) {
      if (fallback !== null) {
        for (const method of fallback.methods) {
          expected++;
          const op = doc.paths[`${fallback.prefix}{path}`]?.[method.toLowerCase()];
          expect(op, `${method} ${fallback.prefix}{path}`).toBeDefined();
          expect(op['x-gateway-route']).toBe(route.name);
          expect(op['x-gateway-fallback']).toBe(true);
        }
        continue;
      }
      expected++;
      const { template, names } = pathTemplate(route.path);
      const op = doc.paths[template]?.[route.method.toLowerCase()];
      expect(op, `${route.method} ${template}`).toBeDefined();
      expect(op['x-gateway-route']).toBe(route.name);
      const pathParams = (op.parameters ?? []).filter((p: Json) => p.in === 'path').map((p: Json) => p.name);
      expect(pathParams).toEqual(names);
    }
    expect(operations(doc)).toHaveLength(expected);
    // Operation ids are unique (route names are too: the route table refuses a second route under a name).
    const ids = operations(doc).map(({ op }) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  test('covers the public and admin API: the key is global, public routes say so, scoped routes name their scope', () => {
    expect(doc.components.securitySchemes.gatewayKey).toEqual(expect.objectContaining({ type: 'apiKey', in: 'header', name: 'x-gateway-api-key' }));
    expect(doc.security).toEqual([{ gatewayKey: [] }]);
    expect(doc.paths['/health'].get.security).toEqual([]);
    expect(doc.paths['/v1/openapi.json'].get.security).toEqual([]);
    expect(doc.paths['/v1/api-keys'].post['x-gateway-scope']).toBe('api_keys.create');
    expect(doc.paths['/v1/api-keys'].post.description).toContain('`api_keys.create`');
    expect(doc.paths['/v1/api-keys'].post.security).toBeUndefined();
    // SCIM takes its own bearer token, not a gateway key.
    expect(doc.paths['/scim/v2/Users'].get.security).toEqual([{ bearerToken: [] }]);
    // The inference routes take the provider's key besides the gateway's, and the provider-selecting headers.
    const chat = doc.paths['/v1/chat/completions'].post;
    expect(chat.security).toEqual([{ gatewayKey: [], providerKey: [] }, { gatewayKey: [] }]);
    expect(chat.parameters).toEqual(expect.arrayContaining([{ $ref: '#/components/parameters/provider' }]));
    expect(Object.keys(chat.responses['200'].content)).toEqual(['application/json', 'text/event-stream']);
    // Every operation answers errors: the shared envelope unless the route has its own shape.
    for (const { method, path, op } of operations(doc)) {
      expect(op.responses['4XX'], `${method} ${path}`).toBeDefined();
      expect(op.responses['5XX'], `${method} ${path}`).toBeDefined();
    }
    expect(doc.paths['/v1/workspaces'].get.responses['4XX']).toEqual({ $ref: '#/components/responses/Error' });
    expect(doc.paths['/v1/api-keys'].post.responses['400']).toEqual({ $ref: '#/components/responses/BadRequest' });
    expect(doc.components.responses.BadRequest.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });
    expect(doc.components.schemas.Error.properties.error.required).toEqual(['message', 'type', 'param', 'code']);
    expect(doc.components.schemas.Error.properties.error.properties.code.description).toContain('`invalid_request`');
    // The Messages door answers Anthropic's envelope, MCP JSON-RPC errors: said per route.
    const own = (op: Json, status: string, type = 'application/json') => {
      const ref: string = op.responses[status].content[type].schema.$ref;
      return doc.components.schemas[ref.slice('#/components/schemas/'.length)];
    };
    expect(own(doc.paths['/v1/messages'].post, '400').properties.type).toEqual({ const: 'error' });
    expect(own(doc.paths['/v1/mcp/{id}'].post, '4XX').required).toEqual(['jsonrpc', 'id', 'error']);
    expect(own(doc.paths['/v1/a2a/{id}'].post, '5XX')).toBe(own(doc.paths['/v1/mcp/{id}'].post, '4XX'));
    expect(own(doc.paths['/scim/v2/Users'].get, '401', 'application/scim+json').required).toEqual(['schemas', 'status', 'detail']);
    // The generic proxy is one template per method.
    expect(Object.keys(doc.paths['/v1/{path}']).sort()).toEqual(['delete', 'get', 'post', 'put']);
    expect(doc.paths['/v1/{path}'].get.description).toMatch(/any path under `\/v1\/` that no other route serves/);
  });

  test('query schemas become one parameter per field, path parameters are described', () => {
    const list = doc.paths['/v1/api-keys'].get.parameters as Json[];
    expect(list.map((p) => p.name)).toEqual(['current_page', 'page_size', 'workspace_id', 'type']);
    expect(list.every((p) => p.in === 'query' && p.required === false)).toBe(true);
    // The client writes a string: the documented type is the one on the wire, before the route's transform.
    expect(list[1]).toMatchObject({ schema: { type: 'string', pattern: '^\\d{1,9}$' }, description: expect.stringContaining('at most 100') });
    expect(list[3]!.schema.enum).toEqual(['organisation-service', 'workspace-service', 'workspace-user']);
    const rotate = doc.paths['/v1/api-keys/{id}/rotate'].post;
    expect(rotate.parameters).toEqual([{ name: 'id', in: 'path', required: true, description: 'Its id.', schema: { type: 'string' } }]);
    // Its body may be empty.
    expect(rotate.requestBody.required).toBe(false);
  });
});

describe('the document and the routes check bodies with the same schema', () => {
  const ajv = new Ajv2020({ strict: false, validateFormats: false });
  const post = (path: string, body: unknown) =>
    fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY }, body: JSON.stringify(body) });

  test('POST /v1/api-keys: the fields the schema requires, and a body it refuses is a 400 from the route', async () => {
    const op = doc.paths['/v1/api-keys'].post;
    const schema = op.requestBody.content['application/json'].schema;
    expect(op.requestBody.required).toBe(true);
    expect(schema.required).toEqual(['type', 'name']);
    expect(schema.additionalProperties).toBe(false);
    const check = ajv.compile(schema);

    for (const bad of [{ name: 'no type' }, { type: 'workspace-service' }, { type: 'nonsense', name: 'x' }, { type: 'workspace-service', name: 'x', colour: 'blue' }]) {
      expect(check(bad), JSON.stringify(bad)).toBe(false);
      const res = await post('/v1/api-keys', bad);
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect((await res.json()).error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_request' });
    }
    const good = { type: 'workspace-service', name: 'documented service key' };
    expect(check(good)).toBe(true);
    const res = await post('/v1/api-keys', good);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ object: 'api-key', name: 'documented service key' });
  });

  test('POST /v1/chat/completions: the validation plugin\'s schema, refusing what the document refuses', async () => {
    const schema = doc.paths['/v1/chat/completions'].post.requestBody.content['application/json'].schema;
    expect(schema.required).toEqual(['model', 'messages']);
    expect(schema.properties.temperature.anyOf[0]).toEqual({ type: 'number', minimum: 0, maximum: 2 });
    const bad = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], temperature: 3 };
    expect(ajv.compile(schema)(bad)).toBe(false);
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-provider': 'openai', authorization: 'Bearer sk-test' },
      body: JSON.stringify(bad),
    });
    expect(res.status).toBe(400);
    expect((await res.json()).error.param).toBe('temperature');
  });

  test('a query the document refuses is a 400 from the route', async () => {
    const type = (doc.paths['/v1/api-keys'].get.parameters as Json[]).find((p) => p.name === 'type')!;
    expect(ajv.compile(type.schema)('bogus')).toBe(false);
    const res = await fetch(`${gw.url}/v1/api-keys?type=bogus`, { headers: { 'x-gateway-api-key': GATEWAY_KEY } });
    expect(res.status).toBe(400);
    expect((await res.json()).error.param).toBe('type');
  });
});

describe('the viewer at /docs', () => {
  test('an HTML page with a strict CSP, no inline script and no URL off this host', async () => {
    const res = await fetch(`${gw.url}/docs`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self';");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("style-src 'self';");
    expect(csp).not.toContain('unsafe');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    const html = await res.text();
    // Every script is a file from here; no inline code, no handler attributes.
    expect(html.match(/<script\b[^>]*>/g)!.every((tag) => /\ssrc="\/docs\//.test(tag))).toBe(true);
    expect(html).not.toMatch(/<script\b[^>]*>[^<]+<\/script>/);
    expect(html).not.toMatch(/\son[a-z]+=/i);
    // No http(s) URL to anything but loopback: it works offline, and asks no CDN.
    const urls = html.match(/https?:\/\/[^\s"'<>]+/g) ?? [];
    expect(urls.filter((u) => !/^https?:\/\/(127\.0\.0\.1|localhost|\[::1\])[:/]/.test(u))).toEqual([]);
    expect(html).toContain('data-openapi-url="/v1/openapi.json"');
  });

  test('its files: swagger-ui from the installed package and the start-up script, with their types, cached by content', async () => {
    const html = await (await fetch(`${gw.url}/docs`)).text();
    const refs = [...html.matchAll(/(?:src|href)="(\/docs\/[^"]+)"/g)].map((m) => m[1]!.replace(/&#38;/g, '&'));
    const types: Record<string, string> = {
      'swagger-ui.css': 'text/css; charset=utf-8',
      'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
      'init.js': 'text/javascript; charset=utf-8',
      'favicon-32x32.png': 'image/png',
      'favicon-16x16.png': 'image/png',
    };
    expect(refs.map((r) => r.split('?')[0]!.slice('/docs/'.length)).sort()).toEqual(Object.keys(types).sort());
    for (const ref of refs) {
      const name = ref.split('?')[0]!.slice('/docs/'.length);
      expect(ref).toMatch(/\?v=[\w-]{16}$/);
      const res = await fetch(`${gw.url}${ref}`);
      expect(res.status, ref).toBe(200);
      expect(res.headers.get('content-type')).toBe(types[name]);
      expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      const bytes = Buffer.from(await res.arrayBuffer());
      if (name !== 'init.js') expect(bytes.equals(await readFile(join(swaggerUiDir(), name)))).toBe(true);
      else expect(bytes.toString()).toContain("getAttribute('data-openapi-url')");
      const again = await fetch(`${gw.url}${ref}`, { headers: { 'if-none-match': res.headers.get('etag')! } });
      expect(again.status).toBe(304);
    }
    // Only those files: nothing else of the package's folder, and no way out of it.
    for (const other of ['swagger-initializer.js', 'index.html', 'swagger-ui-bundle.js.map', '..%2Fpackage.json']) {
      const res = await fetch(`${gw.url}/docs/${other}`);
      expect(res.status, other).toBe(404);
    }
  });
});

describe('options', () => {
  test('public: false: the document takes a gateway key; the viewer stays reachable', async () => {
    const key = 'openapi-test-key-0001';
    const closed = await serveGateway({ plugins: [health(), staticAuth({ keys: [key] }), openapi({ public: false })] });
    try {
      const anonymous = await fetch(`${closed.url}/v1/openapi.json`);
      expect(anonymous.status).toBe(401);
      expect((await anonymous.json()).error.code).toBe('unauthorized');
      const res = await fetch(`${closed.url}/v1/openapi.json`, { headers: { 'x-gateway-api-key': key } });
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('private, no-cache');
      const closedDoc = await res.json();
      expect(closedDoc.paths['/v1/openapi.json'].get.security).toBeUndefined();
      expect(Object.keys(closedDoc.paths)).toEqual(['/health', '/ready', '/v1/openapi.json', '/docs', '/docs/{file}']);
      expect((await fetch(`${closed.url}/docs`)).status).toBe(200);
    } finally {
      await closed.close();
    }
  });

  test('path, docsPath: false, title and servers', async () => {
    const moved = await serveGateway({ plugins: [health(), openapi({ path: '/api/spec.json', docsPath: false, title: 'Acme gateway', servers: ['https://gw.example.com'] })] });
    try {
      expect((await fetch(`${moved.url}/v1/openapi.json`)).status).toBe(404);
      expect((await fetch(`${moved.url}/docs`)).status).toBe(404);
      const d = await (await fetch(`${moved.url}/api/spec.json`)).json();
      expect(d.info.title).toBe('Acme gateway');
      expect(d.servers).toEqual([{ url: 'https://gw.example.com' }]);
      expect(Object.keys(d.paths)).toEqual(['/health', '/ready', '/api/spec.json']);
    } finally {
      await moved.close();
    }
  });

  test('bad options stop the start, naming the field', () => {
    expect(() => openapi({ docsPath: 'docs' })).toThrow(/Invalid options for openapi: docsPath/);
    expect(() => openapi({ servers: ['ftp://x'] })).toThrow(/servers/);
  });
});
