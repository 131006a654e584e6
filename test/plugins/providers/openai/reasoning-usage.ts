/** What a reasoning model with a prompt cache reports in OpenAI's usage (the stream-usage tests' case: cached and reasoning tokens). */
export const REASONING_USAGE = {
  prompt_tokens: 1200,
  completion_tokens: 850,
  total_tokens: 2050,
  prompt_tokens_details: { cached_tokens: 1024, audio_tokens: 0 },
  completion_tokens_details: { reasoning_tokens: 640, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
};

/** The same, as the gateway records it. */
export const REASONING_RECORDED = { prompt_tokens: 1200, completion_tokens: 850, total_tokens: 2050, cached_tokens: 1024, reasoning_tokens: 640 };
