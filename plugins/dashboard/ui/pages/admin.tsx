import { useState } from 'preact/hooks';
import { get, hasScope, request, type Who } from '../api.js';
import { ErrorBox, Field, Section, status, Table, valueOf, type Column, type Row } from '../components.js';
import { int, time, usd } from '../format.js';
import { useLoad } from '../hooks.js';
import { href, type Route } from '../router.js';
import { ApiKeys } from './api-keys.js';


/**
 * One kind of control-plane resource: how to list it, what a new one looks
 * like, which fields an edit may change, and how it is archived. Anything
 * the server refuses comes back as its own error, shown beside the editor.
 */
interface Resource {
  id: string;
  title: string;
  /** The scopes' resource name (`api_keys`, `configs`, …). */
  scope: string;
  list: string;
  /** Lists that take `workspace_id` follow the workspace picker. */
  byWorkspace?: boolean;
  columns: Column<Row>[];
  /** A new one's body, edited as JSON. */
  template?: Record<string, unknown>;
  /** The fields of an existing one an update may send (taken from GET {list}/{id}). */
  editable?: string[];
  remove?: 'Archive' | 'Delete';
  /** Extra per-row views (a policy's current usage). */
  usage?: boolean;
}


const RESOURCES: Resource[] = [
  {
    id: 'workspaces',
    title: 'Workspaces',
    scope: 'workspaces',
    list: '/v1/workspaces',
    columns: [
      { key: 'name', label: 'Name' },
      { key: 'slug', label: 'Slug', render: (r) => <code>{r.slug}</code> },
      { key: 'status', label: 'Status', render: status },
      { key: 'created_at', label: 'Created', render: (r) => time(r.created_at) },
    ],
    template: { name: 'Research', slug: 'research', description: '' },
    editable: ['name', 'description', 'metadata'],
    remove: 'Archive',
  },
  {
    id: 'integrations',
    title: 'Integrations',
    scope: 'integrations',
    list: '/v1/integrations',
    byWorkspace: true,
    columns: [
      { key: 'name', label: 'Name' },
      { key: 'slug', label: 'Slug', render: (r) => <code>{r.slug}</code> },
      { key: 'ai_provider_id', label: 'Provider' },
      { key: 'masked_key', label: 'Key', render: (r) => <code>{r.masked_key ?? r.key ?? '—'}</code> },
      { key: 'status', label: 'Status', render: status },
    ],
    template: { name: 'OpenAI production', ai_provider_id: 'openai', key: 'sk-…', create_default_provider: true },
    editable: ['name', 'description', 'configurations', 'pricing_adjustments'],
    remove: 'Delete',
  },
  {
    id: 'providers',
    title: 'Providers',
    scope: 'providers',
    list: '/v1/providers',
    byWorkspace: true,
    columns: [
      { key: 'name', label: 'Name' },
      { key: 'slug', label: 'Slug', render: (r) => <code>@{r.slug}</code> },
      { key: 'integration_id', label: 'Integration' },
      { key: 'status', label: 'Status', render: status },
    ],
    template: { name: 'OpenAI', slug: 'openai-prod', integration_id: '' },
    editable: ['name', 'note', 'integration_id'],
    remove: 'Delete',
  },
  {
    id: 'configs',
    title: 'Saved configs',
    scope: 'configs',
    list: '/v1/configs',
    byWorkspace: true,
    columns: [
      { key: 'name', label: 'Name' },
      { key: 'slug', label: 'Slug', render: (r) => <code>{r.slug}</code> },
      { key: 'version', label: 'Version', numeric: true, render: (r) => r.version ?? r.version_id ?? '—' },
      { key: 'status', label: 'Status', render: status },
      { key: 'last_updated_at', label: 'Updated', render: (r) => time(r.last_updated_at ?? r.updated_at) },
    ],
    template: { name: 'Production', slug: 'production', config: { strategy: { mode: 'fallback' }, targets: [{ provider: '@openai-prod' }, { provider: '@anthropic-prod' }] } },
    editable: ['name', 'config'],
    remove: 'Delete',
  },
  {
    id: 'prompts',
    title: 'Prompts',
    scope: 'prompts',
    list: '/v1/prompts',
    byWorkspace: true,
    columns: [
      { key: 'name', label: 'Name' },
      { key: 'id', label: 'Id', render: (r) => <code>{r.id}</code> },
      { key: 'published_version', label: 'Published', numeric: true },
      { key: 'latest_version', label: 'Latest', numeric: true, render: (r) => r.latest_version ?? r.version ?? '—' },
      { key: 'status', label: 'Status', render: status },
    ],
    template: { name: 'Support reply', provider: '@openai-prod', template: { model: 'gpt-4o-mini', messages: [{ role: 'system', content: 'You answer {{product}} questions.' }, { role: 'user', content: '{{question}}' }] }, variables: { product: { default: 'Acme' } } },
    remove: 'Archive',
  },
  {
    id: 'guardrails',
    title: 'Guardrails',
    scope: 'configs',
    list: '/v1/guardrails',
    byWorkspace: true,
    columns: [
      { key: 'name', label: 'Name' },
      { key: 'id', label: 'Id', render: (r) => <code>{r.id}</code> },
      { key: 'version', label: 'Version', numeric: true, render: (r) => r.version ?? '—' },
      { key: 'status', label: 'Status', render: status },
    ],
    template: { name: 'No secrets out', deny: true, 'default.regexMatch': { rule: 'sk-[A-Za-z0-9]{20,}', not: true } },
    remove: 'Archive',
  },
  {
    id: 'rate-limits',
    title: 'Rate limits',
    scope: 'policies',
    list: '/v1/policies/rate-limits',
    byWorkspace: true,
    columns: [
      { key: 'name', label: 'Name' },
      { key: 'type', label: 'Type' },
      { key: 'value', label: 'Limit', render: (r) => `${int(r.value)} ${r.unit}` },
      { key: 'group_by', label: 'Per', render: (r) => (r.group_by ?? []).map((g: Row) => g.key).join(', ') || 'all' },
      { key: 'status', label: 'Status', render: status },
    ],
    template: { name: '60 a minute per key', type: 'requests', unit: 'rpm', value: 60, conditions: [], group_by: [{ key: 'api_key' }] },
    editable: ['name', 'unit', 'value', 'conditions', 'group_by', 'fail_open'],
    remove: 'Archive',
    usage: true,
  },
  {
    id: 'usage-limits',
    title: 'Budgets',
    scope: 'policies',
    list: '/v1/policies/usage-limits',
    byWorkspace: true,
    columns: [
      { key: 'name', label: 'Name' },
      { key: 'type', label: 'Type' },
      { key: 'credit_limit', label: 'Limit', render: (r) => (r.type === 'cost' ? usd(r.credit_limit) : `${int(r.credit_limit)} tokens`) },
      { key: 'periodic_reset', label: 'Resets', render: (r) => r.periodic_reset ?? (r.periodic_reset_days ? `every ${r.periodic_reset_days} days` : 'never') },
      { key: 'status', label: 'Status', render: status },
    ],
    template: { name: 'Team budget', type: 'cost', credit_limit: 50, periodic_reset: 'monthly', conditions: [], group_by: [] },
    editable: ['name', 'credit_limit', 'alert_threshold', 'periodic_reset', 'conditions', 'group_by', 'fail_open'],
    remove: 'Archive',
    usage: true,
  },
];

