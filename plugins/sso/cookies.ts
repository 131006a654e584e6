/* Cookies the single sign-on routes set and read (RFC 6265). */

/** The value of cookie `name` in a `Cookie` header; undefined when absent. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (header === undefined || header === '') return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq === -1) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export interface CookieOptions {
  path: string;
  /** Seconds; 0 deletes the cookie. */
  maxAge: number;
  secure: boolean;
}

/**
 * A `Set-Cookie` value: always HttpOnly (scripts never read a session) and
 * SameSite=Lax (a cross-site form cannot send it; the redirect back from the
 * identity provider, a top-level GET, still can).
 */
export function setCookie(name: string, value: string, o: CookieOptions): string {
  return `${name}=${value}; Path=${o.path}; Max-Age=${Math.max(0, Math.floor(o.maxAge))}; HttpOnly; SameSite=Lax${o.secure ? '; Secure' : ''}`;
}
