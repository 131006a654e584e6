import * as v from 'valibot';
import { plainObject } from '../../sdk/index.js';

/** The `include` values the Responses API defines; others are a 400 (a typo should not pass silently). */
export const INCLUDE_VALUES = [
  'code_interpreter_call.outputs',
  'computer_call_output.output.image_url',
  'file_search_call.results',
  'message.input_image.image_url',
  'message.output_text.logprobs',
  'reasoning.encrypted_content',
  'web_search_call.action.sources',
  'web_search_call.results',
] as const;

/** Metadata: at most 16 pairs, keys up to 64 characters, string values up to 512 (the spec's limits). */
export const MetadataSchema = v.pipe(
  plainObject('must be an object of string values'),
  v.check((m) => Object.keys(m).length <= 16, 'must have at most 16 key-value pairs'),
  v.check((m) => Object.keys(m).every((k) => k.length <= 64), 'keys must be at most 64 characters'),
  v.check((m) => Object.values(m).every((value) => typeof value === 'string'), 'values must be strings'),
  v.check((m) => Object.values(m).every((value) => (value as string).length <= 512), 'values must be at most 512 characters'),
);

const range = (min: number, max: number) => v.nullish(v.pipe(v.number(), v.minValue(min), v.maxValue(max)));

/** The reasoning summary levels; `generate_summary` is the older name of `summary` and takes the same. */
export const SUMMARY_VALUES = ['auto', 'concise', 'detailed'] as const;
const Summary = v.nullish(v.picklist(SUMMARY_VALUES, `must be one of: ${SUMMARY_VALUES.join(', ')}`));

/**
 * `reasoning`: the summary setting under either name, checked (the effort is passed on as given: its
 * values depend on the model). Both names with different values is a 400: they are one setting.
 */
const ReasoningSchema = v.pipe(
  v.looseObject({ effort: v.nullish(v.string('must be a string')), summary: Summary, generate_summary: Summary }),
  v.forward(
    v.check((r) => r.summary == null || r.generate_summary == null || r.summary === r.generate_summary, 'must equal reasoning.summary when both are given (generate_summary is its older name)'),
    ['generate_summary'],
  ),
);

/**
 * `POST /v1/responses` body: the fields the gateway reads, with the spec's
 * ranges and limits. Loose: other fields pass on (to a native provider
 * untouched; the translation says which it maps).
 */
export const ResponsesBodySchema = v.looseObject({
  model: v.pipe(v.string('is required and must be a string'), v.minLength(1, 'must not be empty')),
  input: v.optional(v.union([v.string(), v.array(plainObject('must be an input item object'))], 'must be a string or an array of input items')),
  instructions: v.nullish(v.union([v.string(), v.array(plainObject())], 'must be a string or an array of input items')),
  metadata: v.nullish(MetadataSchema),
  previous_response_id: v.nullish(v.pipe(v.string(), v.minLength(1, 'must not be empty'))),
  truncation: v.nullish(v.picklist(['auto', 'disabled'], 'must be auto or disabled')),
  include: v.nullish(v.array(v.picklist(INCLUDE_VALUES, `must name one of: ${INCLUDE_VALUES.join(', ')}`))),
  store: v.nullish(v.boolean()),
  stream: v.nullish(v.boolean()),
  background: v.nullish(v.boolean()),
  temperature: range(0, 2),
  top_p: range(0, 1),
  top_logprobs: v.nullish(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(20))),
  max_output_tokens: v.nullish(v.pipe(v.number(), v.integer(), v.minValue(1))),
  parallel_tool_calls: v.nullish(v.boolean()),
  tools: v.nullish(v.array(v.looseObject({ type: v.string('must name the tool type') }))),
  tool_choice: v.nullish(v.union([v.picklist(['none', 'auto', 'required']), v.looseObject({ type: v.string() })], 'must be none, auto, required or a tool choice object')),
  text: v.nullish(plainObject()),
  reasoning: v.nullish(ReasoningSchema),
  user: v.nullish(v.string()),
});

export type ResponsesBody = v.InferOutput<typeof ResponsesBodySchema>;

const int = (min: number) => v.pipe(v.number(), v.integer(), v.minValue(min, `must be an integer of at least ${min}`));

export const ResponsesOptionsSchema = v.strictObject({
  /** Name of the SQL store in `api.stores` (the `sqlite` or `postgres` plugin, listed before this one). */
  store: v.optional(v.string(), 'sql'),
  /** Stored responses older than this many days are deleted in the background; 0 keeps them. Default 30 (as OpenAI keeps them). */
  retentionDays: v.optional(v.pipe(v.number(), v.minValue(0, 'must be at least 0')), 30),
  /** How often the retention clean-up runs, in ms. */
  retentionIntervalMs: v.optional(int(1000), 60 * 60 * 1000),
  /** Largest non-stream answer stored, in bytes; a larger one is answered but not stored. */
  maxStoredBytes: v.optional(int(1024), 16 * 1024 * 1024),
  /** The WebSocket mode (`GET /v1/responses` upgraded): a socket is closed after this many minutes, as OpenAI closes its own after 60. */
  websocketMaxMinutes: v.optional(v.pipe(v.number(), v.minValue(1, 'must be at least 1')), 60),
  /** Extra or replacement context windows, provider → model → tokens (beside the bundled table). */
  contextWindows: v.optional(v.record(v.string(), v.record(v.string(), int(1)))),
});

export type ResponsesOptions = v.InferInput<typeof ResponsesOptionsSchema>;
