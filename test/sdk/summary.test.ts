import { describe, expect, test } from 'vitest';
import { bundledPricing, createLogger, GatewayError, RequestContext, requestSummary } from '../../sdk/index.js';

describe('requestSummary', () => {
  test('a summary made without the answer\'s text does not serve a caller that wants it; one made with it serves everyone', () => {
    const ctx = new RequestContext('POST', '/v1/chat/completions', {}, null, createLogger({ level: 'silent' }));
    ctx.status = 429;
    ctx.error = new GatewayError('rate_limited', 'slow down');
    const pricing = bundledPricing();
    // A settling or metrics tap that ran first, wanting no text.
    const lean = requestSummary(ctx, { pricing, wantText: false });
    expect(lean.responseText).toBeNull();
    expect(requestSummary(ctx, { pricing, wantText: false })).toBe(lean);
    // The log store with body capture still gets the text.
    const full = requestSummary(ctx, { pricing, wantText: true });
    expect(full.responseText).toBe(JSON.stringify(ctx.error.toEnvelope()));
    expect(requestSummary(ctx, { pricing, wantText: false })).toBe(full);
    expect(requestSummary(ctx, { pricing, wantText: true })).toBe(full);
  });
});
