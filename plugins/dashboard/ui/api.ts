/**
 * Calls to the gateway's own API. A key signs in with `x-gateway-api-key`; a
 * single sign-on session rides on its HttpOnly cookie, and its changes carry
 * the CSRF token from whoami (the server refuses them without it).
 */

const KEY_STORAGE = 'gateway.dashboard.key';

export interface Who {
  type: string;
  key_id?: string | null;
  workspace_id: string | null;
  role: string | null;
  scopes: string[];
  user?: { email: string | null; name: string | null };
  csrf_token?: string;
  workspaces?: { id: string; slug: string; name: string; role: string }[];
}

/** The gateway's error envelope, as thrown by {@link request}. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly param: string | null,
    readonly code: string | null,
  ) {
    super(message);
  }
}

let key: string | null = sessionStorage.getItem(KEY_STORAGE);
let csrf: string | null = null;

export const storedKey = (): string | null => key;

export function setKey(value: string | null): void {
  key = value;
  if (value === null) sessionStorage.removeItem(KEY_STORAGE);
  else sessionStorage.setItem(KEY_STORAGE, value);
}

export function setCsrf(value: string | null): void {
  csrf = value;
}

/** Sends one request; a JSON answer is returned parsed, an error envelope is thrown as {@link ApiError}. */
export async function request<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (key !== null) headers['x-gateway-api-key'] = key;
  else if (csrf !== null && method !== 'GET') headers['x-gateway-csrf'] = csrf;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin' });
  const text = await res.text();
  let parsed: any = null;
  try {
    parsed = text === '' ? null : JSON.parse(text);
  } catch {
    if (!res.ok) throw new ApiError(res.status, text.slice(0, 500) || res.statusText, null, null);
  }
  if (!res.ok) {
    const e = parsed?.error;
    throw new ApiError(res.status, typeof e?.message === 'string' ? e.message : `${res.status} ${res.statusText}`, e?.param ?? null, e?.code ?? null);
  }
  return parsed as T;
}

export const get = <T = any>(path: string, query?: Record<string, string | number | undefined | null>): Promise<T> => {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return request<T>('GET', s === '' ? path : `${path}?${s}`);
};

/** Why the last sign-in probe found no one signed in (a refused key, an ended session), if it said. */
let refusal: string | null = null;
export const lastRefusal = (): string | null => refusal;

/**
 * Who the key or session is, with its scopes; null when neither is accepted. The dashboard's own probe
 * (`session`, beside the page: `/dashboard/session`) answers 200 whether or not the caller is signed in,
 * and whoami is asked only when it is: whoami's 401 to someone not signed in would be logged by the
 * browser as a console error on every visit to the sign-in page.
 */
export async function whoami(): Promise<Who | null> {
  const session = await request<{ signed_in: boolean; reason: string | null }>('GET', 'session');
  refusal = session.reason;
  if (!session.signed_in) return null;
  try {
    const who = await request<Who>('GET', '/v1/auth/whoami');
    setCsrf(who.csrf_token ?? null);
    return who;
  } catch (err) {
    if (err instanceof ApiError && (err.status === 401 || err.status === 403)) return null;
    throw err;
  }
}

/**
 * Whether `scopes` grant `needed`: `*`, `resource.*`, `*.action` or the exact
 * scope, as the gateway itself decides.
 */
export function hasScope(scopes: readonly string[], needed: string): boolean {
  const [resource, action] = needed.split('.');
  return scopes.some((s) => s === '*' || s === needed || s === `${resource}.*` || s === `*.${action}`);
}
