import type { ErrorCodeSpec, RouteDefinition, RouteDoc, RouteEntry, v } from '../../sdk/index.js';
import type { JsonSchema } from './json-schema.js';

type Json = Record<string, unknown>;

/** What the document says of the API as a whole. */
export interface DocumentInfo {
  title: string;
  version: string;
  description: string;
  /** Where the API is served; relative URLs resolve against the document's own URL. */
  servers: readonly string[];
}

/** What the builder needs besides the routes. */
export interface DocumentInput {
  info: DocumentInfo;
  routes: readonly RouteEntry[];
  /** The gateway's declared error codes, listed in the error schema's description. */
  errorCodes: ReadonlyMap<string, Readonly<ErrorCodeSpec>>;
  /** valibot → JSON Schema (see json-schema.ts). */
  convert: (schema: v.GenericSchema) => JsonSchema;
}

/** The security scheme of a gateway API key: the default of every operation. */
export const KEY_SCHEME = 'gatewayKey';
/** A bearer token a route checks itself (a SCIM token, the metrics token). */
export const BEARER_SCHEME = 'bearerToken';
/** The provider's own key, sent as `Authorization: Bearer` on inference routes (never needed with a saved config or a virtual key). */
export const PROVIDER_KEY_SCHEME = 'providerKey';

const ERROR_REF = { $ref: '#/components/schemas/Error' };
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/**
 * Builds the OpenAPI 3.1 document of every route in the table, in
 * registration order: its path template (`:id` → `{id}`), its parameters
 * (path, and query from `doc.query`), its body (`doc.body`), its answers and
 * errors, and who may call it. A route without a `doc` is listed too, under
 * its name. The generic proxy (the fallback route) is one path template,
 * `{prefix}{path}`, with an operation for each method it serves.
 */
export function buildDocument(input: DocumentInput): Json {
  const { convert } = input;
  const paths: Record<string, Record<string, Json>> = {};
  const tags: string[] = [];
  const operationIds = new Set<string>();
  let usesBearer = false;
  let usesProviderKey = false;

  // A route's own error shape (Anthropic's, JSON-RPC's, SCIM's) is a component, named after the first tag answering it.
  const errorSchemas: Record<string, JsonSchema> = {};
  const errorNames = new Map<v.GenericSchema, string>();
  const ownError = (schema: v.GenericSchema, route: RouteDefinition): Json => {
    let name = errorNames.get(schema);
    if (name === undefined) {
      const base = `Error.${(tagsOf(route)[0] ?? route.name).replace(/[^A-Za-z0-9._-]+/g, '-')}`;
      name = base;
      for (let n = 2; name in errorSchemas; n++) name = `${base}-${n}`;
      errorNames.set(schema, name);
      errorSchemas[name] = convert(schema);
    }
    return { $ref: `#/components/schemas/${name}` };
  };

  const uniqueId = (name: string): string => {
    let id = name;
    for (let n = 2; operationIds.has(id); n++) id = `${name}.${n}`;
    operationIds.add(id);
    return id;
  };

  for (const entry of input.routes) {
    const { route } = entry;
    const doc = route.doc;
    for (const tag of tagsOf(route)) if (!tags.includes(tag)) tags.push(tag);
    const isPublic = doc?.public === true || (route.auth === false && doc?.bearer === undefined);
    const scope = route.scope ?? doc?.scope;
    const isInference = doc?.selectsProvider ?? route.kind === 'provider';
    if (doc?.bearer !== undefined) usesBearer = true;
    if (isInference) usesProviderKey = true;

    const common = {
      tags: tagsOf(route),
      security: isPublic ? [] : doc?.bearer !== undefined ? [{ [BEARER_SCHEME]: [] }] : isInference ? [{ [KEY_SCHEME]: [], [PROVIDER_KEY_SCHEME]: [] }, { [KEY_SCHEME]: [] }] : undefined,
      responses: responsesOf(route, convert, ownError, isPublic),
      ...(scope === undefined ? {} : { 'x-gateway-scope': scope }),
      'x-gateway-route': route.name,
    };

    if (entry.fallback !== null) {
      // The generic proxy answers any unmatched path under its prefix: one template stands for all of them.
      const template = `${entry.fallback.prefix}{path}`;
      for (const method of entry.fallback.methods) {
        const op: Json = {
          operationId: uniqueId(`${route.name}.${method.toLowerCase()}`),
          summary: doc?.summary ?? `Forward ${method} to the selected provider`,
          description: describe(doc, proxyDescription(entry.fallback.prefix), scope),
          parameters: [
            {
              name: 'path',
              in: 'path',
              required: true,
              description: 'The rest of the path, sent to the provider as is (it may span several segments, e.g. `models/gpt-4o`).',
              schema: { type: 'string' },
            },
            ...providerHeaders(),
          ],
          ...common,
          'x-gateway-fallback': true,
        };
        if (BODY_METHODS.has(method)) op.requestBody = { required: false, content: { '*/*': {} } };
        (paths[template] ??= {})[method.toLowerCase()] = strip(op);
      }
      continue;
    }

    const { template, names } = pathTemplate(route.path);
    const parameters: Json[] = names.map((name) => ({
      name,
      in: 'path',
      required: true,
      ...(doc?.params?.[name] === undefined ? {} : { description: doc.params[name] }),
      schema: { type: 'string' },
    }));
    if (doc?.query !== undefined) parameters.push(...queryParameters(convert(doc.query)));
    if (isInference) parameters.push(...providerHeaders());

    const op: Json = {
      operationId: uniqueId(route.name),
      summary: doc?.summary ?? route.name,
      description: describe(doc, null, scope),
      ...(parameters.length === 0 ? {} : { parameters }),
      ...requestBodyOf(route, convert),
      ...common,
    };
    (paths[template] ??= {})[route.method.toLowerCase()] = strip(op);
  }

  const securitySchemes: Json = {
    [KEY_SCHEME]: {
      type: 'apiKey',
      in: 'header',
      name: 'x-gateway-api-key',
      description: 'A gateway API key (from `GATEWAY_API_KEYS`, or created with `POST /v1/api-keys`). Never sent upstream.',
    },
  };
  if (usesProviderKey) {
    securitySchemes[PROVIDER_KEY_SCHEME] = {
      type: 'http',
      scheme: 'bearer',
      description: "The provider's own API key, sent upstream (`Authorization: Bearer …`). Not needed when a saved config or a provider slug holds the credential.",
    };
  }
  if (usesBearer) {
    securitySchemes[BEARER_SCHEME] = { type: 'http', scheme: 'bearer', description: 'A token the route checks itself instead of a gateway key; each operation names it.' };
  }

  return {
    openapi: '3.1.0',
    info: { title: input.info.title, version: input.info.version, description: input.info.description },
    servers: input.info.servers.map((url) => ({ url })),
    security: [{ [KEY_SCHEME]: [] }],
    tags: tags.map((name) => ({ name })),
    paths,
    components: {
      securitySchemes,
      schemas: { Error: errorSchema(input.errorCodes), ...errorSchemas },
      responses: Object.fromEntries(COMMON_ERRORS.map(([name, , description]) => [name, { description, content: { 'application/json': { schema: ERROR_REF } } }])),
      parameters: {
        provider: {
          name: 'x-gateway-provider',
          in: 'header',
          required: false,
          description: 'The provider to call (`openai`, `anthropic`, …, or `@slug` of a stored provider), with its key in `Authorization`.',
          schema: { type: 'string' },
        },
        config: {
          name: 'x-gateway-config',
          in: 'header',
          required: false,
          description: 'A config object (JSON) or the id of a saved config: provider, credentials, routing, retries, caching, guardrails.',
          schema: { type: 'string' },
        },
      },
    },
  };
}

