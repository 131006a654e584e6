import { GatewayError } from '../core/index.js';
import { maskSecret, type SecretBox } from './secret-box.js';

/**
 * A JSON document stored with its credentials sealed: `body` is the document
 * with every credential replaced by its mask (what answers show, read without
 * decrypting), `sealed` the credentials themselves, encrypted as one list of
 * `[path, value]` pairs; `''` when the document holds none.
 */
export interface SealedJson {
  /** The document as JSON text, every credential replaced by its mask: what answers show. */
  body: string;
  /** The credentials, encrypted as one list of `[path, value]` pairs; `''` when the document holds none. */
  sealed: string;
}

type Path = Array<string | number>;
type Secrets = Array<[Path, string]>;

/**
 * Every string under a key named in `credentialKeys`, at any depth: an
 * `api_key` of a nested target, each value of a webhook check's `headers`.
 * Numbers, booleans and nulls stay (no credential is one), and so do the
 * names of keys under a credential (header names).
 */
function collect(node: unknown, keys: ReadonlySet<string>, path: Path, inCredential: boolean, out: Secrets): void {
  if (typeof node === 'string') {
    if (inCredential && node !== '') out.push([path, node]);
    return;
  }
  if (Array.isArray(node)) {
    node.forEach((item, i) => collect(item, keys, [...path, i], inCredential, out));
    return;
  }
  if (node !== null && typeof node === 'object') {
    for (const [k, value] of Object.entries(node)) collect(value, keys, [...path, k], inCredential || keys.has(k), out);
  }
}

function pathKey(path: Path): string {
  return JSON.stringify(path);
}

/** `targets[0].api_key`, as errors name a field. */
function paramOf(path: Path): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');
}

function setAt(root: unknown, path: Path, value: string): void {
  let node = root as Record<string | number, unknown>;
  for (let i = 0; i < path.length - 1; i++) node = node[path[i]!] as Record<string | number, unknown>;
  node[path.at(-1)!] = value;
}

/**
 * Seals the credentials of `value` (bound to `aad`, the record's id) and masks
 * them in the stored body. With `previous` (the version before), a credential
 * sent back as the mask that version shows at the same place keeps its value,
 * so a client can read a document, change one field and write it back; any
 * other mask is a 400 (it would be stored as the credential).
 */
export function sealJson(
  box: SecretBox,
  aad: string,
  value: unknown,
  credentialKeys: ReadonlySet<string>,
  options: { previous?: SealedJson | null; /** Where the document sits in the request body, for errors (`config`). */ param?: string } = {},
): SealedJson {
  const previous = options.previous;
  const secrets: Secrets = [];
  collect(value, credentialKeys, [], false, secrets);
  if (secrets.length === 0) return { body: JSON.stringify(value), sealed: '' };
  const before = previous ? new Map(openSecrets(box, aad, previous.sealed).map(([p, v]) => [pathKey(p), v])) : null;
  const copy = structuredClone(value);
  for (const pair of secrets) {
    const kept = before?.get(pathKey(pair[0]));
    if (kept !== undefined && pair[1] === maskSecret(kept)) pair[1] = kept;
    // A mask that stands for nothing stored at that place would be saved as the credential itself.
    else if (pair[1].startsWith('****')) {
      const param = paramOf(options.param === undefined ? pair[0] : [options.param, ...pair[0]]);
      throw new GatewayError('invalid_request', `Invalid request body: '${param}' is a masked credential that stands for none stored at that place; send the credential itself.`, { param });
    }
    setAt(copy, pair[0], maskSecret(pair[1]));
  }
  return { body: JSON.stringify(copy), sealed: box.seal(JSON.stringify(secrets), aad) };
}

function openSecrets(box: SecretBox, aad: string, sealed: string): Secrets {
  return sealed === '' ? [] : (JSON.parse(box.open(sealed, aad)) as Secrets);
}

/**
 * The document with its credentials, for the request path. `sealed` null is a
 * row written before sealing existed: its body is the document itself.
 * Throws the box's error when the encryption key changed.
 */
export function openJson(box: SecretBox, aad: string, stored: { body: string; sealed: string | null }): unknown {
  const value = JSON.parse(stored.body) as unknown;
  if (stored.sealed === null || stored.sealed === '') return value;
  for (const [path, secret] of openSecrets(box, aad, stored.sealed)) setAt(value, path, secret);
  return value;
}

/**
 * The document as answers show it: the stored body, or for a row written
 * before sealing existed (`sealed` null) its credentials masked on the fly.
 */
export function maskedJson(stored: { body: string; sealed: string | null }, credentialKeys: ReadonlySet<string>): unknown {
  const value = JSON.parse(stored.body) as unknown;
  if (stored.sealed !== null) return value;
  const secrets: Secrets = [];
  collect(value, credentialKeys, [], false, secrets);
  for (const [path, secret] of secrets) setAt(value, path, maskSecret(secret));
  return value;
}
