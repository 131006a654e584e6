import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { piecesWith, startLongStreamMock } from '../mocks/long-stream.js';
import { forkChild, type Child } from './children.js';
import { measure, type LoadResult } from './load.js';

/**
 * Rounds of the case: each measures both gateways back to back, in alternating order (unchecked first, then
 * checked first), so a drift of the shared machine during the case weighs on both alike.
 */
const ROUNDS = 3;
/** Autocannon runs this case adds to the bench: a warm-up run of each gateway, then the rounds. */
export const STREAM_CHECK_RUNS = 2 + 2 * ROUNDS;
const CONNECTIONS = 16;
/** A realistic answer: 200 chunks, about 1,700 characters (≈ 430 tokens). */
const LONG_STREAM = JSON.stringify({ model: 'long-200', messages: [{ role: 'user', content: 'Say hello' }], stream: true, stream_options: { include_usage: true } });

/** The three window checks of the checked case (block mode): a forbidden word, an API key's pattern, PII. */
const GUARDRAIL = {
  id: 'bench-stream',
  deny: true,
  'default.contains': { words: ['forbidden'], operator: 'none' },
  'default.regexMatch': { rule: 'sk-live-[A-Za-z0-9]{24}', not: true },
  'default.pii': { categories: ['credit_card', 'email'] },
};

export interface StreamCheckRow extends LoadResult {
  case: 'unchecked' | 'checked';
  /** The round it was measured in (0-based). */
  round: number;
  cpuUs: number;
}

export interface CutLatency {
  /** Per run: ms from the mock's write of the piece completing the violation to its connection closing. */
  closeMs: number[];
  /** Per run: pieces the mock wrote after that one. */
  piecesAfter: number[];
  /** Per run: characters of the violating piece's stream the client got past the violation's start. */
  charsPastStart: number[];
}

/**
 * Streams checked by three window checks against the same streams unchecked (stream c=16, 200-chunk
 * answers), each gateway in its own process; then the cut: a mock streaming 4,000 pieces (one per ms)
 * with a forbidden word at piece 50, split across two chunks, through the checked gateway, five times.
 */
export async function streamChecksBench(mockUrl: string, duration: number): Promise<{ rows: StreamCheckRow[]; cut: CutLatency; table: string }> {
  const rows: StreamCheckRow[] = [];
  const cutMock = await startLongStreamMock({ paceMs: 1 });
  const cutOrigin = new URL(cutMock.baseURL).origin;
  const cut: CutLatency = { closeMs: [], piecesAfter: [], charsPastStart: [] };
  console.log('bench: streams checked by three window checks against unchecked, stream c=16 (200-chunk answers)');
  try {
    const headers = { 'content-type': 'application/json' };
    const gateways = new Map<'unchecked' | 'checked', Child>();
    for (const which of ['unchecked', 'checked'] as const) {
      const logFile = join(tmpdir(), `bench-stream-checks-${which}-${process.pid}.log`);
      process.on('exit', () => rmSync(logFile, { force: true }));
      const gw = await forkChild(`stream-${which}`, 'stream-checks-gateway.ts', [mockUrl, logFile, which, cutOrigin, JSON.stringify(GUARDRAIL)]);
      const smoke = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers, body: LONG_STREAM });
      const text = await smoke.text();
      if (smoke.status !== 200 || !text.trimEnd().endsWith('data: [DONE]') || text.includes('"error"')) throw new Error(`stream checks smoke request (${which}) failed: ${smoke.status} ${text.slice(-300)}`);
      gateways.set(which, gw);
      // A fresh process's first seconds under load run partly unoptimised code (a first run came out 20-30% slower
      // than the next, for both gateways alike): a run of the case's own length, not counted, before the rounds.
      await measure({ url: `${gw.url}/v1/chat/completions`, headers, body: LONG_STREAM, connections: CONNECTIONS, duration }, gw.pid);
    }
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? (['unchecked', 'checked'] as const) : (['checked', 'unchecked'] as const);
      for (const which of order) {
        const gw = gateways.get(which)!;
        const result = await measure({ url: `${gw.url}/v1/chat/completions`, headers, body: LONG_STREAM, connections: CONNECTIONS, duration }, gw.pid);
        rows.push({ case: which, round, ...result });
        console.log(`  round ${round + 1} stream ${which.padEnd(9)} c=${CONNECTIONS} ${result.rps.toFixed(0).padStart(6)} req/s  p50 ${result.p50} ms  p99 ${result.p99} ms  ${result.cpuUs.toFixed(0)} µs CPU/req`);
        if (result.errors > 0 || result.non2xx > 0) console.warn(`  WARNING: stream ${which}: ${result.errors} errors/timeouts, ${result.non2xx} non-2xx`);
      }
    }
    {
      const gw = gateways.get('checked')!;
      const insert = ['forb', 'idden'];
      const pieces = piecesWith(4000, 50, insert);
      const violationStart = pieces.slice(0, 50).join('').length;
      cutMock.setPieces(pieces);
      const config = JSON.stringify({ provider: 'openai', api_key: 'sk-bench', custom_host: cutMock.baseURL, output_guardrails: [GUARDRAIL] });
      for (let i = 0; i < 5; i++) {
        const before = cutMock.streams.length;
        const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { ...headers, 'x-gateway-config': config }, body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'go' }] }) });
        const raw = await res.text();
        if (!raw.includes('guardrail_denied')) throw new Error(`the cut stream was not cut: ${raw.slice(-300)}`);
        const sent = cutMock.streams[before]!;
        for (let wait = 0; sent.closedAt === null && wait < 100; wait++) await new Promise((r) => setTimeout(r, 10));
        const last = 50 + insert.length - 1;
        cut.closeMs.push(sent.closedAt! - sent.writtenAt[last]!);
        cut.piecesAfter.push(sent.written - 1 - last);
        let got = '';
        for (const block of raw.split('\n\n')) {
          if (!block.startsWith('data: {')) continue;
          got += JSON.parse(block.slice(6)).choices?.[0]?.delta?.content ?? '';
        }
        cut.charsPastStart.push(got.length - violationStart);
      }
      console.log(`  cut: upstream closed ${median(cut.closeMs).toFixed(1)} ms (median of 5) after the violating piece was written; client got ${Math.max(...cut.charsPastStart)} characters past the violation's start at most`);
    }
  } finally {
    await cutMock.close();
  }
  return { rows, cut, table: streamChecksTable(rows, cut) };
}

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