/** `/v1/api-keys/:id/rotate` → `/v1/api-keys/{id}/rotate` and its parameter names. */
export function pathTemplate(path: string): { template: string; names: string[] } {
  const names: string[] = [];
  const template = path
    .split('/')
    .map((segment) => {
      if (!segment.startsWith(':')) return segment;
      names.push(segment.slice(1));
      return `{${segment.slice(1)}}`;
    })
    .join('/');
  return { template, names };
}

/** A documented route's tags; an undocumented one is grouped by the first part of its name (`logs.list` → `logs`). */
function tagsOf(route: RouteDefinition): string[] {
  if (route.doc?.tags !== undefined && route.doc.tags.length > 0) return [...route.doc.tags];
  return [route.name.split('.')[0] ?? route.name];
}

function describe(doc: RouteDoc | undefined, lead: string | null, scope: string | undefined): string | undefined {
  const parts: string[] = [];
  if (lead !== null) parts.push(lead);
  if (doc?.description !== undefined) parts.push(doc.description);
  if (scope !== undefined) parts.push(`Needs the scope \`${scope}\`.`);
  if (doc?.bearer !== undefined) parts.push(`Takes ${doc.bearer} as \`Authorization: Bearer …\`, not a gateway key.`);
  return parts.length === 0 ? undefined : parts.join('\n\n');
}

function proxyDescription(prefix: string): string {
  return (
    `The generic proxy: any path under \`${prefix}\` that no other route serves is forwarded to the selected provider's base URL ` +
    'with the same method, path, query and body, and its answer is returned as received (status, headers and body, errors included). ' +
    'The provider is selected as for the inference routes.'
  );
}

/** One query parameter per property of the query schema, with its JSON Schema. */
function queryParameters(schema: JsonSchema): Json[] {
  const properties = (schema as { properties?: Record<string, JsonSchema> }).properties ?? {};
  const required = new Set((schema as { required?: string[] }).required ?? []);
  return Object.entries(properties).map(([name, property]) => {
    const description = (property as { description?: unknown }).description;
    return {
      name,
      in: 'query',
      required: required.has(name),
      ...(typeof description === 'string' ? { description } : {}),
      schema: property,
    };
  });
}

function providerHeaders(): Json[] {
  return [{ $ref: '#/components/parameters/provider' }, { $ref: '#/components/parameters/config' }];
}

