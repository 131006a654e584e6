import { compilePattern, GatewayError, type Pattern } from '../../../sdk/index.js';

/**
 * Conditional-routing queries, a small subset of MongoDB's query language:
 * `{ "metadata.plan": "pro" }`, `{ "params.temperature": { "$gt": 0.5 } }`,
 * `{ "$or": [ … ] }`. A plain value means `$eq`; `$regex` takes an RE2
 * pattern (no backreferences or lookaround). Field paths start with
 * `metadata.` (x-gateway-metadata) or `params.` (the request body).
 */
export type Predicate = (data: QueryData) => boolean;

export interface QueryData {
  metadata: Record<string, unknown>;
  params: Record<string, unknown>;
}

const OPERATORS = new Set(['$eq', '$ne', '$in', '$nin', '$gt', '$gte', '$lt', '$lte', '$regex', '$exists']);

/** Compiles a query once into a predicate; an unknown operator or a bad operand is a 400 naming `where`. */
export function compileQuery(query: unknown, where: string): Predicate {
  if (query === null || typeof query !== 'object' || Array.isArray(query)) {
    throw bad(where, 'a query must be an object');
  }
  const parts: Predicate[] = [];
  for (const [key, value] of Object.entries(query as Record<string, unknown>)) {
    if (key === '$and' || key === '$or') {
      if (!Array.isArray(value) || value.length === 0) throw bad(`${where}.${key}`, `${key} takes a non-empty array of queries`);
      const subs = value.map((q, i) => compileQuery(q, `${where}.${key}[${i}]`));
      parts.push(key === '$and' ? (d) => subs.every((p) => p(d)) : (d) => subs.some((p) => p(d)));
    } else if (key.startsWith('$')) {
      throw bad(`${where}.${key}`, `unknown operator ${key}`);
    } else {
      parts.push(compileField(key, value, `${where}.${key}`));
    }
  }
  return (d) => parts.every((p) => p(d));
}

function compileField(path: string, condition: unknown, where: string): Predicate {
  const segments = path.split('.');
  const root = segments[0];
  if (root !== 'metadata' && root !== 'params') throw bad(where, 'a field must start with metadata. or params.');
  const get = (d: QueryData): unknown => {
    let v: unknown = d[root];
    for (let i = 1; i < segments.length; i++) {
      if (v === null || typeof v !== 'object') return undefined;
      v = (v as Record<string, unknown>)[segments[i]!];
    }
    return v;
  };
  const isOperatorObject =
    condition !== null && typeof condition === 'object' && !Array.isArray(condition) && Object.keys(condition).length > 0 && Object.keys(condition).every((k) => k.startsWith('$'));
  if (!isOperatorObject) return (d) => equal(get(d), condition);
  const checks = Object.entries(condition as Record<string, unknown>).map(([op, operand]) => compileOperator(op, operand, `${where}.${op}`));
  return (d) => {
    const v = get(d);
    return checks.every((c) => c(v));
  };
}

function compileOperator(op: string, operand: unknown, where: string): (v: unknown) => boolean {
  if (!OPERATORS.has(op)) throw bad(where, `unknown operator ${op}`);
  switch (op) {
    case '$eq':
      return (v) => equal(v, operand);
    case '$ne':
      return (v) => !equal(v, operand);
    case '$in':
    case '$nin': {
      if (!Array.isArray(operand)) throw bad(where, `${op} takes an array`);
      const hit = (v: unknown) => operand.some((o) => equal(v, o));
      return op === '$in' ? hit : (v) => !hit(v);
    }
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte': {
      if (typeof operand !== 'number' && typeof operand !== 'string') throw bad(where, `${op} takes a number or a string`);
      return (v) => {
        if (typeof v !== typeof operand) return false;
        const a = v as number | string;
        return op === '$gt' ? a > operand : op === '$gte' ? a >= operand : op === '$lt' ? a < operand : a <= operand;
      };
    }
    case '$regex': {
      if (typeof operand !== 'string') throw bad(where, '$regex takes a string');
      // RE2 (linear time): a pattern from a client's config must not be able to stall the gateway.
      let re: Pattern;
      try {
        re = compilePattern(operand);
      } catch (err) {
        throw bad(where, (err as Error).message);
      }
      // The field tested (`params.model`), named when a value is too long for the pattern.
      const field = /(?:^|\.)((?:params|metadata)\..*)\.\$regex$/.exec(where)?.[1] ?? null;
      return (v) => {
        if (typeof v !== 'string') return false;
        try {
          return re.test(v);
        } catch (err) {
          // A value too long for this pattern's work budget: say so rather than route as if it did not match.
          throw new GatewayError('invalid_request', `The request cannot be routed: ${where} ${(err as Error).message}.`, { param: field });
        }
      };
    }
    default: {
      if (typeof operand !== 'boolean') throw bad(where, '$exists takes true or false');
      return (v) => (v !== undefined) === operand;
    }
  }
}

/** Equality for JSON values; an array field matches when it contains the value (as in MongoDB). */
function equal(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) && !Array.isArray(b)) return a.some((x) => equal(x, b));
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  return JSON.stringify(a) === JSON.stringify(b);
}

function bad(where: string, rule: string): GatewayError {
  return new GatewayError('invalid_request', `Invalid config: ${where}: ${rule}.`, { param: 'x-gateway-config' });
}
