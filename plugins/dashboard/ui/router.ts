import { useEffect, useState } from 'preact/hooks';

/** A route in the hash (`#/logs/log_123?status=500`): works from static files with no server-side routes. */
export interface Route {
  parts: string[];
  query: URLSearchParams;
}

function current(): Route {
  const raw = location.hash.replace(/^#\/?/, '');
  const [path = '', query = ''] = raw.split('?', 2);
  return { parts: path.split('/').filter((p) => p !== '').map(decodeURIComponent), query: new URLSearchParams(query) };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(current);
  useEffect(() => {
    const on = () => setRoute(current());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

export function href(parts: string[], query?: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== '') q.set(k, v);
  const s = q.toString();
  return `#/${parts.map(encodeURIComponent).join('/')}${s === '' ? '' : `?${s}`}`;
}

export function go(parts: string[], query?: Record<string, string | undefined>): void {
  location.hash = href(parts, query);
}