/** Per round, checked over unchecked throughput. */
function roundRatios(rows: readonly StreamCheckRow[]): number[] {
  const out: number[] = [];
  for (const on of rows) {
    if (on.case !== 'checked') continue;
    const none = rows.find((r) => r.case === 'unchecked' && r.round === on.round);
    if (none !== undefined) out.push(on.rps / none.rps);
  }
  return out;
}

/** The checked/unchecked ratio the ≤ 10% cost target reads: the median of the rounds' ratios. */
export function streamCheckRatio(rows: readonly StreamCheckRow[]): number {
  return median(roundRatios(rows));
}

/** A case's median figures over its rounds. */
function medianRow(rows: readonly StreamCheckRow[], which: StreamCheckRow['case']) {
  const mine = rows.filter((r) => r.case === which);
  return { rps: median(mine.map((r) => r.rps)), cpuUs: median(mine.map((r) => r.cpuUs)), p50: median(mine.map((r) => r.p50)), p99: median(mine.map((r) => r.p99)) };
}

export function streamChecksTable(rows: readonly StreamCheckRow[], cut: CutLatency): string {
  const none = medianRow(rows, 'unchecked');
  const on = medianRow(rows, 'checked');
  const ratios = roundRatios(rows);
  return [
    `| stream c=16, 200-chunk answers (median of ${ratios.length} rounds) | unchecked | three window checks | checked/unchecked |`,
    '|---|--:|--:|--:|',
    `| req/s | ${fmt(none.rps)} | ${fmt(on.rps)} | ${fmt(streamCheckRatio(rows), 2)} (rounds: ${ratios.map((r) => fmt(r, 2)).join(', ')}) |`,
    `| p50 / p99 ms | ${none.p50} / ${none.p99} | ${on.p50} / ${on.p99} | |`,
    `| CPU µs per request | ${fmt(none.cpuUs)} | ${fmt(on.cpuUs)} | |`,
    '',
    '| the cut (4,000-piece stream, forbidden word split across pieces 50–51, 5 runs) | median | max |',
    '|---|--:|--:|',
    `| upstream connection closed after the violating piece was written (ms) | ${fmt(median(cut.closeMs), 1)} | ${fmt(Math.max(...cut.closeMs), 1)} |`,
    `| pieces the upstream wrote after it | ${median(cut.piecesAfter)} | ${Math.max(...cut.piecesAfter)} |`,
    `| characters the client got past the violation's start | ${median(cut.charsPastStart)} | ${Math.max(...cut.charsPastStart)} |`,
  ].join('\n');
}
