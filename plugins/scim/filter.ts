import scimFilter from 'scim2-parse-filter';
import { ScimError } from './protocol.js';
import { nameKey, USER_EMAIL, type Condition } from './store.js';

/*
 * List filters (RFC 7644 §3.4.2.2), the subset identity providers send when
 * they look a resource up before creating it: `eq` on an identifying
 * attribute, possibly joined with `and`. Parsing is scim2-parse-filter's; the
 * attributes it may name, and how each is compared, are ours.
 */

interface Attribute {
  column: string;
  /** Names are case-insensitive (RFC 7643 `caseExact: false`): compared on their lower-cased key. */
  fold: boolean;
}

const USER_ATTRIBUTES: Readonly<Record<string, Attribute>> = {
  id: { column: 's.user_id', fold: false },
  username: { column: 's.user_name_key', fold: true },
  externalid: { column: 's.external_id', fold: false },
  'emails.value': { column: USER_EMAIL, fold: true },
  emails: { column: USER_EMAIL, fold: true },
};

const GROUP_ATTRIBUTES: Readonly<Record<string, Attribute>> = {
  id: { column: 'id', fold: false },
  displayname: { column: 'display_name_key', fold: true },
  externalid: { column: 'external_id', fold: false },
};

const CORE_PREFIX = /^urn:ietf:params:scim:schemas:core:2\.0:(?:user|group):/i;

/** Longest filter read: IdPs send a few dozen characters. */
const MAX_FILTER_LENGTH = 1024;

/** The conditions a `filter` query parameter sets; empty for none. A filter outside the subset is a 400 `invalidFilter`. */
export function parseFilter(filter: string | undefined, resource: 'User' | 'Group'): Condition[] {
  if (filter === undefined || filter.trim() === '') return [];
  if (filter.length > MAX_FILTER_LENGTH) throw new ScimError(400, 'invalidFilter', `The filter is longer than ${MAX_FILTER_LENGTH} characters.`);
  let ast: scimFilter.Filter;
  try {
    ast = scimFilter.parse(filter);
  } catch {
    throw new ScimError(400, 'invalidFilter', 'The filter is not a valid SCIM filter.');
  }
  const attributes = resource === 'User' ? USER_ATTRIBUTES : GROUP_ATTRIBUTES;
  const out: Condition[] = [];
  const walk = (node: scimFilter.Filter): void => {
    if (node.op === 'and') {
      for (const f of (node as scimFilter.LogExp).filters) walk(f);
      return;
    }
    if (node.op !== 'eq') throw unsupported(resource);
    const { attrPath, compValue } = node as scimFilter.Compare;
    const attribute = attributes[attrPath.replace(CORE_PREFIX, '').toLowerCase()];
    if (attribute === undefined || typeof compValue !== 'string') throw unsupported(resource);
    out.push({ column: attribute.column, value: attribute.fold ? nameKey(compValue) : compValue });
  };
  walk(ast);
  return out;
}

function unsupported(resource: 'User' | 'Group'): ScimError {
  const names = resource === 'User' ? 'userName, externalId, id, emails.value' : 'displayName, externalId, id';
  return new ScimError(400, 'invalidFilter', `${resource} filters support "eq" on ${names} (with "and"); this filter uses something else.`);
}
