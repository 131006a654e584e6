import { useState } from 'preact/hooks';
import { get } from '../api.js';
import { ErrorBox, Field, Table, valueOf, type Column } from '../components.js';
import { int, ms, time, usd } from '../format.js';
import { useLoad } from '../hooks.js';
import { go, type Route } from '../router.js';

type Entry = Record<string, any>;

/** Filters the list route takes, in the order the form shows them. */
const FILTERS = [
  ['status', 'Status', '500,502'],
  ['provider', 'Provider', 'openai or @slug'],
  ['model', 'Model', ''],
  ['workspace_id', 'Workspace', ''],
  ['api_key', 'API key id', ''],
  ['config', 'Config', ''],
  ['trace_id', 'Trace id', ''],
  ['cache_status', 'Cache', 'HIT, MISS, …'],
] as const;

/** The `kind` filter's choices: the list shows both kinds unless one is asked for (docs/logs.md, "Housekeeping traffic"). */
const KINDS = [
  ['', 'All'],
  ['api', 'API traffic'],
  ['housekeeping', 'Housekeeping (dashboard, docs, health, metrics, log reads)'],
] as const;

const PAGE = 50;

const COLUMNS: Column<Entry>[] = [
  { key: 'created_at', label: 'Time', render: (e) => time(e.created_at) },
  { key: 'status', label: 'Status', render: (e) => <span class={`status s${String(e.status)[0]}`}>{e.status}</span> },
  { key: 'path', label: 'Request', render: (e) => <span class="small">{`${e.method} ${e.path}`.slice(0, 48)}</span> },
  { key: 'provider', label: 'Provider', render: (e) => e.provider_requested ?? e.provider ?? '—' },
  { key: 'model', label: 'Model', render: (e) => e.model ?? e.model_requested ?? '—' },
  { key: 'workspace_id', label: 'Workspace' },
  { key: 'api_key_id', label: 'Key' },
  { key: 'config_id', label: 'Config' },
  { key: 'trace_id', label: 'Trace id', render: (e) => <code>{e.trace_id ?? '—'}</code> },
  { key: 'latency_ms', label: 'Latency', numeric: true, render: (e) => ms(e.latency_ms) },
  { key: 'total_tokens', label: 'Tokens', numeric: true, render: (e) => int(e.total_tokens) },
  { key: 'cost', label: 'Cost', numeric: true, render: (e) => usd(e.cost) },
  { key: 'cache_status', label: 'Cache' },
];

/** The request log: filters kept in the address (so a filtered view can be shared), cursor pages. */
export function Logs({ route }: { route: Route }) {
  const filters: Record<string, string> = {};
  for (const [k] of FILTERS) {
    const v = route.query.get(k);
    if (v !== null) filters[k] = v;
  }
  const from = route.query.get('from') ?? '';
  const to = route.query.get('to') ?? '';
  const kind = route.query.get('kind') ?? '';
  const [draft, setDraft] = useState<Record<string, string>>({ ...filters, from, to, kind });
  // Cursors of the pages before this one, so "Previous" walks back without the server keeping state.
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  const key = route.query.toString();
  const page = useLoad(
    () => get<{ data: Entry[]; has_more: boolean; next_cursor: string | null }>('/v1/logs', { ...filters, from: from || undefined, to: to || undefined, kind: kind || undefined, limit: PAGE, cursor }),
    [key, cursor],
  );
  const apply = (e: Event) => {
    e.preventDefault();
    setCursors([]);
    const q: Record<string, string | undefined> = {};
    for (const [k, v] of Object.entries(draft)) if (v.trim() !== '') q[k] = v.trim();
    go(['logs'], q);
  };
  return (
    <div class="page">
      <form class="filters" onSubmit={apply} aria-label="Filter the logs">
        {FILTERS.map(([k, label, hint]) => (
          <Field label={label}>
            <input name={k} value={draft[k] ?? ''} placeholder={hint} onInput={(e) => setDraft({ ...draft, [k]: valueOf(e) })} />
          </Field>
        ))}
        <Field label="From (ISO or epoch ms)">
          <input name="from" value={draft.from ?? ''} onInput={(e) => setDraft({ ...draft, from: valueOf(e) })} />
        </Field>
        <Field label="To">
          <input name="to" value={draft.to ?? ''} onInput={(e) => setDraft({ ...draft, to: valueOf(e) })} />
        </Field>
        <Field label="Kind">
          <select name="kind" value={draft.kind ?? ''} onChange={(e) => setDraft({ ...draft, kind: valueOf(e) })}>
            {KINDS.map(([value, label]) => (
              <option value={value}>{label}</option>
            ))}
          </select>
        </Field>
        <div class="row">
          <button type="submit">Apply filters</button>
          <button
            type="button"
            class="secondary"
            onClick={() => {
              setDraft({});
              setCursors([]);
              go(['logs']);
            }}
          >
            Clear
          </button>
        </div>
      </form>
      <ErrorBox error={page.error} />
      {page.data ? (
        <>
          <Table testid="logs" columns={COLUMNS} rows={page.data.data} onOpen={(e) => go(['logs', e.id])} empty="No request matches these filters." />
          <nav class="pager" aria-label="Pages">
            <button type="button" class="secondary" disabled={cursors.length === 0} onClick={() => setCursors(cursors.slice(0, -1))}>
              Previous
            </button>
            <span class="muted">Page {cursors.length + 1}</span>
            <button type="button" class="secondary" disabled={!page.data.has_more} onClick={() => page.data?.next_cursor && setCursors([...cursors, page.data.next_cursor])}>
              Next
            </button>
          </nav>
        </>
      ) : null}
    </div>
  );
}
