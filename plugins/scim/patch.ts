import scimFilter from 'scim2-parse-filter';
import { MAX_OPERATIONS, ScimError } from './protocol.js';
import type { ScimEmail } from './store.js';

/*
 * PATCH (RFC 7644 §3.5.2) on the attributes this service keeps, written for
 * what Okta and Microsoft Entra send: `op` in any case ("Replace"), an
 * operation without `path` whose value is an object of attributes, value
 * filters in paths (`emails[type eq "work"].value`, `members[value eq "…"]`),
 * members removed by a value list (Entra), and booleans sent as the strings
 * "True" / "False" (Entra). Attributes the service does not keep (the
 * enterprise extension, `title`, `password`, …) are accepted and ignored.
 */

export interface UserModel {
  userName: string;
  externalId: string | null;
  givenName: string | null;
  familyName: string | null;
  formatted: string | null;
  displayName: string | null;
  emails: ScimEmail[];
  active: boolean;
}

export interface GroupModel {
  displayName: string;
  externalId: string | null;
  members: Set<string>;
}

type Op = 'add' | 'replace' | 'remove';
interface Operation {
  op: Op;
  path: string | null;
  value: unknown;
}

/** A path split into attribute, value filter and sub-attribute: `emails[type eq "work"].value`. */
interface Path {
  attr: string;
  filter: scimFilter.Filter | null;
  sub: string | null;
}

const CORE_URN = /^urn:ietf:params:scim:schemas:core:2\.0:(?:User|Group):/i;
const PATH = /^([A-Za-z][\w$-]*)(?:\[(.+)\])?(?:\.([A-Za-z][\w$-]*))?$/;
const MAX_EMAILS = 20;
const MAX_STRING = 1024;

/** The operations of a PatchOp body; a body that is not one is a 400 `invalidSyntax`. */
export function operations(body: Record<string, unknown>): Operation[] {
  const ops = body.Operations ?? body.operations;
  if (!Array.isArray(ops) || ops.length === 0) throw new ScimError(400, 'invalidSyntax', 'A PATCH body needs "Operations": a non-empty array.');
  if (ops.length > MAX_OPERATIONS) throw new ScimError(400, 'tooMany', `A PATCH body takes at most ${MAX_OPERATIONS} operations.`);
  return ops.map((raw, i) => {
    if (typeof raw !== 'object' || raw === null) throw new ScimError(400, 'invalidSyntax', `Operations[${i}] must be an object.`);
    const o = raw as Record<string, unknown>;
    const op = typeof o.op === 'string' ? o.op.toLowerCase() : '';
    if (op !== 'add' && op !== 'replace' && op !== 'remove') throw new ScimError(400, 'invalidSyntax', `Operations[${i}].op must be "add", "replace" or "remove".`);
    if (o.path !== undefined && o.path !== null && typeof o.path !== 'string') throw new ScimError(400, 'invalidPath', `Operations[${i}].path must be a string.`);
    const path = typeof o.path === 'string' && o.path.trim() !== '' ? o.path.trim() : null;
    if (path === null && op === 'remove') throw new ScimError(400, 'noTarget', `Operations[${i}]: "remove" needs a path.`);
    if (path === null && (typeof o.value !== 'object' || o.value === null || Array.isArray(o.value))) {
      throw new ScimError(400, 'invalidValue', `Operations[${i}]: without a path, the value must be an object of attributes.`);
    }
    return { op, path, value: o.value };
  });
}

/** Parses a path; null for one naming an extension schema (ignored). */
function parsePath(raw: string): Path | null {
  const path = raw.replace(CORE_URN, '');
  if (/^urn:/i.test(path)) return null;
  const m = PATH.exec(path);
  if (m === null) throw new ScimError(400, 'invalidPath', `The path "${raw.slice(0, 200)}" is not a path this service understands.`);
  let filter: scimFilter.Filter | null = null;
  if (m[2] !== undefined) {
    try {
      filter = scimFilter.parse(m[2]);
    } catch {
      throw new ScimError(400, 'invalidPath', `The value filter of "${raw.slice(0, 200)}" is not a valid SCIM filter.`);
    }
  }
  return { attr: m[1]!.toLowerCase(), filter, sub: m[3]?.toLowerCase() ?? null };
}

