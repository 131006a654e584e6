import { forkChild, stopAll } from './children.js';
import { streamChecksBench } from './stream-checks.js';
const mock = await forkChild('mock', 'mock-server.ts');
const r = await streamChecksBench(mock.url, Number(process.env.DUR ?? 5));
console.log(r.table);
await stopAll();
process.exit(0);
