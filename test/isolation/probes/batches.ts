import type { Probe } from '../probe.js';

/** Files and batches are the workspace's the request acted in: another's are neither listed nor reachable. */
export const BATCHES_PROBES: readonly Probe[] = [
  {
    title: "A uploads a batch file and starts a batch: B's lists are empty, and A's ids are unknown to B",
    covers: ['batches:files-and-batches'],
    async dirty(world, a) {
      const form = new FormData();
      form.set('purpose', 'batch');
      const line = { custom_id: 'probe-1', method: 'POST', url: '/v1/chat/completions', body: { model: 'batches-probe', messages: [{ role: 'user', content: 'hello' }] } };
      form.set('file', new Blob([`${JSON.stringify(line)}\n`]), 'probe.jsonl');
      const config = { 'x-gateway-config': JSON.stringify({ provider: '@main' }) };
      const file = await world.call(a, 'POST', '/v1/files', form, config);
      if (file.status !== 200) throw new Error(`batches probe: A's upload answered ${file.status} ${file.text}`);
      const batch = await world.call(a, 'POST', '/v1/batches', { input_file_id: file.body.id, endpoint: '/v1/chat/completions', completion_window: '24h' }, config);
      if (batch.status !== 200) throw new Error(`batches probe: A's batch answered ${batch.status} ${batch.text}`);
      return { file: file.body.id, batch: batch.body.id };
    },
    async observe(world, who, clue) {
      const files = await world.call(who, 'GET', '/v1/files');
      const batches = await world.call(who, 'GET', '/v1/batches');
      const file = await world.call(who, 'GET', `/v1/files/${clue.file}`);
      const content = await world.call(who, 'GET', `/v1/files/${clue.file}/content`);
      const batch = await world.call(who, 'GET', `/v1/batches/${clue.batch}`);
      const reuse = await world.call(who, 'POST', '/v1/batches', { input_file_id: clue.file, endpoint: '/v1/chat/completions', completion_window: '24h' }, { 'x-gateway-config': JSON.stringify({ provider: '@main' }) });
      return {
        files: (files.body?.data ?? []).map((f: { filename: string }) => f.filename),
        batches: (batches.body?.data ?? []).length,
        file: file.status,
        content: content.status,
        batch: batch.status,
        reuse: reuse.status,
      };
    },
  },
];