/** Whether an element of a multi-valued attribute matches a value filter: `eq` (strings compared case-insensitively), `and`, `or`. */
function matches(filter: scimFilter.Filter, element: Record<string, unknown>): boolean {
  if (filter.op === 'and') return (filter as scimFilter.LogExp).filters.every((f) => matches(f, element));
  if (filter.op === 'or') return (filter as scimFilter.LogExp).filters.some((f) => matches(f, element));
  if (filter.op !== 'eq') throw new ScimError(400, 'invalidPath', 'Value filters in paths support "eq", "and" and "or".');
  const { attrPath, compValue } = filter as scimFilter.Compare;
  const actual = element[attrPath.toLowerCase()] ?? element[attrPath];
  if (typeof actual === 'string' && typeof compValue === 'string') return actual.toLowerCase() === compValue.toLowerCase();
  return actual === compValue;
}

/** The `attr eq value` pairs of a filter: what a new element created through a filtered path starts with. */
function seed(filter: scimFilter.Filter): Record<string, unknown> {
  if (filter.op === 'and') return Object.assign({}, ...(filter as scimFilter.LogExp).filters.map(seed));
  if (filter.op === 'eq') {
    const { attrPath, compValue } = filter as scimFilter.Compare;
    return { [attrPath.toLowerCase()]: compValue };
  }
  return {};
}

export function str(value: unknown, what: string, nullable: true): string | null;
export function str(value: unknown, what: string, nullable: false): string;
export function str(value: unknown, what: string, nullable: boolean): string | null {
  if ((value === null || value === undefined) && nullable) return null;
  if (typeof value !== 'string' || (!nullable && value.trim() === '')) throw new ScimError(400, 'invalidValue', `${what} must be ${nullable ? 'a string' : 'a non-empty string'}.`);
  if (value.length > MAX_STRING) throw new ScimError(400, 'invalidValue', `${what} is longer than ${MAX_STRING} characters.`);
  return value;
}

/** A boolean, or Entra's "True" / "False". */
export function bool(value: unknown, what: string): boolean {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string' && /^(true|false)$/i.test(value)) return value.toLowerCase() === 'true';
  throw new ScimError(400, 'invalidValue', `${what} must be a boolean.`);
}

/** The `emails` list as kept: values trimmed, at most {@link MAX_EMAILS}. */
export function emailList(value: unknown): ScimEmail[] {
  if (value === null || value === undefined) return [];
  if (!Array.isArray(value)) throw new ScimError(400, 'invalidValue', 'emails must be an array.');
  if (value.length > MAX_EMAILS) throw new ScimError(400, 'invalidValue', `emails holds at most ${MAX_EMAILS} addresses.`);
  return value.map((e, i) => email(e, `emails[${i}]`));
}

function email(e: unknown, what: string): ScimEmail {
  if (typeof e !== 'object' || e === null) throw new ScimError(400, 'invalidValue', `${what} must be an object with "value".`);
  const o = e as Record<string, unknown>;
  const out: ScimEmail = { value: str(o.value, `${what}.value`, false).trim() };
  if (o.type !== undefined && o.type !== null) out.type = str(o.type, `${what}.type`, false);
  if (o.primary !== undefined && o.primary !== null) out.primary = bool(o.primary, `${what}.primary`);
  return out;
}

/** Applies a PATCH to a user. */
export function patchUser(user: UserModel, ops: readonly Operation[]): void {
  for (const o of ops) {
    if (o.path === null) {
      for (const [key, value] of Object.entries(o.value as Record<string, unknown>)) setUser(user, key, o.op, value);
    } else setUser(user, o.path, o.op, o.value);
  }
}

function setUser(user: UserModel, rawPath: string, op: Op, value: unknown): void {
  const path = parsePath(rawPath);
  if (path === null) return;
  const remove = op === 'remove';
  const { attr, filter, sub } = path;
  if (attr === 'emails') return setEmails(user, filter, sub, op, value);
  if (filter !== null) return; // a filtered path on an attribute this service does not keep
  switch (sub === null ? attr : `${attr}.${sub}`) {
    case 'username':
      if (remove) throw new ScimError(400, 'mutability', 'userName is required: it cannot be removed.');
      user.userName = str(value, 'userName', false);
      return;
    case 'active':
      if (remove) throw new ScimError(400, 'mutability', 'active cannot be removed; replace it with false.');
      user.active = bool(value, 'active');
      return;
    case 'externalid':
      user.externalId = remove ? null : str(value, 'externalId', true);
      return;
    case 'displayname':
      user.displayName = remove ? null : str(value, 'displayName', true);
      return;
    case 'name.givenname':
      user.givenName = remove ? null : str(value, 'name.givenName', true);
      return;
    case 'name.familyname':
      user.familyName = remove ? null : str(value, 'name.familyName', true);
      return;
    case 'name.formatted':
      user.formatted = remove ? null : str(value, 'name.formatted', true);
      return;
    case 'name': {
      if (remove || value === null) {
        user.givenName = user.familyName = user.formatted = null;
        return;
      }
      if (typeof value !== 'object' || Array.isArray(value)) throw new ScimError(400, 'invalidValue', 'name must be an object.');
      const n = value as Record<string, unknown>;
      if (n.givenName !== undefined) user.givenName = str(n.givenName, 'name.givenName', true);
      if (n.familyName !== undefined) user.familyName = str(n.familyName, 'name.familyName', true);
      if (n.formatted !== undefined) user.formatted = str(n.formatted, 'name.formatted', true);
      return;
    }
    default:
      // Not kept (title, locale, password, phoneNumbers, …): accepted and ignored.
      return;
  }
}

