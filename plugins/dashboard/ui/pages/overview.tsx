import { useMemo, useState } from 'preact/hooks';
import { get } from '../api.js';
import { Chart, type Series } from '../chart.js';
import { ErrorBox, Field, Stat, valueOf } from '../components.js';
import { fromLocalInput, int, ms, pct, toLocalInput, usd } from '../format.js';
import { useLoad } from '../hooks.js';
import type { TimeBucket as Bucket, TimeseriesAnswer as Timeseries } from '../../../../sdk/analytics.js';

const RANGES = { '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000 } as const;
type Range = keyof typeof RANGES | 'custom';

/** Requests, errors, cost, tokens, latency and cache hits over a chosen range, from GET /v1/analytics/timeseries. */
export function Overview() {
  const [range, setRange] = useState<Range>('24h');
  const [custom, setCustom] = useState(() => ({ from: toLocalInput(Date.now() - 86_400_000), to: toLocalInput(Date.now()) }));
  const [tick, setTick] = useState(0);
  // Narrowing filters, applied with the form (not on each key press).
  const [draft, setDraft] = useState({ provider: '', model: '', workspace_id: '' });
  const [filters, setFilters] = useState(draft);
  const query = useMemo(() => {
    if (range === 'custom') return { from: fromLocalInput(custom.from), to: fromLocalInput(custom.to) };
    const to = Date.now();
    return { from: to - RANGES[range], to };
  }, [range, custom, tick]);
  const ts = useLoad(() => get<Timeseries>('/v1/analytics/timeseries', { ...query, ...filters }), [query.from, query.to, filters]);
  const t = ts.data?.totals;
  const charts = useMemo(() => {
    if (ts.data === null) return null;
    const d = ts.data.data;
    const times = d.map((b) => Date.parse(b.time) / 1000);
    const s = (label: string, colorVar: string, pick: (b: Bucket) => number | null): Series => ({ label, colorVar, values: d.map(pick) });
    return {
      times,
      traffic: [s('Requests', '--c1', (b) => b.requests), s('Errors', '--c2', (b) => b.errors)],
      cost: [s('Cost', '--c3', (b) => b.cost)],
      tokens: [s('Input', '--c1', (b) => b.prompt_tokens), s('Output', '--c4', (b) => b.completion_tokens)],
      latency: [s('p50', '--c1', (b) => b.p50_latency), s('p95', '--c2', (b) => b.p95_latency)],
      cache: [s('Hit rate', '--c4', (b) => b.cache_hit_rate)],
    };
  }, [ts.data]);
  return (
    <div class="page">
      <div class="toolbar" role="group" aria-label="Time range">
        {(['1h', '24h', '7d', 'custom'] as Range[]).map((r) => (
          <button type="button" class={range === r ? 'active' : 'secondary'} aria-pressed={range === r} onClick={() => (r === range ? setTick((x) => x + 1) : setRange(r))}>
            {r === '1h' ? 'Last hour' : r === '24h' ? 'Last day' : r === '7d' ? 'Last week' : 'Custom'}
          </button>
        ))}
        {range === 'custom' ? (
          <>
            <Field label="From">
              <input type="datetime-local" value={custom.from} onChange={(e) => setCustom({ ...custom, from: valueOf(e) })} />
            </Field>
            <Field label="To">
              <input type="datetime-local" value={custom.to} onChange={(e) => setCustom({ ...custom, to: valueOf(e) })} />
            </Field>
          </>
        ) : null}
        <button type="button" class="secondary" onClick={() => setTick((x) => x + 1)}>
          Refresh
        </button>
      </div>
      <form
        class="toolbar"
        aria-label="Narrow the overview"
        onSubmit={(e) => {
          e.preventDefault();
          setFilters({ ...draft });
        }}
      >
        <Field label="Provider">
          <input name="provider" value={draft.provider} placeholder="any" onInput={(e) => setDraft({ ...draft, provider: valueOf(e) })} />
        </Field>
        <Field label="Model">
          <input name="model" value={draft.model} placeholder="any" onInput={(e) => setDraft({ ...draft, model: valueOf(e) })} />
        </Field>
        <Field label="Workspace">
          <input name="workspace_id" value={draft.workspace_id} placeholder="any" onInput={(e) => setDraft({ ...draft, workspace_id: valueOf(e) })} />
        </Field>
        <button type="submit" class="secondary">
          Apply
        </button>
      </form>
      <ErrorBox error={ts.error} />
      <div class="stats" aria-busy={ts.loading}>
        <Stat id="requests" label="Requests" value={int(t?.requests)} />
        <Stat id="errors" label="Errors" value={int(t?.errors)} />
        <Stat id="cost" label="Cost" value={usd(t?.cost)} />
        <Stat id="tokens" label="Tokens" value={int(t?.total_tokens)} />
        <Stat id="p50" label="p50 latency" value={ms(t?.p50_latency)} />
        <Stat id="p95" label="p95 latency" value={ms(t?.p95_latency)} />
        <Stat id="cache" label="Cache hit rate" value={pct(t?.cache_hit_rate)} />
      </div>
      {charts === null ? null : (
        <div class="charts">
          <Chart title="Requests and errors" times={charts.times} series={charts.traffic} format={(v) => int(v)} />
          <Chart title="Cost (USD)" times={charts.times} series={charts.cost} format={(v) => usd(v)} />
          <Chart title="Tokens" times={charts.times} series={charts.tokens} format={(v) => int(v)} />
          <Chart title="Latency" times={charts.times} series={charts.latency} format={(v) => ms(v)} />
          <Chart title="Cache hit rate" times={charts.times} series={charts.cache} format={(v) => pct(v)} />
        </div>
      )}
      {ts.data ? (
        <p class="muted small">
          {ts.data.data.length} buckets of {ts.data.interval}, from the analytics route (<code>GET /v1/analytics/timeseries</code>). The gateway's housekeeping traffic (this
          dashboard, the API reference, sign-in probes, health checks, metric scrapes, reads of the log) is not counted: the Logs page lists it as kind “Housekeeping”.
        </p>
      ) : null}
    </div>
  );
}
