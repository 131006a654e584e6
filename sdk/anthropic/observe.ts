import type { BodyObserver, RequestContext } from '../../core/index.js';
import { toGatewayUsage } from '../openai/translate.js';
import { lineObserver, wholeBodyObserver } from '../whole-body.js';
import { mergeCounts, usageFromCounts, type AnthropicCounts } from './usage.js';

/** Larger non-stream bodies are not scanned for usage; the answer still goes out untouched. */
const MAX_SCANNED_BYTES = 8 * 1024 * 1024;

/**
 * Reads the usage of a native Anthropic answer as it goes out (the Messages
 * door's pass-through), into `ctx.usage` in the gateway's terms (prompt =
 * input + cache writes + cache reads, cached = cache reads): a JSON message
 * once it ended, or a stream's `message_start` and `message_delta` events
 * (only `data:` lines that carry `"usage"` are parsed).
 */
export function anthropicUsageObserver(ctx: RequestContext, sse: boolean): BodyObserver {
  const counts: AnthropicCounts = {};
  let seen = false;
  const take = (json: string) => {
    try {
      const data = JSON.parse(json) as { usage?: unknown; message?: { usage?: unknown } };
      const usage = data.message?.usage ?? data.usage;
      if (usage === undefined) return;
      mergeCounts(counts, usage);
      seen = true;
    } catch {
      /* not JSON: nothing to read */
    }
  };
  const finish = () => {
    if (seen) ctx.usage = toGatewayUsage(usageFromCounts(counts));
  };
  if (!sse) {
    return wholeBodyObserver(MAX_SCANNED_BYTES, (body) => {
      take(body.toString('utf8'));
      finish();
    });
  }
  return lineObserver(
    MAX_SCANNED_BYTES,
    (l) => {
      if (l.startsWith('data:') && l.includes('"usage"')) take(l.slice(5));
    },
    finish,
  );
}
