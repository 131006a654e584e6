import * as v from 'valibot';
import {
  GatewayError,
  type GatewayPlugin,
  type GatewayResponse,
  invalidBody,
  issuePath,
  jsonResponse,
  nativeFormat,
  parseOptions,
  readNative,
  type RequestContext,
  resolveLeaf,
  type RouteDefinition,
  type RouteDoc,
  selectedTarget,
  sendNative,
} from '../../sdk/index.js';
import type { Answer, Dialect, Send } from './dialect.js';
import { mistralDialect } from './mistral.js';
import { openaiDialect } from './openai.js';
import { CreateJobSchema } from './shapes.js';

export const PLUGIN_NAME = 'fine-tuning';
export { MISTRAL_STATUS_MAP } from './mistral.js';
export { OPENAI_STATUS_MAP } from './openai.js';

/** The wire formats this plugin speaks, as providers name them in `resources.fineTuning`. */
const DIALECTS: Readonly<Record<string, Dialect>> = { openai: openaiDialect, mistral: mistralDialect };

const OptionsSchema = v.strictObject({});
export type FineTuningOptions = v.InferInput<typeof OptionsSchema>;

const limitParam = (max: number) =>
  v.pipe(v.string(), v.regex(/^\d{1,4}$/, 'must be a positive integer'), v.transform(Number), v.minValue(1, 'must be at least 1'), v.maxValue(max, `must be at most ${max}`));
const PageQuery = v.strictObject({ after: v.optional(v.pipe(v.string(), v.minLength(1))), limit: v.optional(limitParam(100)) });

function parseQuery(ctx: RequestContext): v.InferOutput<typeof PageQuery> {
  const raw: Record<string, string> = Object.create(null);
  for (const [k, value] of new URLSearchParams(ctx.query)) raw[k] = value;
  const result = v.safeParse(PageQuery, raw);
  if (result.success) return result.output;
  const issue = result.issues[0];
  const param = issuePath(issue) || null;
  const message = issue.kind === 'schema' && issue.expected === 'never' ? `Unknown query parameter '${param}'; known: after, limit.` : `Invalid query parameter '${param}': ${issue.message}`;
  throw new GatewayError('invalid_request', message, { param });
}

/**
 * Fine-tuning jobs (spec, Fine-tuning; docs/batches.md): the six routes,
 * passed to the selected provider's own API and every answer normalised to
 * the spec's job, checkpoint and event shapes. Providers name their wire
 * format in `resources.fineTuning`: `openai` (OpenAI, Azure OpenAI) and
 * `mistral` (Mistral, translated). Any provider selection works, a virtual
 * key included (`x-gateway-virtual-key`).
 */
