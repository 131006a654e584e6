import type { Logger, RequestContext } from '../../core/index.js';
import { migrate, type Migration, type SqlClient } from '../sql.js';
import { TtlCache } from './cache.js';
import { insertVersioned, updateVersioned, visibleInWorkspace, type VersionedTables } from './crud.js';
import { conflict, iso, patchOf } from './http.js';
import { workspaceFor, type Identity } from './identity.js';
import { randomSlug } from './ids.js';
import { SealedDocuments, type StoredDocument } from './sealed-documents.js';
import { SqlTables, type Page, type Paged } from './table.js';

/** A stored document resource's row: named in a workspace, versioned. */
export interface DocumentRow {
  /** The resource's id (the kind's `idPrefix` and 16 characters). */
  id: string;
  /** The workspace it belongs to. */
  workspace_id: string;
  /** Its slug, unique among the workspace's active resources of the kind. */
  slug: string;
  /** Its name, for people. */
  name: string;
  /** `active`, or `archived`. */
  status: string;
  /** Its latest version's number. */
  version: number;
  /** When it was created (epoch ms). */
  created_at: number;
  /** When it last changed (epoch ms). */
  updated_at: number;
  /** Resources that archive rather than delete (see {@link DocumentKind.archives}). */
  archived_at?: number | null;
}

/** A row with its current version's document (credentials masked in `body`, sealed in `sealed`). */
export type DocumentWithBody = DocumentRow & StoredDocument;

/** What one stored document resource is: its tables, its names, where its document sits. */
export interface DocumentKind extends VersionedTables {
  /** `config`, `guardrail`: the answers' `object`, the noun of messages, the record kind credentials are sealed to. */
  kind: string;
  /** How the request path's errors name one (`Saved config`). */
  title: string;
  /** Prefix of generated ids (`pc-`). */
  idPrefix: string;
  /** The document's key in bodies and answers (`config`); absent, the document is the body itself, beside the resource's own fields. */
  field?: string;
  /** Archived (status and `archived_at`) by DELETE rather than deleted. */
  archives: boolean;
  /** Whether lists carry each resource's document. */
  listBodies: boolean;
  /** The tables' migration namespace and migrations (run when the gateway is ready). */
  namespace: string;
  /** The migrations of `namespace` (see {@link documentMigrations}). */
  migrations: readonly Migration[];
}

/** What a {@link DocumentStore} is given by the plugin that owns it. */
export interface DocumentRules<V> {
  /** The keys whose values are credentials, at any depth; read once, when first needed (the gateway is ready). */
  credentialKeys(): ReadonlySet<string>;
  /** Refuses a document to store with the 400 naming the field (its schema, its upstream URLs). */
  check(document: Record<string, unknown>): void;
  /** What the request path uses of a stored one (its credentials opened with {@link DocumentStore.open}); null for none. */
  build(row: DocumentWithBody): V | null;
}

/**
 * A document kind's tables as two migrations: the resource (with `archived_at` when it archives) and its
 * versions, named `name` (version 1); then the column holding each version's sealed credentials (version 2,
 * `sealed_documents`: '' when a version has none, NULL for one written before, sealed by
 * {@link DocumentStore.ready}). `adopts`: the control-plane versions that made the same two changes before
 * the kind had tables of its own (see `Migration.adopts`). Frozen, as applied migrations are: a change to
 * these tables is a new migration of the kind, never an edit here.
 */
export function documentMigrations(kind: Pick<DocumentKind, 'table' | 'versions' | 'key' | 'archives'>, name: string, adopts?: readonly [number, number]): Migration[] {
  const from = (version: number | undefined) => (version === undefined ? {} : { adopts: { namespace: 'control-plane', version } });
  return [
    {
      version: 1,
      name,
      ...from(adopts?.[0]),
      up: `
CREATE TABLE ${kind.table} (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL,
  slug TEXT NOT NULL,
  name TEXT NOT NULL,
  status TEXT NOT NULL,
  version INTEGER NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,${kind.archives ? '\n  archived_at BIGINT,' : ''}
  UNIQUE (workspace_id, slug)
);
CREATE TABLE ${kind.versions} (
  ${kind.key} TEXT NOT NULL,
  version INTEGER NOT NULL,
  body TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (${kind.key}, version)
)`,
    },
    { version: 2, name: 'sealed_documents', ...from(adopts?.[1]), up: `ALTER TABLE ${kind.versions} ADD COLUMN sealed TEXT` },
  ];
}

const NUMERIC: ReadonlySet<string> = new Set(['version', 'created_at', 'updated_at', 'archived_at']);
const MAX_CACHED = 10_000;

