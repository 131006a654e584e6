import { describe, expect, it } from 'vitest';
import { ownerOf, owners } from './perf-owners.js';

// Frames as `perf script -F tid,ip,sym,dso` prints them, innermost first.
const KERNEL_WRITE = [
  '\tffffffff82029b4d tcp_write_xmit ([kernel.kallsyms])',
  '\t           fde9d __GI___writev (/usr/lib/x86_64-linux-gnu/libc.so.6)',
  '\t    7f3bc8253d6e JS:*end node:_http_outgoing:1034:45+0x1c (/tmp/perf-11229.map)',
  '\t    7f3bc8253a00 JS:*writeResponse file:///srv/gw/dist/core/http/write-response.js:10:30+0xefe (/tmp/perf-11229.map)',
];
const UNDICI_UNDER_CORE = [
  '\t          9dd4a6 Builtins_KeyedLoadIC_Megamorphic (/usr/bin/node)',
  '\t    7f3bc8228e14 JS:*parseHeaders /srv/gw/node_modules/undici/lib/core/util.js:436:23+0x868 (/tmp/perf-11229.map)',
  '\t    7f3bc8228a00 JS:*send file:///srv/gw/dist/core/upstream/client.js:60:3+0x20 (/tmp/perf-11229.map)',
];
const LOG_PLUGIN = [
  '\t          9dd4a6 v8::internal::JsonStringifier::SerializeString (/usr/bin/node)',
  '\t    7f3bc8228e14 JS:*json file:///srv/gw/dist/plugins/logs/store/sql.js:147:3+0x10 (/tmp/perf-11229.map)',
];

describe('perf samples charged to owners', () => {
  it('charges a sample in the kernel to socket I/O, even under a gateway frame', () => {
    expect(ownerOf(KERNEL_WRITE.map((f) => f.trim()))).toBe('kernel: sockets, scheduling');
  });

  it('charges V8 builtins to the innermost frame that names a file: a package before the gateway module calling it', () => {
    expect(ownerOf(UNDICI_UNDER_CORE.map((f) => f.trim()))).toBe('undici');
    expect(ownerOf(LOG_PLUGIN.map((f) => f.trim()))).toBe('plugins/logs');
  });

  it("names node's internal modules, GC and SQLite", () => {
    expect(ownerOf(['7f3b JS:*Readable.read node:internal/streams/readable:647:35+0x63b (/tmp/perf-1.map)'])).toBe('node: streams');
    expect(ownerOf(['7f3b JS:*processTicksAndRejections node:internal/process/task_queues:67:35 (/tmp/perf-1.map)'])).toBe('node: ticks and promises');
    expect(ownerOf(['9dd4a6 v8::internal::Scavenger::ScavengeObject<v8::internal::FullHeapObjectSlot> (/usr/bin/node)'])).toBe('V8 garbage collector');
    expect(ownerOf(['1234 sqlite3VdbeExec (/srv/gw/node_modules/better-sqlite3/build/Release/better_sqlite3.node)'])).toBe('SQLite (better-sqlite3)');
    expect(ownerOf(['9dd4a6 Builtins_RunMicrotasks (/usr/bin/node)'])).toBe('V8 runtime and builtins (no JS caller)');
  });

  it('splits the main thread (tid = pid) from the other threads and counts each owner', () => {
    const text = ['100 ', ...KERNEL_WRITE, '', '100 ', ...UNDICI_UNDER_CORE, '', '100 ', ...KERNEL_WRITE, '', '107 ', ...LOG_PLUGIN, ''].join('\n');
    const o = owners(text, 100);
    expect(o.mainSamples).toBe(3);
    expect(o.otherSamples).toBe(1);
    expect(o.main).toEqual([
      { owner: 'kernel: sockets, scheduling', samples: 2 },
      { owner: 'undici', samples: 1 },
    ]);
    expect(o.others).toEqual([{ owner: 'plugins/logs', samples: 1 }]);
  });
});
