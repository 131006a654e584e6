import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { freePort, track, type Child } from './children.js';

/*
 * Peers measured beside the gateway in the same run, each installed in a folder of the bench's own
 * with a pinned package.json (never in the gateway's dependencies): `npm run bench:peers` installs
 * them. A peer not installed is skipped with a line saying so; a mode a peer cannot serve is left out
 * of its runs, with the reason.
 */

export type Mode = 'non-stream' | 'stream';

export interface Peer extends Child {
  headers: Record<string, string>;
  /** The modes it answered correctly before measuring; the others, with why, in `notes`. */
  modes: Set<Mode>;
  notes: string[];
}

const PORTKEY_DIR = fileURLToPath(new URL('./peers/portkey/', import.meta.url));
const PORTKEY_SERVER = `${PORTKEY_DIR}node_modules/@portkey-ai/gateway/build/start-server.js`;

function portkeyVersion(): string {
  return (JSON.parse(readFileSync(`${PORTKEY_DIR}node_modules/@portkey-ai/gateway/package.json`, 'utf8')) as { version: string }).version;
}

/** Portkey's gateway, headless, on a free loopback port; headers that point it at the mock as an OpenAI custom host. */
async function startPortkey(mockUrl: string, bodies: Record<Mode, string>): Promise<Peer> {
  const port = await freePort();
  const child = spawn(process.execPath, [PORTKEY_SERVER, `--port=${port}`, '--headless'], { cwd: PORTKEY_DIR, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    if (stderr.length < 4000) stderr += chunk.toString();
  });
  track(child, 'portkey');
  const url = `http://127.0.0.1:${port}`;
  const headers = { 'content-type': 'application/json', authorization: 'Bearer sk-bench', 'x-portkey-provider': 'openai', 'x-portkey-custom-host': `${mockUrl}/v1` };
  const deadline = Date.now() + 20_000;
  for (;;) {
    const up = await fetch(url).then(
      async (r) => (await r.arrayBuffer(), true),
      () => false,
    );
    if (up) break;
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`portkey did not start: ${stderr.slice(0, 500)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const peer: Peer = { name: `portkey ${portkeyVersion()}`, url, pid: child.pid!, headers, modes: new Set(), notes: [] };
  for (const [mode, body] of Object.entries(bodies) as [Mode, string][]) {
    const before = stderr.length;
    const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers, body });
    const text = await res.text();
    const ok = res.status === 200 && text.includes('Hello') && (mode !== 'stream' || text.trimEnd().endsWith('data: [DONE]'));
    if (ok) peer.modes.add(mode);
    else {
      await new Promise((r) => setTimeout(r, 100));
      const logged = stderr.slice(before).split('\n').find((l) => /error/i.test(l))?.trim().slice(0, 160);
      peer.notes.push(`${mode}: not measured, every request answers ${res.status} ${text.slice(0, 80)}${logged === undefined ? '' : ` (its log: "${logged}")`}`);
    }
  }
  return peer;
}

/** The peers installed, started; and a line for each one that is not. */
export async function startPeers(mockUrl: string, bodies: Record<Mode, string>): Promise<{ peers: Peer[]; skipped: string[] }> {
  if (!existsSync(PORTKEY_SERVER)) return { peers: [], skipped: ["Portkey's gateway (@portkey-ai/gateway, test/bench/peers/portkey): not installed, not measured; `npm run bench:peers` installs it."] };
  return { peers: [await startPortkey(mockUrl, bodies)], skipped: [] };
}
