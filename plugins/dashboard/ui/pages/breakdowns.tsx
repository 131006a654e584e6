import { get } from '../api.js';
import { Bar, ErrorBox, Field, Table, valueOf, type Column } from '../components.js';
import { int, ms, pct, usd } from '../format.js';
import { useLoad } from '../hooks.js';
import { go, type Route } from '../router.js';

const GROUPS = [
  ['model', 'Model'],
  ['provider', 'Provider'],
  ['ai_service', 'AI service'],
  ['status_code', 'Status code'],
  ['api_key', 'API key'],
  ['config', 'Config'],
  ['workspace', 'Workspace'],
  ['prompt', 'Prompt'],
  ['front_door', 'API format'],
] as const;

const RANGES = { '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000, all: 0 } as const;
type Range = keyof typeof RANGES;

const COLUMNS = 'cost,total_tokens,cached_tokens,cache_write_tokens,reasoning_tokens,avg_latency,p95_latency,success_rate,error_count,cache_hit_rate';

type Row = Record<string, any>;

/** The groups routes as tables, each with bars for requests and cost. */
export function Breakdowns({ route }: { route: Route }) {
  const groupBy = (route.parts[1] ?? 'model') as (typeof GROUPS)[number][0];
  const range = (route.query.get('range') ?? '24h') as Range;
  const from = RANGES[range] === 0 ? undefined : Date.now() - RANGES[range];
  const groups = useLoad(() => get<{ data: Row[] }>(`/v1/analytics/groups/${groupBy}`, { columns: COLUMNS, from, limit: 100 }), [groupBy, range]);
  const rows = groups.data?.data ?? [];
  const maxRequests = Math.max(0, ...rows.map((r) => r.requests as number));
  const maxCost = Math.max(0, ...rows.map((r) => (r.cost as number | null) ?? 0));
  const label = GROUPS.find(([g]) => g === groupBy)?.[1] ?? groupBy;
  const columns: Column<Row>[] = [
    { key: groupBy, label, render: (r) => (r[groupBy] === null ? <span class="muted">(none)</span> : <code>{String(r[groupBy])}</code>) },
    { key: 'requests', label: 'Requests', render: (r) => <Bar value={r.requests} max={maxRequests} label={int(r.requests)} /> },
    { key: 'cost', label: 'Cost', render: (r) => <Bar value={r.cost ?? 0} max={maxCost} label={usd(r.cost)} /> },
    { key: 'total_tokens', label: 'Tokens', numeric: true, render: (r) => int(r.total_tokens) },
    { key: 'cached_tokens', label: 'Cached input', numeric: true, render: (r) => int(r.cached_tokens) },
    { key: 'cache_write_tokens', label: 'Cache writes', numeric: true, render: (r) => int(r.cache_write_tokens) },
    { key: 'reasoning_tokens', label: 'Reasoning', numeric: true, render: (r) => int(r.reasoning_tokens) },
    { key: 'avg_latency', label: 'Avg latency', numeric: true, render: (r) => ms(r.avg_latency) },
    { key: 'p95_latency', label: 'p95 latency', numeric: true, render: (r) => ms(r.p95_latency) },
    { key: 'error_count', label: 'Errors', numeric: true, render: (r) => int(r.error_count) },
    { key: 'success_rate', label: 'Success', numeric: true, render: (r) => pct(r.success_rate) },
    { key: 'cache_hit_rate', label: 'Cache hits', numeric: true, render: (r) => pct(r.cache_hit_rate) },
  ];
  return (
    <div class="page">
      <div class="toolbar">
        <Field label="Group by">
          <select value={groupBy} onChange={(e) => go(['breakdowns', valueOf(e)], { range })}>
            {GROUPS.map(([g, l]) => (
              <option value={g}>{l}</option>
            ))}
          </select>
        </Field>
        <Field label="Range">
          <select value={range} onChange={(e) => go(['breakdowns', groupBy], { range: valueOf(e) })}>
            <option value="1h">Last hour</option>
            <option value="24h">Last day</option>
            <option value="7d">Last week</option>
            <option value="all">Everything kept</option>
          </select>
        </Field>
      </div>
      <ErrorBox error={groups.error} />
      {groups.data ? <Table testid="groups" columns={columns} rows={rows} empty="No requests in this range." /> : null}
      <p class="muted small">API traffic only: the gateway's housekeeping (this dashboard, the API reference, sign-in probes, health checks, metric scrapes, reads of the log) is in the Logs page, kind “Housekeeping”.</p>
    </div>
  );
}
