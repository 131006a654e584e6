/**
 * The control-plane kit (`switchyard-gateway/sdk/admin`): what a plugin needs to keep
 * a stored resource per workspace with admin routes. Identity (workspaces, the
 * store, the encryption key) comes from the `control-plane` plugin through
 * {@link IDENTITY}; the rest is here: admin routes with their scope checks and
 * envelopes, a CRUD route builder, versioned tables, SQL helpers and a
 * read-through cache. See docs/plugins.md, "A stored resource".
 *
 * @module switchyard-gateway/sdk/admin
 */
export {
  BY_ID,
  BY_REF,
  DEFAULT_PAGE_SIZE,
  Description,
  MAX_PAGE_SIZE,
  Metadata,
  Name,
  PAGE_QUERY,
  Slug,
  canSee,
  canWrite,
  conflict,
  docsFor,
  forbidden,
  isOrgAdmin,
  isOrgLevel,
  iso,
  json,
  listResponse,
  notFound,
  ok,
  optionalBody,
  pageOf,
  parseBody,
  parseQuery,
  parseValue,
  patchOf,
  requireOrgLevel,
  toRouteDefinitions,
  type AdminDoc,
  type AdminRoute,
} from './http.js';
export { IDENTITY, requestWorkspaceOf, workspaceFor, type Identity, type OrgSettings, type WorkspaceInfo } from './identity.js';
export {
  ACCOUNT_STATUS,
  IDENTITY_ADMIN,
  ROLES,
  Role,
  SIGN_IN_SESSIONS,
  type AccountStatus,
  type DisabledKey,
  type IdentityAdmin,
  type SignInSessions,
  type UserInfo,
  type UserWorkspace,
} from './people.js';
export { mapPage, SqlTables, type Page, type Paged } from './table.js';
export { TtlCache } from './cache.js';
export { newId, randomSlug } from './ids.js';
export { crudRoutes, insertVersioned, updateVersioned, visibleInWorkspace, type CrudAccess, type CrudSpec, type OpDoc, type VersionedTables } from './crud.js';
export { checkStoredUrls } from './stored-urls.js';
export { registerAdminRoutes } from './register.js';
export {
  UpstreamServerStatus,
  UpstreamServerTable,
  openServer,
  upstreamServerRoutes,
  upstreamServerTable,
  type UpstreamServerConfig,
  type UpstreamServerKind,
  type UpstreamServerRow,
  type UpstreamServerService,
} from './upstream-servers.js';
export { SealedDocuments, type StoredDocument } from './sealed-documents.js';
export { documentMigrations, DocumentStore, type DocumentKind, type DocumentRow, type DocumentRules, type DocumentWithBody } from './documents.js';
export { documentRoutes, type DocumentRoutesSpec } from './document-routes.js';
export {
  AgentAuthSchema,
  McpAuthSchema,
  TimeoutField,
  UrlField,
  checkUpstreamUrl,
  openAuth,
  presentAuth,
  registeredClient,
  sealAuth,
  type AuthColumns,
  type AuthInput,
} from './upstream-auth.js';
