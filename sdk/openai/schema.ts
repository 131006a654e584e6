import * as v from 'valibot';
import { plainObject } from '../../core/index.js';
import { isObject } from '../json-object.js';

/*
 * The bodies of the OpenAI-shaped routes, as the spec lists their fields and
 * limits. The `validation` plugin checks requests with them, and the shaped
 * routes carry them in their `doc`, so the API reference shows what is checked.
 */

/** A number in [min, max], or null/absent. */
const range = (min: number, max: number) => v.nullish(v.pipe(v.number(), v.minValue(min), v.maxValue(max)));
/** An integer in [min, max], or null/absent. */
const intRange = (min: number, max: number) => v.nullish(v.pipe(v.number(), v.integer(), v.minValue(min), v.maxValue(max)));
const int = () => v.nullish(v.pipe(v.number(), v.integer()));
const stop = v.nullish(v.union([v.string(), v.pipe(v.array(v.string()), v.maxLength(4, 'at most 4 stop sequences'))], 'must be a string or an array of up to 4 strings'));
const logitBias = v.nullish(v.pipe(plainObject(), v.record(v.string(), v.pipe(v.number(), v.minValue(-100), v.maxValue(100)))));
const SEED_LIMIT = 9223372036854776000;

const FunctionType = v.literal('function', 'must be function: only function tools are allowed');
/** A tool that is no object, or one without `type` (valibot reports the missing key at its own path). */
const toolMessage = (issue: v.BaseIssue<unknown>) => (issue.path === undefined ? 'must be a tool object' : 'is required: only function tools are allowed ("type": "function")');
const TOOL_CHOICE_MESSAGE = 'must be none, auto, required or {"type": "function", "function": {"name": …}}';

const MessageSchema = v.looseObject({
  role: v.picklist(['system', 'developer', 'user', 'assistant', 'tool', 'function'], 'must be one of system, developer, user, assistant, tool, function'),
});

/**
 * `POST /chat/completions` body (spec tables and limits). Loose: fields the
 * spec does not list pass through untouched.
 */
export const ChatCompletionBodySchema = v.pipe(
  v.looseObject({
    model: v.pipe(v.string('is required and must be a string'), v.minLength(1, 'must not be empty')),
    messages: v.pipe(v.array(MessageSchema, 'is required and must be an array'), v.minLength(1, 'must have at least 1 message')),
    frequency_penalty: range(-2, 2),
    presence_penalty: range(-2, 2),
    logit_bias: logitBias,
    logprobs: v.nullish(v.boolean()),
    top_logprobs: intRange(0, 20),
    max_tokens: intRange(0, Number.MAX_SAFE_INTEGER),
    max_completion_tokens: intRange(0, Number.MAX_SAFE_INTEGER),
    n: intRange(1, 128),
    seed: intRange(-SEED_LIMIT, SEED_LIMIT),
    stop,
    stream: v.nullish(v.boolean()),
    stream_options: v.nullish(plainObject()),
    temperature: range(0, 2),
    top_p: range(0, 1),
    // Only function tools (spec): hosted tools (`web_search`, …) belong to the Responses and Messages doors, which have their own schemas.
    tools: v.nullish(v.pipe(v.array(v.looseObject({ type: FunctionType }, toolMessage), 'must be an array of tools'), v.maxLength(128, 'at most 128 tools'))),
    // The object form is checked below, so a wrong `type` or `function` is named by its own path.
    tool_choice: v.nullish(v.union([v.picklist(['none', 'auto', 'required']), plainObject()], TOOL_CHOICE_MESSAGE)),
    parallel_tool_calls: v.nullish(v.boolean()),
    user: v.nullish(v.string()),
    function_call: v.nullish(v.union([v.picklist(['none', 'auto']), v.looseObject({ name: v.string() })], 'must be none, auto or {"name": …}')),
    functions: v.nullish(v.pipe(v.array(v.looseObject({ name: v.string() })), v.minLength(1, 'must have at least 1 function'), v.maxLength(128, 'at most 128 functions'))),
    response_format: v.nullish(v.looseObject({ type: v.string() })),
    thinking: v.nullish(v.looseObject({ type: v.string(), budget_tokens: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))) })),
  }),
  v.forward(
    v.check((b) => b.top_logprobs == null || b.logprobs === true, 'requires logprobs: true'),
    ['top_logprobs'],
  ),
  v.forward(
    v.check((b) => b.stream_options == null || b.stream === true, 'is only allowed with stream: true'),
    ['stream_options'],
  ),
  v.forward(
    v.check((b) => !isObject(b.tool_choice) || b.tool_choice.type === 'function', 'must be function: only function tools are allowed'),
    ['tool_choice', 'type'],
  ),
  v.forward(
    v.check((b) => !isObject(b.tool_choice) || (isObject(b.tool_choice.function) && typeof b.tool_choice.function.name === 'string'), 'must be {"name": …}'),
    ['tool_choice', 'function'],
  ),
);

const prompt = v.nullish(
  v.union(
    [v.string(), v.array(v.string()), v.array(v.pipe(v.number(), v.integer())), v.array(v.array(v.pipe(v.number(), v.integer())))],
    'must be a string, an array of strings, an array of tokens or an array of token arrays',
  ),
);

/** `POST /completions` body (legacy text completions). */
export const CompletionBodySchema = v.pipe(
  v.looseObject({
    model: v.pipe(v.string('is required and must be a string'), v.minLength(1, 'must not be empty')),
    prompt,
    best_of: intRange(0, 20),
    echo: v.nullish(v.boolean()),
    frequency_penalty: range(-2, 2),
    presence_penalty: range(-2, 2),
    logit_bias: logitBias,
    logprobs: intRange(0, 5),
    max_tokens: intRange(0, Number.MAX_SAFE_INTEGER),
    n: intRange(1, 128),
    seed: intRange(-SEED_LIMIT, SEED_LIMIT),
    stop,
    stream: v.nullish(v.boolean()),
    stream_options: v.nullish(plainObject()),
    suffix: v.nullish(v.string()),
    temperature: range(0, 2),
    top_p: range(0, 1),
    user: v.nullish(v.string()),
  }),
  v.forward(
    v.check((b) => b.stream_options == null || b.stream === true, 'is only allowed with stream: true'),
    ['stream_options'],
  ),
  // The spec: best_of "must exceed n", and n defaults to 1, so a best_of that is sent is at least 2 (0 and 1 are refused).
  v.forward(
    v.check((b) => b.best_of == null || b.best_of > (b.n ?? 1), 'must exceed n (which defaults to 1)'),
    ['best_of'],
  ),
  v.forward(
    v.check((b) => b.best_of == null || b.stream !== true, 'cannot be used with stream: true'),
    ['best_of'],
  ),
);

/** `POST /embeddings` body. */
export const EmbeddingBodySchema = v.looseObject({
  model: v.pipe(v.string('is required and must be a string'), v.minLength(1, 'must not be empty')),
  input: v.union(
    [v.string(), v.array(v.string()), v.array(v.pipe(v.number(), v.integer())), v.array(v.array(v.pipe(v.number(), v.integer())))],
    'is required: a string, an array of strings, an array of tokens or an array of token arrays',
  ),
  encoding_format: v.nullish(v.picklist(['float', 'base64'], 'must be float or base64')),
  dimensions: intRange(1, Number.MAX_SAFE_INTEGER),
  user: v.nullish(v.string()),
});
