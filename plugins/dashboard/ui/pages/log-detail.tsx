import { get } from '../api.js';
import { ErrorBox, Json, Section, Table } from '../components.js';
import { int, ms, time, usd } from '../format.js';
import { useLoad } from '../hooks.js';
import { href } from '../router.js';

type Entry = Record<string, any>;

const SUMMARY: [string, string, (e: Entry) => string][] = [
  ['Time', 'created_at', (e) => time(e.created_at)],
  ['Status', 'status', (e) => String(e.status)],
  ['Route', 'route', (e) => `${e.method} ${e.path}${e.route ? ` (${e.route})` : ''}`],
  ['Provider', 'provider', (e) => [e.provider_requested, e.provider].filter((x, i, a) => x && a.indexOf(x) === i).join(' → ') || '—'],
  ['Model', 'model', (e) => [e.model_requested, e.model].filter((x, i, a) => x && a.indexOf(x) === i).join(' → ') || '—'],
  ['Workspace', 'workspace_id', (e) => e.workspace_id ?? '—'],
  ['API key', 'api_key_id', (e) => e.api_key_id ?? '—'],
  ['Config', 'config_id', (e) => e.config_id ?? '—'],
  ['Prompt', 'prompt_id', (e) => (e.prompt_id ? `${e.prompt_id} v${e.prompt_version}` : '—')],
  ['Latency', 'latency_ms', (e) => `${ms(e.latency_ms)} (upstream ${ms(e.upstream_latency_ms)}, first byte ${ms(e.first_byte_ms)})`],
  ['Tokens', 'total_tokens', (e) => `${int(e.total_tokens)} (input ${int(e.prompt_tokens)}: cached ${int(e.cached_tokens)}, cache writes ${cacheWrites(e)}; output ${int(e.completion_tokens)}: reasoning ${int(e.reasoning_tokens)})`],
  ['Cost', 'cost', (e) => `${usd(e.cost)} (${e.cost_status ?? '—'})`],
  ['Cache', 'cache_status', (e) => e.cache_status ?? '—'],
  ['Stream', 'stream', (e) => (e.stream ? 'yes' : 'no')],
  ['Retries / fallbacks', 'retry_count', (e) => `${e.retry_count ?? 0} / ${e.fallback_count ?? 0}`],
  ['Error', 'error_code', (e) => (e.error_code ? `${e.error_code}: ${e.error_message ?? ''}` : '—')],
  ['Kind', 'kind', (e) => (e.kind === 'housekeeping' ? 'housekeeping (not counted in the overview and breakdowns)' : (e.kind ?? 'api'))],
];

/** Prompt-cache writes, with the part kept for an hour when there is one (null in entries stored before they were recorded). */
function cacheWrites(e: Entry): string {
  const hour = e.cache_write_1h_tokens as number | null | undefined;
  return hour !== null && hour !== undefined && hour > 0 ? `${int(e.cache_write_tokens)}, ${int(hour)} for 1 h` : int(e.cache_write_tokens);
}