/**
 * A JSON document kept per workspace in versions, its credentials sealed
 * (saved configs, stored guardrails): the statements, the admin operations
 * ({@link documentRoutes} serves them) and the request path's cached lookup,
 * which clears on every admin write ({@link Identity.invalidate}).
 */
export class DocumentStore<V> {
  /** The statements on the control plane's store. */
  readonly tables = new SqlTables(() => this.identity.sql(), NUMERIC);
  /** Seals and opens the documents' credentials. */
  readonly sealed: SealedDocuments;
  #identity: Identity | null = null;
  #cache: TtlCache<V | null> | null = null;

  /**
   * A store for one document kind; it works once {@link DocumentStore.ready} ran (in the owning plugin's `onReady`).
   *
   * @param spec - What the resource is: its tables, names and migrations.
   * @param rules - What the owning plugin decides: credential keys, checks, what the request path uses.
   */
  constructor(
    readonly spec: DocumentKind,
    private readonly rules: DocumentRules<V>,
  ) {
    this.sealed = new SealedDocuments(spec.kind, () => this.identity.box, () => rules.credentialKeys());
  }

  /** The control plane's identity service; throws until {@link DocumentStore.ready} ran. */
  get identity(): Identity {
    if (this.#identity === null) throw new Error(`${this.spec.title.toLowerCase()}s: the gateway is not ready`);
    return this.#identity;
  }

  /**
   * Migrates the tables and seals the versions written before sealing existed. In the owning plugin's
   * `onReady`, once identity's store is open (the control plane listed before it).
   */
  async ready(identity: Identity, logger: Logger): Promise<void> {
    this.#identity = identity;
    const cache = (this.#cache = new TtlCache<V | null>(identity.cacheTtlMs, MAX_CACHED, identity.now));
    identity.onInvalidate(() => cache.clear());
    const db = identity.sql() as SqlClient | null;
    // Identity opens its store in its own onReady: a plugin listed before the control plane would come first.
    if (db === null) throw new Error(`${this.spec.title.toLowerCase()}s: the control plane's store is not open yet: list the control-plane plugin before the plugin that keeps them`);
    await migrate(db, this.spec.namespace, this.spec.migrations);
    const sealed = await this.sealed.sealLegacy(db, this.spec.versions, this.spec.key);
    if (sealed > 0) logger.info({ versions: sealed }, `sealed the credentials of ${this.spec.title.toLowerCase()}s written before they were sealed`);
  }

  /** What the request path uses of `ref` (id or slug) in a workspace, through the cache: synchronous when cached. */
  lookup(workspaceId: string, ref: string): V | null | Promise<V | null> {
    return this.#cache!.get(`${workspaceId}\n${ref}`, async () => {
      const row = await this.find(workspaceId, ref);
      return row === undefined ? null : this.rules.build(row);
    });
  }

  /** A stored version with its credentials; a 503 when they cannot be decrypted. */
  open(row: DocumentWithBody): unknown {
    return this.sealed.open(row.id, row, `${this.spec.title} ${row.slug}`);
  }

  /** One with its current document: by id in any workspace (`null`), or by id or slug in one. */
  find(workspaceId: string | null, ref: string, client?: SqlClient): Promise<DocumentWithBody | undefined> {
    const { table, versions, key } = this.spec;
    const head = `SELECT g.*, v.body, v.sealed FROM ${table} g JOIN ${versions} v ON v.${key} = g.id AND v.version = g.version`;
    return workspaceId === null
      ? this.tables.get(`${head} WHERE g.id = ?`, [ref], client)
      : this.tables.get(`${head} WHERE g.workspace_id = ? AND (g.id = ? OR g.slug = ?)`, [workspaceId, ref, ref], client);
  }

  /** A workspace's, with their current documents, optionally only these ids or one status. */
  list(filter: { workspaceId: string; ids?: readonly string[]; status?: string }, page: Page): Promise<Paged<DocumentWithBody>> {
    const { table, versions, key } = this.spec;
    const where = ['g.workspace_id = ?'];
    const params: unknown[] = [filter.workspaceId];
    if (filter.ids !== undefined) {
      where.push(`g.id IN (${filter.ids.map(() => '?').join(', ')})`);
      params.push(...filter.ids);
    }
    if (filter.status !== undefined) {
      where.push('g.status = ?');
      params.push(filter.status);
    }
    const from = `FROM ${table} g JOIN ${versions} v ON v.${key} = g.id AND v.version = g.version WHERE ${where.join(' AND ')}`;
    return this.tables.paged(from, params, 'g.created_at, g.id', page, 'g.*, v.body, v.sealed');
  }

  /** The one a request names, as the caller may see it (see {@link visibleInWorkspace}). */
  visible(ctx: RequestContext, ref: string): Promise<DocumentWithBody> {
    return visibleInWorkspace(ctx, this.identity, ref, (workspaceId, r) => this.find(workspaceId, r), this.spec.kind);
  }

