/** Display helpers: every number on a page goes through one of these. */

export const int = (n: number | null | undefined): string => (n === null || n === undefined ? '—' : Math.round(n).toLocaleString('en-US'));

export function usd(n: number | null | undefined): string {
  if (n === null || n === undefined) return '—';
  // Per-request costs are often fractions of a cent: keep two significant digits rather than print $0.00.
  if (n !== 0 && Math.abs(n) < 0.01) return `$${Number(n.toPrecision(2)).toFixed(Math.min(12, 1 - Math.floor(Math.log10(Math.abs(n)))))}`;
  return `$${n.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 4 })}`;
}

export const ms = (n: number | null | undefined): string => (n === null || n === undefined ? '—' : n < 10 ? `${n.toFixed(2)} ms` : `${Math.round(n).toLocaleString('en-US')} ms`);

export const pct = (n: number | null | undefined): string => (n === null || n === undefined ? '—' : `${(n * 100).toFixed(1)}%`);

/** A local date and time to the second, the way an operator reads a log. */
export function time(iso: string | null | undefined): string {
  if (iso === null || iso === undefined) return '—';
  const d = new Date(iso);
  const p = (x: number) => String(x).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** A `datetime-local` input's value for an instant, and back. */
export function toLocalInput(ms: number): string {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 16);
}

export const fromLocalInput = (value: string): number => new Date(value).getTime();