/** One request: what was asked, what came back, every attempt, the hooks' verdicts and where it sits in its trace. */
export function LogDetail({ id }: { id: string }) {
  const entry = useLoad(() => get<Entry>(`/v1/logs/${encodeURIComponent(id)}`), [id]);
  const e = entry.data;
  return (
    <div class="page">
      <p>
        <a href="#/logs">← All requests</a>
      </p>
      <ErrorBox error={entry.error} />
      {e === null ? null : (
        <>
          <Section title={`Request ${e.id}`}>
            <dl class="kv" data-testid="log-summary">
              {SUMMARY.map(([label, key, show]) => (
                <>
                  <dt>{label}</dt>
                  <dd data-field={key}>{show(e)}</dd>
                </>
              ))}
            </dl>
          </Section>
          <Section title="Price">
            {e.price ? (
              <>
                <p class="muted" data-testid="price-source">
                  {e.price.price_id ?? 'no price'} · {e.price.version ?? 'unversioned list'}
                  {e.price.tier_above !== null && e.price.tier_above !== undefined ? ` · prompt over ${int(e.price.tier_above)} tokens` : ''}
                  {e.price.service_tier ? ` · ${e.price.service_tier} tier` : ''}
                  {e.price.multiplier !== 1 ? ` · × ${e.price.multiplier}` : ''}
                  {e.price.reason ? ` · ${e.price.reason}` : ''}
                </p>
                <Table
                  testid="price"
                  columns={[
                    { key: 'name', label: 'Tokens of', render: (c) => c.name.replace(/_/g, ' ') },
                    { key: 'tokens', label: 'Tokens', numeric: true, render: (c) => int(c.tokens) },
                    { key: 'rate', label: 'Per 1M', numeric: true, render: (c) => usd(c.rate) },
                    { key: 'amount', label: 'Amount', numeric: true, render: (c) => usd(c.amount) },
                  ]}
                  rows={Array.isArray(e.price.components) ? e.price.components : []}
                  empty="Not priced."
                />
              </>
            ) : (
              <p class="muted">{e.cost_status === 'cache_hit' ? 'A cache hit: no provider was called, nothing to price.' : 'No price recorded for this request.'}</p>
            )}
          </Section>
          <Section title="Trace">
            <dl class="kv">
              <dt>Trace id</dt>
              <dd>{e.trace_id ? <a href={href(['logs'], { trace_id: e.trace_id })}>{e.trace_id}</a> : '—'}</dd>
              <dt>Span</dt>
              <dd>
                <code>{e.span_id ?? '—'}</code> {e.span_name ?? ''}
              </dd>
              <dt>Parent span</dt>
              <dd>
                <code>{e.parent_span_id ?? '—'}</code>
              </dd>
            </dl>
          </Section>
          <Section title="Request headers">
            {e.request_headers ? (
              <Table
                columns={[
                  { key: 'name', label: 'Header', render: (h) => <code>{h.name}</code> },
                  { key: 'value', label: 'Value' },
                ]}
                rows={Object.entries(typeof e.request_headers === 'string' ? JSON.parse(e.request_headers) : e.request_headers).map(([name, value]) => ({ name, value: String(value) }))}
              />
            ) : (
              <p class="muted">Not recorded for this request.</p>
            )}
          </Section>
          <Section title={`Request body${e.request_body_truncated ? ' (cut)' : ''}`}>
            <Json value={e.request_body} />
          </Section>
          <Section title={`Response body${e.response_body_truncated ? ' (cut)' : ''}`}>
            <Json value={e.response_body} />
          </Section>
          <Section title="Attempts">
            <Table
              testid="attempts"
              columns={[
                { key: 'target', label: 'Target' },
                { key: 'provider', label: 'Provider' },
                { key: 'status', label: 'Status' },
                { key: 'latencyMs', label: 'Latency', numeric: true, render: (a) => ms(a.latencyMs) },
                { key: 'error', label: 'Error', render: (a) => a.error ?? '—' },
              ]}
              rows={Array.isArray(e.attempts) ? e.attempts : []}
              empty="No upstream attempt (answered by the gateway)."
            />
          </Section>
          <Section title="Routing">
            <Table
              testid="routing"
              columns={[
                { key: 'at', label: 'Strategy', render: (d) => `${d.mode} at ${d.at === '' ? 'the top' : d.at}` },
                { key: 'chosen', label: 'Chosen', render: (d) => (d.chosen.length === 0 ? 'none (every target out)' : d.chosen.join(', ')) },
                {
                  key: 'skipped',
                  label: 'Skipped',
                  render: (d) => (d.skipped.length === 0 ? '—' : d.skipped.map((s: { target: string; reason: string; until?: string }) => `${s.target}: ${s.reason.replace(/_/g, ' ')}${s.until ? ` until ${s.until}` : ''}`).join('; ')),
                },
                { key: 'considered', label: 'Considered', render: (d) => d.considered.join(', ') },
                { key: 'affinity', label: 'Affinity', render: (d) => d.affinity ?? '—' },
                { key: 'prefer', label: 'Prefer' },
              ]}
              rows={Array.isArray(e.routing) ? e.routing : []}
              empty="No routing decision (a single target, or the routing plugin is not loaded)."
            />
          </Section>
          <Section title="Hook results">
            <Json value={e.hook_results} />
          </Section>
          <Section title="Metadata">
            <Json value={e.metadata} />
          </Section>
        </>
      )}
    </div>
  );
}
