import { GatewayError } from '../../core/index.js';
import { maskedJson, openJson, sealJson, type SealedJson } from '../sealed-json.js';
import type { SecretBox } from '../secret-box.js';
import type { SqlClient } from '../sql.js';

/** A stored version of a document: its body (credentials masked) and its sealed credentials ('' none; null from before sealing). */
export interface StoredDocument {
  /** The document as JSON text, credentials masked. */
  body: string;
  /** Its credentials, sealed; `''` when it holds none, null for a version written before sealing existed. */
  sealed: string | null;
}

/**
 * The credentials inside stored JSON documents (saved configs, stored
 * guardrails): sealed at rest with the gateway's encryption key, each version
 * bound to its record (`<kind>:<id>`), masked in every answer, opened for the
 * request path. `credentialKeys` names the keys whose values are credentials
 * at any depth (target fields declared `credential`, checks' `credentials`);
 * it is read when first needed, once the gateway is ready.
 */
export class SealedDocuments {
  #keys: ReadonlySet<string> | null = null;

  constructor(
    private readonly kind: string,
    private readonly box: () => SecretBox,
    private readonly credentialKeys: () => ReadonlySet<string>,
  ) {}

  /** The keys whose values are credentials, read from `credentialKeys` on first use. */
  get keys(): ReadonlySet<string> {
    return (this.#keys ??= this.credentialKeys());
  }

  /** A version to store: credentials sealed to the record, masked in the body; a mask sent back keeps what `previous` holds there. */
  seal(id: string, value: unknown, previous: StoredDocument | null, param?: string): SealedJson {
    const aad = `${this.kind}:${id}`;
    // A version from before sealing holds its credentials in its body: sealed here only to compare masks with.
    const prior = previous === null ? null : previous.sealed === null ? sealJson(this.box(), aad, JSON.parse(previous.body), this.keys) : { body: previous.body, sealed: previous.sealed };
    return sealJson(this.box(), aad, value, this.keys, { previous: prior, param });
  }

  /** A stored version with its credentials, for the request path; a 503 naming `what` when they cannot be decrypted. */
  open(id: string, stored: StoredDocument, what: string): unknown {
    try {
      return openJson(this.box(), `${this.kind}:${id}`, stored);
    } catch {
      throw new GatewayError('service_unavailable', `${what}: its credentials cannot be decrypted with this gateway's encryption key.`);
    }
  }

  /** A stored version as answers show it: credentials masked. */
  masked(stored: StoredDocument): Record<string, unknown> {
    return maskedJson(stored, this.keys) as Record<string, unknown>;
  }

  /**
   * Seals the versions of `table` written before sealing existed (`sealed` NULL); `idColumn` names the
   * record. Each row is rewritten only while still unsealed, so instances starting together do it once.
   */
  async sealLegacy(db: SqlClient, table: string, idColumn: string): Promise<number> {
    let count = 0;
    const rows = await db.all<{ id: string; version: number; body: string }>(`SELECT ${idColumn} AS id, version, body FROM ${table} WHERE sealed IS NULL`, []);
    for (const row of rows) {
      const sealed = sealJson(this.box(), `${this.kind}:${row.id}`, JSON.parse(row.body), this.keys);
      count += (await db.run(`UPDATE ${table} SET body = ?, sealed = ? WHERE ${idColumn} = ? AND version = ? AND sealed IS NULL`, [sealed.body, sealed.sealed, row.id, row.version])).changes;
    }
    return count;
  }
}
