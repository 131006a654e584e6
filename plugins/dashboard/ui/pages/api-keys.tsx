import { useState } from 'preact/hooks';
import { get, hasScope, request, type Who } from '../api.js';
import { ErrorBox, Field, SecretOnce, Section, status, Table, valueOf, type Row } from '../components.js';
import { time } from '../format.js';
import { useLoad } from '../hooks.js';

const KEY_TYPES = ['workspace-service', 'workspace-user', 'organisation-service'] as const;

/** API keys: create (the secret shown once), rotate (the new secret shown once), revoke. */
export function ApiKeys({ who, workspace }: { who: Who; workspace: string }) {
  const list = useLoad(() => get<{ data: Row[] }>('/v1/api-keys', { workspace_id: workspace || undefined, page_size: 100 }), [workspace]);
  const [secret, setSecret] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [form, setForm] = useState({ name: '', type: 'workspace-service', workspace_id: '', user_id: '', scopes: '' });
  const [creating, setCreating] = useState(false);
  const can = (action: string) => hasScope(who.scopes, `api_keys.${action}`);
  const act = async (fn: () => Promise<void>) => {
    setError(null);
    try {
      await fn();
      list.reload();
    } catch (err) {
      setError(err);
    }
  };
  const create = (e: Event) => {
    e.preventDefault();
    void act(async () => {
      const body: Row = { name: form.name, type: form.type };
      if (form.type !== 'organisation-service' && (form.workspace_id || workspace)) body.workspace_id = form.workspace_id || workspace;
      if (form.type === 'workspace-user') body.user_id = form.user_id;
      if (form.scopes.trim() !== '') body.scopes = form.scopes.split(/[\s,]+/).filter((s) => s !== '');
      const made = await request<Row>('POST', '/v1/api-keys', body);
      setSecret(made.key);
      setCreating(false);
    });
  };
  return (
    <Section
      title="API keys"
      actions={
        can('create') && !creating ? (
          <button type="button" onClick={() => setCreating(true)}>
            New key
          </button>
        ) : null
      }
    >
      {secret ? <SecretOnce secret={secret} onDone={() => setSecret(null)} /> : null}
      {creating ? (
        <form class="filters" onSubmit={create} aria-label="New API key">
          <Field label="Name">
            <input name="name" required value={form.name} onInput={(e) => setForm({ ...form, name: valueOf(e) })} />
          </Field>
          <Field label="Type">
            <select name="type" value={form.type} onChange={(e) => setForm({ ...form, type: valueOf(e) })}>
              {KEY_TYPES.map((t) => (
                <option value={t}>{t}</option>
              ))}
            </select>
          </Field>
          {form.type !== 'organisation-service' ? (
            <Field label="Workspace (id or slug)">
              <input name="workspace_id" value={form.workspace_id} placeholder={workspace || 'the default'} onInput={(e) => setForm({ ...form, workspace_id: valueOf(e) })} />
            </Field>
          ) : null}
          {form.type === 'workspace-user' ? (
            <Field label="User id">
              <input name="user_id" value={form.user_id} onInput={(e) => setForm({ ...form, user_id: valueOf(e) })} />
            </Field>
          ) : null}
          <Field label="Scopes (blank: the type's own)">
            <input name="scopes" value={form.scopes} placeholder="completions.write logs.read" onInput={(e) => setForm({ ...form, scopes: valueOf(e) })} />
          </Field>
          <div class="row">
            <button type="submit">Create key</button>
            <button type="button" class="secondary" onClick={() => setCreating(false)}>
              Cancel
            </button>
          </div>
        </form>
      ) : null}
      <ErrorBox error={error ?? list.error} />
      {list.data ? (
        <Table
          testid="list-api-keys"
          columns={[
            { key: 'name', label: 'Name' },
            { key: 'type', label: 'Type' },
            { key: 'workspace_id', label: 'Workspace' },
            { key: 'status', label: 'Status', render: status },
            { key: 'scopes', label: 'Scopes', render: (k) => <span class="small">{(k.scopes ?? []).join(' ')}</span> },
            { key: 'last_rotated_at', label: 'Rotated', render: (k) => time(k.last_rotated_at ?? null) },
            {
              key: 'actions',
              label: 'Actions',
              render: (k) => (
                <div class="row">
                  {can('rotate') && k.status === 'active' ? (
                    <button type="button" class="small secondary" onClick={() => act(async () => setSecret((await request<Row>('POST', `/v1/api-keys/${encodeURIComponent(k.id)}/rotate`, {})).key))}>
                      Rotate
                    </button>
                  ) : null}
                  {can('delete') ? (
                    <button type="button" class="small danger" onClick={() => confirm(`Revoke "${k.name}"? It stops working at once.`) && act(async () => void (await request('DELETE', `/v1/api-keys/${encodeURIComponent(k.id)}`)))}>
                      Revoke
                    </button>
                  ) : null}
                </div>
              ),
            },
          ]}
          rows={list.data.data}
        />
      ) : null}
    </Section>
  );
}

