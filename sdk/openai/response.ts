import { passThrough, type GatewayResponse, type RequestContext, type UpstreamResponse } from '../../core/index.js';
import { jsonUsageObserver, sseUsageObserver } from './usage.js';

/**
 * The answer of an OpenAI-format upstream, passed through byte for byte.
 * Successful answers are watched for `usage` as they stream out.
 */
export function openAIFormatResponse(upstream: UpstreamResponse, ctx: RequestContext): GatewayResponse {
  const response = passThrough(upstream);
  if (upstream.status >= 200 && upstream.status < 300) {
    const type = upstream.headers['content-type'];
    const sse = typeof type === 'string' && type.startsWith('text/event-stream');
    response.observers = [sse ? sseUsageObserver(ctx) : jsonUsageObserver(ctx)];
  }
  return response;
}