  /**
   * Creates a resource with its first version in the caller's workspace (or `workspace_id`): the document checked and its credentials sealed. A slug taken is a 409.
   */
  async create(ctx: RequestContext, meta: { name: string; slug?: string; workspace_id?: string | null }, document: Record<string, unknown>): Promise<DocumentWithBody> {
    this.rules.check(document);
    const identity = this.identity;
    const workspaceId = await workspaceFor(ctx, identity, meta.workspace_id);
    const slug = meta.slug ?? randomSlug(10);
    if ((await this.find(workspaceId, slug)) !== undefined) throw conflict(`A ${this.spec.kind} with slug "${slug}" exists in this workspace.`, 'slug');
    const now = identity.now();
    const row: DocumentRow = { id: `${this.spec.idPrefix}${randomSlug(16)}`, workspace_id: workspaceId, slug, name: meta.name, status: 'active', version: 1, created_at: now, updated_at: now };
    if (this.spec.archives) row.archived_at = null;
    const stored = this.sealed.seal(row.id, document, null, this.spec.field);
    await insertVersioned(this.tables, this.spec, { ...row }, { version: 1, ...stored, created_at: now });
    identity.invalidate();
    return { ...row, ...stored };
  }

  /** Sets `name` and `status`; a `document` is a new version (a mask sent back keeps the credential the current one holds there). */
  async update(row: DocumentWithBody, meta: { name?: string; status?: string }, document: Record<string, unknown> | undefined): Promise<DocumentWithBody> {
    let stored: StoredDocument | null = null;
    if (document !== undefined) {
      this.rules.check(document);
      stored = this.sealed.seal(row.id, document, row, this.spec.field);
    }
    const now = this.identity.now();
    const patch = patchOf(meta, ['name'], now);
    if (meta.status !== undefined && !this.spec.archives) patch.status = meta.status;
    else if (meta.status !== undefined && meta.status !== row.status) {
      patch.status = meta.status;
      patch.archived_at = meta.status === 'archived' ? now : null;
    }
    // Read back inside the transaction: the answer is the version this update made, not a later one a concurrent update committed.
    const updated = await updateVersioned(this.tables, this.spec, row.id, now, stored === null ? null : { ...stored }, patch, async (tx) => (await this.find(null, row.id, tx))!);
    this.identity.invalidate();
    return updated;
  }

  /** DELETE: archives (answering the resource) or deletes it with its versions. */
  async remove(row: DocumentWithBody): Promise<unknown> {
    const { table, versions, key, kind } = this.spec;
    if (this.spec.archives) {
      if (row.status !== 'archived') {
        const now = this.identity.now();
        await this.tables.update(table, { id: row.id }, { status: 'archived', archived_at: now, updated_at: now });
        this.identity.invalidate();
      }
      return this.present((await this.find(null, row.id))!);
    }
    await this.tables.db().transaction(async (tx) => {
      await tx.run(`DELETE FROM ${versions} WHERE ${key} = ?`, [row.id]);
      await tx.run(`DELETE FROM ${table} WHERE id = ?`, [row.id]);
    });
    this.identity.invalidate();
    return { id: row.id, object: kind, deleted: true };
  }

  /** Its versions, newest first, as answers show them. */
  async versions(row: DocumentRow): Promise<unknown[]> {
    const { versions, key, kind } = this.spec;
    const rows = await this.tables.all<StoredDocument & { version: number; created_at: number }>(`SELECT * FROM ${versions} WHERE ${key} = ? ORDER BY version DESC`, [row.id]);
    return rows.map((ver) => ({ object: `${kind}-version`, [key]: row.id, version: ver.version, ...this.#document(ver), created_at: iso(ver.created_at) }));
  }

  /** One as answers show it: its document (credentials masked) unless `withBody` is false. */
  present(row: DocumentRow & Partial<StoredDocument>, withBody = true) {
    const document = withBody && row.body !== undefined ? this.#document(row as DocumentWithBody) : {};
    return {
      id: row.id,
      object: this.spec.kind,
      slug: row.slug,
      name: row.name,
      workspace_id: row.workspace_id,
      status: row.status,
      version: row.version,
      ...document,
      created_at: iso(row.created_at),
      updated_at: iso(row.updated_at),
      ...(this.spec.archives ? { archived_at: iso(row.archived_at ?? null) } : {}),
    };
  }

  /** The masked document, under its field or spread beside the resource's own. */
  #document(stored: StoredDocument): Record<string, unknown> {
    const masked = this.sealed.masked(stored);
    return this.spec.field === undefined ? masked : { [this.spec.field]: masked };
  }
}
