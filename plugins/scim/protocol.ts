import type { GatewayResponse } from '../../sdk/index.js';

/* The SCIM 2.0 wire format (RFC 7643, RFC 7644): schema URNs, errors, lists and the discovery documents. */

export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const LIST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';
export const PATCH_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const SPC_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig';
const RESOURCE_TYPE_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ResourceType';
const SCHEMA_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Schema';

/** Largest page of a list (`count`), as ServiceProviderConfig says. */
export const MAX_RESULTS = 100;
/** Most operations one PATCH may carry. */
export const MAX_OPERATIONS = 1000;

/** RFC 7644 §3.12 `scimType` values this service answers with. */
export type ScimType = 'invalidFilter' | 'uniqueness' | 'invalidSyntax' | 'invalidPath' | 'noTarget' | 'invalidValue' | 'mutability' | 'tooMany';

/** A SCIM error: answered as `{ schemas: [Error], status, scimType, detail }`, never in the gateway's envelope (IdPs parse this one). */
export class ScimError extends Error {
  constructor(
    readonly status: number,
    readonly scimType: ScimType | null,
    detail: string,
  ) {
    super(detail);
  }
}

export function scimResponse(status: number, body: unknown, headers: Record<string, string> = {}): GatewayResponse {
  return {
    status,
    headers: { 'content-type': 'application/scim+json', ...headers },
    body: body === null ? '' : JSON.stringify(body),
    observers: null,
  };
}

export function errorResponse(err: ScimError): GatewayResponse {
  return scimResponse(err.status, { schemas: [ERROR_SCHEMA], status: String(err.status), ...(err.scimType === null ? {} : { scimType: err.scimType }), detail: err.message });
}

export function listResponse(total: number, startIndex: number, resources: unknown[]): GatewayResponse {
  return scimResponse(200, { schemas: [LIST_SCHEMA], totalResults: total, startIndex, itemsPerPage: resources.length, Resources: resources });
}

/** `startIndex` (from 1) and `count` (0 to {@link MAX_RESULTS}, default that) of a list request; anything out of range is clamped, as RFC 7644 §3.4.2.4 asks. */
export function pageOf(query: URLSearchParams): { startIndex: number; count: number } {
  const int = (name: string): number | null => {
    const raw = query.get(name);
    if (raw === null || raw === '') return null;
    if (!/^-?\d{1,9}$/.test(raw)) throw new ScimError(400, 'invalidValue', `"${name}" must be an integer.`);
    return Number(raw);
  };
  const startIndex = Math.max(1, int('startIndex') ?? 1);
  const count = Math.min(MAX_RESULTS, Math.max(0, int('count') ?? MAX_RESULTS));
  return { startIndex, count };
}

/** What the service supports, for IdPs that read it before provisioning. */
export function serviceProviderConfig(location: string) {
  return {
    schemas: [SPC_SCHEMA],
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: MAX_RESULTS },
    changePassword: { supported: false },
    sort: { supported: false },
    etag: { supported: false },
    authenticationSchemes: [
      { type: 'oauthbearertoken', name: 'Bearer token', description: 'A SCIM token created with POST /v1/scim/tokens, or GATEWAY_SCIM_TOKEN.', primary: true },
    ],
    meta: { resourceType: 'ServiceProviderConfig', location },
  };
}

export function resourceTypes(base: string) {
  return [
    { schemas: [RESOURCE_TYPE_SCHEMA], id: 'User', name: 'User', endpoint: '/Users', description: 'A person of the organisation', schema: USER_SCHEMA, meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/User` } },
    { schemas: [RESOURCE_TYPE_SCHEMA], id: 'Group', name: 'Group', endpoint: '/Groups', description: 'A group, mapped to workspaces', schema: GROUP_SCHEMA, meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/Group` } },
  ];
}

const attr = (name: string, type: string, extra: Record<string, unknown> = {}) => ({
  name,
  type,
  multiValued: false,
  required: false,
  caseExact: false,
  mutability: 'readWrite',
  returned: 'default',
  uniqueness: 'none',
  ...extra,
});

/** The attributes this service keeps (anything else an IdP sends is accepted and ignored, passwords included). */
export function schemas(base: string) {
  return [
    {
      schemas: [SCHEMA_SCHEMA],
      id: USER_SCHEMA,
      name: 'User',
      description: 'User account',
      attributes: [
        attr('userName', 'string', { required: true, uniqueness: 'server' }),
        attr('externalId', 'string', { caseExact: true }),
        attr('name', 'complex', { subAttributes: [attr('givenName', 'string'), attr('familyName', 'string'), attr('formatted', 'string')] }),
        attr('displayName', 'string'),
        attr('emails', 'complex', { multiValued: true, subAttributes: [attr('value', 'string'), attr('type', 'string'), attr('primary', 'boolean')] }),
        attr('active', 'boolean'),
        attr('groups', 'complex', { multiValued: true, mutability: 'readOnly', subAttributes: [attr('value', 'string'), attr('display', 'string')] }),
      ],
      meta: { resourceType: 'Schema', location: `${base}/Schemas/${USER_SCHEMA}` },
    },
    {
      schemas: [SCHEMA_SCHEMA],
      id: GROUP_SCHEMA,
      name: 'Group',
      description: 'Group',
      attributes: [
        attr('displayName', 'string', { required: true }),
        attr('externalId', 'string', { caseExact: true }),
        attr('members', 'complex', { multiValued: true, subAttributes: [attr('value', 'string', { mutability: 'immutable' }), attr('display', 'string')] }),
      ],
      meta: { resourceType: 'Schema', location: `${base}/Schemas/${GROUP_SCHEMA}` },
    },
  ];
}