export function fineTuning(options: FineTuningOptions = {}): GatewayPlugin {
  parseOptions(PLUGIN_NAME, OptionsSchema, options);
  return {
    name: PLUGIN_NAME,
    state: [],
    apply(api) {
      /** The selected provider's dialect and a sender bound to it; a 400 when none is selected or it has no fine-tuning API. */
      const connect = async (ctx: RequestContext): Promise<{ dialect: Dialect; send: Send }> => {
        const target = await selectedTarget(api, ctx);
        if (target === null) {
          throw new GatewayError('provider_required', 'Select the provider that runs the job: x-gateway-provider (and Authorization), x-gateway-virtual-key, a slug or x-gateway-config.', {
            param: 'x-gateway-provider',
          });
        }
        const leaf = await resolveLeaf(api, ctx, target);
        const format = leaf === null ? null : nativeFormat(leaf.provider, 'fineTuning');
        const dialect = format === null ? undefined : DIALECTS[format];
        if (leaf === null || dialect === undefined) {
          const able = api.providers.names().filter((n) => api.providers.get(n)?.resources?.fineTuning !== undefined);
          throw new GatewayError('route_not_supported', `${leaf === null ? 'A routing strategy' : `Provider "${leaf.provider.name}"`} cannot run fine-tuning jobs; providers that can: ${able.join(', ')}.`, {
            param: 'x-gateway-provider',
          });
        }
        return { dialect, send: async (call) => readNative(await sendNative(api, ctx, leaf, call)) };
      };
      const answer = <T>(a: Answer<T>, shape: (value: T) => unknown = (x) => x): GatewayResponse => (a.ok ? jsonResponse(200, shape(a.value)) : a.response);
      const list = <T extends { id: string }>(page: { data: T[]; has_more: boolean }, withIds: boolean) => ({
        object: 'list',
        data: page.data,
        has_more: page.has_more,
        ...(withIds ? { first_id: page.data[0]?.id ?? null, last_id: page.data.at(-1)?.id ?? null } : {}),
      });
      const id = (ctx: RequestContext) => ctx.params!.job_id!;

      const JOB = { job_id: 'The job id, as the provider gave it.' };
      const routes: Array<[string, RouteDefinition['method'], string, Omit<RouteDoc, 'tags' | 'scope'>, (ctx: RequestContext) => Promise<GatewayResponse>]> = [
        [
          'fine_tuning.create',
          'POST',
          '/fine_tuning/jobs',
          {
            summary: 'Create a fine-tuning job',
            description: "On the selected provider (OpenAI, Azure OpenAI or Mistral), in OpenAI's request and answer shapes whatever the provider's own.",
            body: CreateJobSchema,
          },
          async (ctx) => {
            const parsed = v.safeParse(CreateJobSchema, ctx.body ?? {});
            if (!parsed.success) throw invalidBody(parsed.issues);
            const { dialect, send } = await connect(ctx);
            return answer(await dialect.create(send, parsed.output));
          },
        ],
        [
          'fine_tuning.list',
          'GET',
          '/fine_tuning/jobs',
          { summary: 'List fine-tuning jobs', description: "The selected provider's jobs.", query: PageQuery },
          async (ctx) => {
            const q = parseQuery(ctx);
            const { dialect, send } = await connect(ctx);
            return answer(await dialect.list(send, { after: q.after, limit: q.limit ?? 20 }), (p) => list(p, false));
          },
        ],
        [
          'fine_tuning.retrieve',
          'GET',
          '/fine_tuning/jobs/:job_id',
          { summary: 'Get a fine-tuning job', params: JOB },
          async (ctx) => {
            const { dialect, send } = await connect(ctx);
            return answer(await dialect.retrieve(send, id(ctx)));
          },
        ],
        [
          'fine_tuning.cancel',
          'POST',
          '/fine_tuning/jobs/:job_id/cancel',
          { summary: 'Cancel a fine-tuning job', params: JOB },
          async (ctx) => {
            const { dialect, send } = await connect(ctx);
            return answer(await dialect.cancel(send, id(ctx)));
          },
        ],
        [
          'fine_tuning.checkpoints',
          'GET',
          '/fine_tuning/jobs/:job_id/checkpoints',
          { summary: "List a fine-tuning job's checkpoints", params: JOB, query: PageQuery },
          async (ctx) => {
            const q = parseQuery(ctx);
            const { dialect, send } = await connect(ctx);
            return answer(await dialect.checkpoints(send, id(ctx), { after: q.after, limit: q.limit ?? 10 }), (p) => list(p, true));
          },
        ],
        [
          'fine_tuning.events',
          'GET',
          '/fine_tuning/jobs/:job_id/events',
          { summary: "List a fine-tuning job's events", params: JOB, query: PageQuery },
          async (ctx) => {
            const q = parseQuery(ctx);
            const { dialect, send } = await connect(ctx);
            return answer(await dialect.events(send, id(ctx), { after: q.after, limit: q.limit ?? 20 }), (p) => list(p, false));
          },
        ],
      ];
      for (const [name, method, path, doc, handler] of routes) {
        api.routes.add({
          name,
          method,
          path: api.options.basePath + path,
          kind: 'handler',
          body: method === 'POST' && name === 'fine_tuning.create' ? 'json' : 'none',
          scope: 'completions.write',
          doc: { tags: ['Fine-tuning'], selectsProvider: true, ...doc },
          handler,
        });
      }
    },
  };
}

export default fineTuning;
