import { afterAll, describe, expect, test } from 'vitest';
import { RESPONSE_MIGRATIONS, RESPONSES_NAMESPACE, ResponseRepository, type StoredResponse } from '../../../plugins/responses/index.js';
import { postgresClient } from '../../../plugins/stores/postgres/client.js';
import { migrate, type SqlClient } from '../../../sdk/sql.js';
import { sqliteClient } from '../../../sdk/sqlite.js';
import { DATABASE_URL, dropSchema, requireService, uniqueSchema } from '../../helpers/services.js';

const T0 = Date.UTC(2025, 0, 1);

function stored(id: string, previous: string | null, workspaceId = 'ws-1', createdAt = T0): StoredResponse {
  return {
    workspaceId,
    id,
    createdAt,
    status: 'completed',
    model: 'm',
    provider: id.includes('native') ? 'openai' : 'anthropic',
    native: id.includes('native'),
    previousResponseId: previous,
    inputItems: [{ id: `msg_in_${id}`, type: 'message', role: 'user', content: [{ type: 'input_text', text: `in ${id}` }] }],
    response: { id, object: 'response', output: [{ id: `msg_out_${id}`, type: 'message', role: 'assistant', content: [{ type: 'output_text', text: `out ${id}` }] }] },
  };
}

/** The same checks on both SQL stores: the table is written through one SQL text for both dialects. */
function contract(name: string, open: () => Promise<SqlClient | null>): void {
  describe(`stored responses on ${name}`, () => {
    let client: SqlClient | null = null;
    let repo: ResponseRepository;
    afterAll(async () => {
      await client?.close();
    });

    test('migrations apply once; a response reads back as written', async () => {
      client = await open();
      if (client === null) return;
      expect(await migrate(client, RESPONSES_NAMESPACE, RESPONSE_MIGRATIONS)).toEqual([1]);
      expect(await migrate(client, RESPONSES_NAMESPACE, RESPONSE_MIGRATIONS)).toEqual([]);
      repo = new ResponseRepository(client);
      const one = stored('r1', null);
      await repo.insert(one);
      expect(await repo.get('ws-1', 'r1')).toEqual(one);
      // A second write of the same id (a cache hit replaying it) keeps the first.
      await repo.insert({ ...one, status: 'failed' });
      expect((await repo.get('ws-1', 'r1'))!.status).toBe('completed');
    });

    test('per workspace: the same id in two workspaces is two responses; another workspace sees nothing', async () => {
      if (client === null) return;
      await repo.insert(stored('shared', null, 'ws-2'));
      await repo.insert(stored('shared', null, 'ws-3'));
      expect((await repo.get('ws-2', 'shared'))!.workspaceId).toBe('ws-2');
      expect(await repo.get('ws-1', 'shared')).toBeNull();
      expect(await repo.delete('ws-1', 'shared')).toBe(false);
      expect(await repo.delete('ws-2', 'shared')).toBe(true);
      expect(await repo.get('ws-3', 'shared')).not.toBeNull();
    });

    test('a conversation is followed back through previous_response_id, oldest first, in one workspace', async () => {
      if (client === null) return;
      await repo.insert(stored('c1-native', null));
      await repo.insert(stored('c2', 'c1-native'));
      await repo.insert(stored('c3', 'c2'));
      await repo.insert(stored('c2', 'c1-native', 'ws-other'));
      const turns = await repo.conversation('ws-1', 'c3');
      expect(turns.map((t) => [t.id, t.provider, t.native])).toEqual([
        ['c1-native', 'openai', true],
        ['c2', 'anthropic', false],
        ['c3', 'anthropic', false],
      ]);
      expect(turns[1]!.inputItems[0]!.content).toEqual([{ type: 'input_text', text: 'in c2' }]);
      expect(turns[1]!.output[0]!.content).toEqual([{ type: 'output_text', text: 'out c2' }]);
      expect(await repo.conversation('ws-1', 'nope')).toEqual([]);
      // A deleted turn ends the chain there.
      await repo.delete('ws-1', 'c2');
      expect((await repo.conversation('ws-1', 'c3')).map((t) => t.id)).toEqual(['c3']);
    });

    test('retention deletes responses created before the cut-off', async () => {
      if (client === null) return;
      await repo.insert(stored('old', null, 'ws-1', T0 - 10 * 86_400_000));
      await repo.insert(stored('new', null, 'ws-1', T0 + 86_400_000));
      const deleted = await repo.deleteBefore(T0);
      expect(deleted).toBe(1);
      expect(await repo.get('ws-1', 'old')).toBeNull();
      expect(await repo.get('ws-1', 'new')).not.toBeNull();
    });
  });
}

contract('sqlite', async () => sqliteClient(':memory:'));

describe('postgres', async () => {
  const available = await requireService('PostgreSQL', DATABASE_URL);
  const schema = uniqueSchema('responses');
  afterAll(async () => {
    if (available) await dropSchema(schema);
  });
  contract('postgres', async () => (available ? postgresClient({ url: DATABASE_URL, schema }) : null));
});