const SECTIONS = [{ id: 'api-keys', title: 'API keys', scope: 'api_keys' }, ...RESOURCES];

/** What the key may see of the control plane, one section at a time. */
export function Admin({ route, who }: { route: Route; who: Who }) {
  const visible = SECTIONS.filter((s) => hasScope(who.scopes, `${s.scope}.read`));
  const active = visible.find((s) => s.id === route.parts[1]) ?? visible[0];
  const [workspace, setWorkspace] = useState<string>('');
  const orgLevel = who.workspace_id === null;
  const workspaces = useLoad(() => (orgLevel && hasScope(who.scopes, 'workspaces.read') ? get<{ data: Row[] }>('/v1/workspaces') : Promise.resolve({ data: [] })), [orgLevel]);
  if (active === undefined) return <p class="muted">This key has no scope to read any admin resource.</p>;
  const resource = RESOURCES.find((r) => r.id === active.id);
  return (
    <div class="page admin">
      <nav class="tabs" aria-label="Admin sections">
        {visible.map((s) => (
          <a href={href(['admin', s.id])} class={s.id === active.id ? 'active' : undefined} aria-current={s.id === active.id ? 'page' : undefined}>
            {s.title}
          </a>
        ))}
      </nav>
      {orgLevel && (workspaces.data?.data.length ?? 0) > 0 ? (
        <div class="toolbar">
          <Field label="Workspace">
            <select value={workspace} onChange={(e) => setWorkspace(valueOf(e))}>
              <option value="">(the default for this key)</option>
              {workspaces.data!.data.map((w) => (
                <option value={w.id}>{w.name}</option>
              ))}
            </select>
          </Field>
        </div>
      ) : null}
      {resource === undefined ? <ApiKeys who={who} workspace={workspace} /> : <ResourceSection key={resource.id} resource={resource} who={who} workspace={workspace} />}
    </div>
  );
}

