import type { ComponentChildren, JSX } from 'preact';
import { useState } from 'preact/hooks';
import { ApiError } from './api.js';

/** An error as the server put it, with the field it names. */
export function ErrorBox({ error }: { error: unknown }) {
  if (error === null || error === undefined) return null;
  const e = error instanceof ApiError ? error : null;
  return (
    <div class="error" role="alert" data-testid="error">
      <strong>{e === null ? 'Error' : `${e.status}${e.code ? ` ${e.code}` : ''}`}</strong>: {error instanceof Error ? error.message : String(error)}
      {e?.param ? <span class="param"> (field: {e.param})</span> : null}
    </div>
  );
}

export function Stat({ label, value, id }: { label: string; value: string; id: string }) {
  return (
    <div class="stat" data-testid={`stat-${id}`}>
      <div class="stat-label">{label}</div>
      <div class="stat-value">{value}</div>
    </div>
  );
}

export interface Column<T> {
  key: string;
  label: string;
  render?: (row: T) => ComponentChildren;
  numeric?: boolean;
}

/**
 * A table whose rows can be opened with a click or Enter (keyboard users tab
 * to a row), when `onOpen` is given.
 */
export function Table<T extends Record<string, any>>({ columns, rows, onOpen, empty, testid }: { columns: Column<T>[]; rows: T[]; onOpen?: (row: T) => void; empty?: string; testid?: string }) {
  if (rows.length === 0) return <p class="muted" data-testid={testid === undefined ? undefined : `${testid}-empty`}>{empty ?? 'Nothing here yet.'}</p>;
  return (
    <div class="table-wrap">
      <table data-testid={testid}>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" class={c.numeric ? 'num' : undefined}>
                {c.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr
              tabIndex={onOpen ? 0 : undefined}
              class={onOpen ? 'clickable' : undefined}
              onClick={onOpen ? () => onOpen(row) : undefined}
              onKeyDown={onOpen ? (e: KeyboardEvent) => e.key === 'Enter' && onOpen(row) : undefined}
            >
              {columns.map((c) => (
                <td class={c.numeric ? 'num' : undefined}>{c.render ? c.render(row) : (row[c.key] ?? '—')}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** A bar as wide as `value` is of `max`: the breakdown tables' small charts. */
export function Bar({ value, max, label }: { value: number; max: number; label: string }) {
  const width = max > 0 ? Math.max(0, Math.min(100, (value / max) * 100)) : 0;
  return (
    <div class="bar-cell">
      <span class="bar" style={{ width: `${width}%` }} aria-hidden="true" />
      <span class="bar-label">{label}</span>
    </div>
  );
}

export function Json({ value }: { value: unknown }) {
  if (value === null || value === undefined) return <p class="muted">None.</p>;
  let text: string;
  if (typeof value === 'string') {
    try {
      text = JSON.stringify(JSON.parse(value), null, 2);
    } catch {
      text = value;
    }
  } else text = JSON.stringify(value, null, 2);
  return <pre class="json">{text}</pre>;
}

export function Field({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    <label class="field">
      <span>{label}</span>
      {children}
    </label>
  );
}

/** A secret the server shows once: in view until dismissed, with a copy button. */
export function SecretOnce({ secret, onDone }: { secret: string; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  return (
    <div class="secret" role="status">
      <p>
        <strong>Copy this key now.</strong> It is shown once and never again.
      </p>
      <code data-testid="new-secret">{secret}</code>
      <div class="row">
        <button type="button" onClick={() => navigator.clipboard?.writeText(secret).then(() => setCopied(true), () => undefined)}>
          {copied ? 'Copied' : 'Copy'}
        </button>
        <button type="button" class="secondary" onClick={onDone}>
          Done
        </button>
      </div>
    </div>
  );
}

export function Section({ title, children, actions }: { title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  return (
    <section class="card">
      <header class="card-head">
        <h2>{title}</h2>
        {actions}
      </header>
      {children}
    </section>
  );
}

export type InputEvent = JSX.TargetedEvent<HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement, Event>;
export const valueOf = (e: InputEvent): string => e.currentTarget.value;

/** A control-plane resource as an admin list shows it. */
export type Row = Record<string, any>;

/** A resource's status (`active`, `archived`, `disabled`) as a pill. */
export const status = (r: Row) => <span class={`pill ${r.status ?? ''}`}>{r.status ?? '—'}</span>;