/**
 * The body: required on a route whose body is parsed as JSON (an empty one is a 400) or streamed,
 * optional on a raw one; described by `doc.body`, else as the JSON object or the bytes the route reads.
 */
function requestBodyOf(route: RouteDefinition, convert: (schema: v.GenericSchema) => JsonSchema): Json {
  const mode = route.body ?? (BODY_METHODS.has(route.method) ? 'json' : 'none');
  if (mode === 'none' && route.doc?.body === undefined) return {};
  const type = route.doc?.bodyType ?? (mode === 'json' || route.doc?.body !== undefined ? 'application/json' : 'application/octet-stream');
  const schema = route.doc?.body !== undefined ? convert(route.doc.body) : mode === 'json' ? { type: 'object' } : undefined;
  // A JSON body or an upload must be there; a raw one may be empty (its route reads what it gets).
  return { requestBody: { required: mode === 'json' || mode === 'stream', content: { [type]: schema === undefined ? {} : { schema } } } };
}

/** The errors every route may meet, each a shared response in the gateway's envelope: name, status, description. */
const COMMON_ERRORS = [
  ['BadRequest', '400', 'The request is invalid: the message and `param` name what is wrong.'],
  ['Unauthorized', '401', 'No valid credential.'],
  ['Forbidden', '403', 'The key lacks the scope the operation names.'],
  ['NotFound', '404', 'Nothing with that id here (or not visible to this key).'],
  ['Error', '4XX', 'Refused.'],
  ['ServerError', '5XX', 'The gateway or the provider failed.'],
] as const;

/** The success answer, then the errors a caller may meet: 4XX and 5XX always, the usual ones by status. */
function responsesOf(route: RouteDefinition, convert: (schema: v.GenericSchema) => JsonSchema, ownError: (schema: v.GenericSchema, route: RouteDefinition) => Json, isPublic: boolean): Json {
  const doc = route.doc;
  const content: Json = {};
  for (const type of doc?.responseTypes ?? ['application/json']) {
    content[type] = type === 'application/json' && doc?.response !== undefined ? { schema: convert(doc.response) } : {};
  }
  const responses: Json = { '200': { description: 'Success.', content } };
  const { names } = pathTemplate(route.path);
  const applies: Record<string, boolean> = {
    '400': doc?.body !== undefined || doc?.query !== undefined || route.kind === 'provider',
    '401': !isPublic,
    '403': (route.scope ?? doc?.scope) !== undefined,
    '404': names.length > 0,
    '4XX': true,
    '5XX': true,
  };
  const error = errorResponses(route, ownError);
  for (const [name, status, description] of COMMON_ERRORS) if (applies[status]) responses[status] = error(name, description);
  return responses;
}

/**
 * An error answer of a route: a shared response in the gateway's envelope, or in the route's own shape
 * (`doc.error`); a route with its own shape (`errorFormat`) and no schema for it says so only.
 */
function errorResponses(route: RouteDefinition, ownError: (schema: v.GenericSchema, route: RouteDefinition) => Json): (name: string, description: string) => Json {
  const own = route.doc?.error;
  if (own !== undefined) {
    const schema = ownError(own, route);
    // In the route's JSON media type (`application/scim+json`), where it has one.
    const type = route.doc?.responseTypes?.find((t) => t.endsWith('json')) ?? 'application/json';
    return (_name, description) => ({ description, content: { [type]: { schema } } });
  }
  if (route.errorFormat !== undefined) return (_name, description) => ({ description: `${description} In this route's own error format.` });
  return (name) => ({ $ref: `#/components/responses/${name}` });
}

/** The envelope every gateway error is answered in, with the declared codes listed by status. */
function errorSchema(codes: ReadonlyMap<string, Readonly<ErrorCodeSpec>>): Json {
  const byStatus = new Map<number, string[]>();
  for (const [code, spec] of codes) byStatus.set(spec.status, [...(byStatus.get(spec.status) ?? []), code]);
  const lines = [...byStatus.entries()].sort(([a], [b]) => a - b).map(([status, list]) => `- ${status}: ${list.sort().map((c) => `\`${c}\``).join(', ')}`);
  return {
    type: 'object',
    description: 'The envelope of every error the gateway raises (a provider\'s own error, passed through, keeps the provider\'s shape).',
    required: ['error'],
    properties: {
      error: {
        type: 'object',
        required: ['message', 'type', 'param', 'code'],
        properties: {
          message: { type: 'string', description: 'What went wrong, for people. Never holds a secret.' },
          type: { type: 'string', description: 'The OpenAI-style class of the error, e.g. `invalid_request_error`.' },
          param: { type: ['string', 'null'], description: 'The field, header or parameter at fault, when there is one.' },
          code: { type: ['string', 'null'], description: `A stable code clients may match on. This gateway's codes, by HTTP status:\n\n${lines.join('\n')}` },
        },
      },
    },
  };
}

/** Drops the keys left undefined, so the JSON holds no `"security": undefined`-shaped gaps. */
function strip(op: Json): Json {
  for (const key of Object.keys(op)) if (op[key] === undefined) delete op[key];
  return op;
}
