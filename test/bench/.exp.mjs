import { fork } from 'node:child_process';
import autocannon from '/work/main/node_modules/autocannon/autocannon.js';
const start = (file, args, execArgv) => new Promise((res) => { const c = fork(file, args, { execArgv }); c.once('message', (m) => res({ c, url: m.url })); });
const mock = await start('/work/main/test/bench/mock-server.ts', [], ['--import', 'tsx']);
const variants = [['tsx', '/work/main/test/bench/bare-proxy.ts', ['--import', 'tsx']], ['plain', '/tmp/bb/bare.mjs', []]];
const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello' }] });
for (let round = 0; round < 2; round++) for (const [name, file, ea] of variants) {
  const b = await start(file, [mock.url], ea);
  const opts = { url: b.url + '/v1/chat/completions', method: 'POST', headers: { 'content-type': 'application/json' }, body, connections: 64 };
  await autocannon({ ...opts, duration: 1 });
  const r = await autocannon({ ...opts, duration: 4 });
  const rss = /VmRSS:\s+(\d+)/.exec((await import('node:fs')).readFileSync(`/proc/${b.c.pid}/status`, 'utf8'))[1];
  console.log(name, r.requests.mean, r.latency.p50, r.latency.p99, 'rss', rss / 1024 | 0, 'non2xx', r.non2xx, r.errors);
  b.c.kill();
}
mock.c.kill();