/** A JSON text area whose text is sent as is; the server's 400 says what is wrong and where. */
function JsonEditor({ initial, onSave, onCancel, label }: { initial: unknown; onSave: (body: unknown) => Promise<void>; onCancel: () => void; label: string }) {
  const [text, setText] = useState(() => JSON.stringify(initial, null, 2));
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const save = async (e: Event) => {
    e.preventDefault();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (err) {
      setError(new Error(`Not JSON: ${(err as Error).message}`));
      return;
    }
    setBusy(true);
    try {
      await onSave(body);
      setError(null);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="editor" onSubmit={save}>
      <label class="field wide">
        <span>{label}</span>
        <textarea spellcheck={false} rows={Math.min(24, Math.max(6, text.split('\n').length + 1))} value={text} onInput={(e) => setText(valueOf(e))} data-testid="json-editor" />
      </label>
      <ErrorBox error={error} />
      <div class="row">
        <button type="submit" disabled={busy}>
          Save
        </button>
        <button type="button" class="secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function ResourceSection({ resource, who, workspace }: { resource: Resource; who: Who; workspace: string }) {
  const wsQuery = resource.byWorkspace && workspace !== '' ? { workspace_id: workspace } : {};
  const list = useLoad(() => get<{ data: Row[]; total_count?: number }>(resource.list, { ...wsQuery, page_size: 100 }), [resource.id, workspace]);
  const [editing, setEditing] = useState<{ row: Row | null; body: unknown } | null>(null);
  const [usage, setUsage] = useState<Row | null>(null);
  const [error, setError] = useState<unknown>(null);
  const can = (action: string) => hasScope(who.scopes, `${resource.scope}.${action}`);
  const open = async (row: Row) => {
    setError(null);
    try {
      const full = await get<Row>(`${resource.list}/${encodeURIComponent(row.id)}`);
      const body: Row = {};
      for (const f of resource.editable ?? []) if (full[f] !== undefined) body[f] = full[f];
      setEditing({ row: full, body });
    } catch (err) {
      setError(err);
    }
  };
  const remove = async (row: Row) => {
    if (!confirm(`${resource.remove} "${row.name ?? row.id}"?`)) return;
    try {
      await request('DELETE', `${resource.list}/${encodeURIComponent(row.id)}`);
      list.reload();
    } catch (err) {
      setError(err);
    }
  };
  const showUsage = async (row: Row) => {
    try {
      setUsage({ policy: row, ...(await get<Row>(`${resource.list}/${encodeURIComponent(row.id)}/usage`)) });
    } catch (err) {
      setError(err);
    }
  };
  const actions: Column<Row> = {
    key: 'actions',
    label: 'Actions',
    render: (row) => (
      <div class="row">
        {resource.editable && can('update') && row.status !== 'archived' ? (
          <button type="button" class="small secondary" onClick={() => open(row)}>
            Edit
          </button>
        ) : null}
        {resource.usage ? (
          <button type="button" class="small secondary" onClick={() => showUsage(row)}>
            Usage
          </button>
        ) : null}
        {resource.remove && can('delete') && row.status !== 'archived' ? (
          <button type="button" class="small danger" onClick={() => remove(row)}>
            {resource.remove}
          </button>
        ) : null}
      </div>
    ),
  };
  return (
    <Section
      title={resource.title}
      actions={
        resource.template && can('create') && editing === null ? (
          <button type="button" onClick={() => setEditing({ row: null, body: { ...resource.template, ...(resource.byWorkspace && workspace !== '' ? { workspace_id: workspace } : {}) } })}>
            New
          </button>
        ) : null
      }
    >
      {editing ? (
        <JsonEditor
          label={editing.row === null ? `New ${resource.title.toLowerCase()} (JSON)` : `Edit ${editing.row.name ?? editing.row.id} (JSON)`}
          initial={editing.body}
          onCancel={() => setEditing(null)}
          onSave={async (body) => {
            if (editing.row === null) await request('POST', resource.list, body);
            else await request('PUT', `${resource.list}/${encodeURIComponent(editing.row.id)}`, body);
            setEditing(null);
            list.reload();
          }}
        />
      ) : null}
      <ErrorBox error={error ?? list.error} />
      {usage ? (
        <div class="usage" data-testid="usage">
          <h3>
            Current usage of {usage.policy.name} {usage.period_start ? `since ${time(usage.period_start)}` : ''}
          </h3>
          <Table
            columns={[
              { key: 'group', label: 'Group', render: (g) => <code>{typeof g.group === 'string' ? g.group : JSON.stringify(g.group)}</code> },
              { key: 'used', label: 'Used', numeric: true, render: (g) => (usage.policy.type === 'cost' ? usd(g.used) : int(g.used ?? g.count)) },
              { key: 'reserved', label: 'Reserved', numeric: true, render: (g) => (g.reserved === undefined ? '—' : usage.policy.type === 'cost' ? usd(g.reserved) : int(g.reserved)) },
              { key: 'remaining', label: 'Remaining', numeric: true, render: (g) => (usage.policy.type === 'cost' ? usd(g.remaining) : int(g.remaining)) },
            ]}
            rows={usage.data ?? []}
            empty="Nothing counted in the current window."
          />
          <button type="button" class="secondary small" onClick={() => setUsage(null)}>
            Close
          </button>
        </div>
      ) : null}
      {list.data ? <Table testid={`list-${resource.id}`} columns={[...resource.columns, actions]} rows={list.data.data} /> : null}
    </Section>
  );
}
