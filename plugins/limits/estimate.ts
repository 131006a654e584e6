import { costOf, estimateRequestPromptTokens, type ModelPrice, type PricingTable, type RequestContext, type Target, type Usage, routeApi } from '../../sdk/index.js';

/** Nano-USD per USD: cost budgets count integers of 1e-9 USD, so sums over millions of requests stay exact. */
export const NANO = 1e9;

function positiveInt(value: unknown): number | null {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : null;
}

/** Routes whose answers have no completion tokens. */
const INPUT_ONLY = new Set(['embeddings', 'rerank']);
/** Routes that spend no tokens at all: counting a Messages request's tokens generates nothing and is not billed. */
const NO_TOKENS = new Set(['messages.count_tokens']);

export interface TokenEstimate {
  prompt: number;
  completion: number;
}

/**
 * What a request may consume, reserved before the call: its prompt (the SDK's
 * estimate: characters / 4 of the message texts, prompt or input, Responses
 * `instructions`, Messages `system`, and the stored conversation a
 * `previous_response_id` brings in, as the door recorded it) plus its output
 * bound, `max_completion_tokens`, else `max_tokens`, else
 * `max_output_tokens`, else `defaultCompletion`, times `n`. Embeddings and
 * rerank have no completion; `count_tokens` reserves nothing.
 */
export function estimateTokens(ctx: RequestContext, defaultCompletion: number): TokenEstimate {
  const api = ctx.route === null ? null : routeApi(ctx.route);
  if (api !== null && NO_TOKENS.has(api)) return { prompt: 0, completion: 0 };
  const body = ctx.body;
  const prompt = estimateRequestPromptTokens(ctx);
  if (api !== null && INPUT_ONLY.has(api)) return { prompt, completion: 0 };
  const bound = positiveInt(body?.max_completion_tokens) ?? positiveInt(body?.max_tokens) ?? positiveInt(body?.max_output_tokens) ?? defaultCompletion;
  return { prompt, completion: bound * (positiveInt(body?.n) ?? 1) };
}

/** The model a request asks for: its target's `override_params.model`, else the body's. */
export function requestedModel(ctx: RequestContext): string | null {
  const override = (ctx.target?.override_params as { model?: unknown } | undefined)?.model;
  return typeof override === 'string' ? override : ctx.model;
}

/**
 * The price a cost budget reserves with, before the provider is known for
 * sure: the model under the provider the target names (a plain provider, not
 * a `@slug` or a strategy), else under whichever provider's list knows it.
 */
export function priceForRequest(ctx: RequestContext, pricing: PricingTable): ModelPrice | null {
  const model = requestedModel(ctx);
  if (model === null) return null;
  const target: Target | null = ctx.target;
  const provider = target !== null && target.strategy === undefined && typeof target.provider === 'string' && !target.provider.startsWith('@') ? target.provider : null;
  return (provider === null ? null : pricing.lookup(provider, model)) ?? pricing.lookupModel(model);
}

/** The estimate's cost in nano-USD, rounded up. */
export function estimateNanoUsd(estimate: TokenEstimate, price: ModelPrice): number {
  return Math.ceil(costOf(price, { prompt_tokens: estimate.prompt, completion_tokens: estimate.completion, total_tokens: estimate.prompt + estimate.completion }) * NANO);
}

/** A real cost in nano-USD, rounded up. */
export function nanoUsd(usd: number): number {
  return Math.ceil(usd * NANO - 1e-6);
}

/** The cost of real usage at a price (for an answer whose own model the price list lacks). */
export function usageNanoUsd(price: ModelPrice, usage: Usage, multiplier: number): number {
  return nanoUsd(costOf(price, usage, multiplier));
}