function setEmails(user: UserModel, filter: scimFilter.Filter | null, sub: string | null, op: Op, value: unknown): void {
  if (filter === null) {
    if (sub !== null) throw new ScimError(400, 'invalidPath', 'A sub-attribute of emails needs a value filter: emails[type eq "work"].value.');
    if (op === 'remove') user.emails = [];
    else if (op === 'replace') user.emails = emailList(value);
    else for (const e of emailList(Array.isArray(value) ? value : [value])) if (!user.emails.some((x) => x.value.toLowerCase() === e.value.toLowerCase())) user.emails.push(e);
    return;
  }
  const hits = user.emails.filter((e) => matches(filter, e as unknown as Record<string, unknown>));
  if (op === 'remove') {
    if (sub === null) user.emails = user.emails.filter((e) => !hits.includes(e));
    else if (sub === 'value') throw new ScimError(400, 'mutability', 'An email needs its value; remove the email instead.');
    else for (const e of hits) delete (e as unknown as Record<string, unknown>)[sub];
    return;
  }
  if (hits.length === 0) {
    // `replace emails[type eq "work"].value` with no work email yet creates it (Entra relies on this).
    const created = email({ ...seed(filter), ...(sub === null ? (value as object) : { [sub]: value }) }, 'emails');
    if (user.emails.length >= MAX_EMAILS) throw new ScimError(400, 'invalidValue', `emails holds at most ${MAX_EMAILS} addresses.`);
    user.emails.push(created);
    return;
  }
  for (const e of hits) {
    const next = email(sub === null ? value : { ...e, [sub]: value }, 'emails');
    Object.assign(e, next);
  }
}

/** Applies a PATCH to a group. */
export function patchGroup(group: GroupModel, ops: readonly Operation[]): void {
  for (const o of ops) {
    if (o.path === null) {
      for (const [key, value] of Object.entries(o.value as Record<string, unknown>)) setGroup(group, key, o.op, value);
    } else setGroup(group, o.path, o.op, o.value);
  }
}

function setGroup(group: GroupModel, rawPath: string, op: Op, value: unknown): void {
  const path = parsePath(rawPath);
  if (path === null) return;
  const remove = op === 'remove';
  if (path.attr === 'members') {
    if (path.filter !== null) {
      if (!remove) throw new ScimError(400, 'invalidPath', 'Members are added with the path "members" and a value list.');
      for (const id of [...group.members]) if (matches(path.filter, { value: id })) group.members.delete(id);
      return;
    }
    if (remove && (value === undefined || value === null)) {
      group.members.clear();
      return;
    }
    const ids = memberIds(value);
    if (op === 'replace') group.members = new Set(ids);
    else for (const id of ids) (remove ? group.members.delete(id) : group.members.add(id));
    return;
  }
  switch (path.attr) {
    case 'displayname':
      if (remove) throw new ScimError(400, 'mutability', 'displayName is required: it cannot be removed.');
      group.displayName = str(value, 'displayName', false);
      return;
    case 'externalid':
      group.externalId = remove ? null : str(value, 'externalId', true);
      return;
    default:
      // `id` (Okta repeats it in a rename), `schemas`, `meta` and anything not kept: ignored.
      return;
  }
}

/** The user ids of a `members` value: `[{ "value": "<id>" }, …]` (or one such object). */
export function memberIds(value: unknown): string[] {
  const list = Array.isArray(value) ? value : [value];
  return list.map((m, i) => {
    const id = typeof m === 'object' && m !== null ? (m as Record<string, unknown>).value : undefined;
    if (typeof id !== 'string' || id === '' || id.length > 64) throw new ScimError(400, 'invalidValue', `members[${i}].value must be a user id.`);
    return id;
  });
}
