import { join } from 'node:path';
import {
  createSecretBox,
  type GatewayPlugin,
  type GatewayResponse,
  loadEncryptionKey,
  migrate,
  parseOptions,
  type RequestContext,
  type RouteDefinition,
  type RouteDoc,
  type SecretBox,
  type SqlClient,
  type SqlStore,
  TENANCY,
  tenantOf,
} from '../../sdk/index.js';
import { deleteFileRoute, type Deps, fileContentRoute, getFileRoute, ListFilesQuery, listFilesRoute, UploadForm, uploadFile } from './files.js';
import { BATCHES_MIGRATIONS, BATCHES_NAMESPACE } from './migrations.js';
import { OptionsSchema, type BatchesOptions } from './options.js';
import { cancelBatchRoute, createBatch, getBatchRoute, ListBatchesQuery, listBatchesRoute } from './routes.js';
import { CreateBatchSchema } from './shapes.js';
import { BatchRunner } from './runner.js';
import { localFileStore } from './stores/local.js';
import { s3FileStore } from './stores/s3.js';
import type { FileStore } from './stores/types.js';

export const PLUGIN_NAME = 'batches';
export type { BatchesOptions };
export { BATCHES_MIGRATIONS, BATCHES_NAMESPACE } from './migrations.js';

import { BATCHES_ERRORS } from './errors.js';

export { BATCHES_ERRORS };

/**
 * Files and batches for every provider (docs/batches.md).
 *
 * `/v1/files` and `/v1/batches` in OpenAI's shape. With a provider that has
 * the API itself (OpenAI, Azure OpenAI; Mistral for files) the call goes to
 * it and its answer is normalised. Otherwise the gateway keeps the files (a
 * directory, or an S3-compatible bucket) and runs the batches: each line one
 * request through the whole lifecycle, from a durable queue in the SQL store
 * that survives restarts and is shared by several instances.
 */
export function batches(options: BatchesOptions = {}): GatewayPlugin {
  const { now: clock, ...rest } = options;
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, rest);
  const now = clock ?? Date.now;
  return {
    name: PLUGIN_NAME,
    // The workspace a request acts in, which its state is kept under (sdk/tenancy.ts).
    uses: [TENANCY],
    errorCodes: BATCHES_ERRORS,
    state: [
      { name: 'files-and-batches', scope: 'workspace', keyedBy: 'Uploaded files, batches and their output: owned by the workspace the request acts in.' },
    ],
    apply(api) {
      let client: SqlClient | null = null;
      let store: FileStore | null = null;
      let box: SecretBox | null = null;
      let runner: BatchRunner | null = null;
      const deps: Deps = {
        api,
        db: () => client!,
        store: () => store!,
        box: () => box!,
        runner: () => runner,
        now,
        opts: { ...opts, now: clock },
        tenant: tenantOf(api),
      };

      api.onReady(async () => {
        const sql = api.stores.get(opts.store) as SqlStore | undefined;
        if (sql === undefined || typeof sql.client !== 'function') throw new Error(`${PLUGIN_NAME}: needs an SQL store named "${opts.store}": list the sqlite or postgres plugin before it`);
        client = sql.client();
        await migrate(client, BATCHES_NAMESPACE, BATCHES_MIGRATIONS);
        box = createSecretBox((await loadEncryptionKey({ envValue: opts.encryptionKey, dataDir: opts.dataDir })).key);
        const s3 = opts.files.s3;
        store =
          s3 === undefined
            ? await localFileStore(opts.files.dir ?? join(opts.dataDir, 'files'))
            : await s3FileStore({ ...s3, forcePathStyle: s3.forcePathStyle ?? s3.endpoint !== undefined });
        if (opts.worker) {
          runner = new BatchRunner({
            api,
            db: () => client!,
            store: () => store!,
            box: () => box!,
            now,
            logger: api.logger,
            options: {
              concurrency: opts.concurrency,
              leaseMs: opts.leaseMs,
              pollMs: opts.pollMs,
              drainMs: opts.drainMs,
              maxLineRuns: opts.maxLineRuns,
              maxLineBytes: opts.maxLineBytes,
              maxBatchLines: opts.maxBatchLines,
            },
          });
          runner.start();
        }
      });
      // Listed after the log store and the SQL store, this closes before them: lines that finish while it drains are still logged and recorded.
      api.onClose(async () => {
        await runner?.stop();
        store?.close();
      });

      const base = api.options.basePath;
      const route = (
        name: string,
        method: RouteDefinition['method'],
        path: string,
        body: RouteDefinition['body'],
        doc: RouteDoc,
        handler: (deps: Deps, ctx: RequestContext) => Promise<GatewayResponse>,
      ): RouteDefinition => ({
        name,
        method,
        path: base + path,
        kind: 'handler',
        body,
        // Files, batches and fine-tuning jobs are model work: the scope completions need, checked before an upload is read.
        scope: 'completions.write',
        doc: { selectsProvider: true, ...doc },
        handler: (ctx) => handler(deps, ctx),
      });
      const NATIVE = "The selected provider's own when it keeps them (OpenAI, Azure OpenAI, Mistral), else the gateway's, in the caller's workspace.";
      const FILE = { file_id: 'The file id.' };
      const BATCH = { batch_id: 'The batch id.' };
      const files = ['Files'];
      const batches = ['Batches'];
      for (const r of [
        route('files.create', 'POST', '/files', 'stream', { summary: 'Upload a file', description: `${NATIVE} Streamed as it arrives; JSONL checked line by line.`, tags: files, body: UploadForm, bodyType: 'multipart/form-data' }, uploadFile),
        route('files.list', 'GET', '/files', 'none', { summary: 'List files', description: NATIVE, tags: files, query: ListFilesQuery }, listFilesRoute),
        route('files.retrieve', 'GET', '/files/:file_id', 'none', { summary: 'Get a file', tags: files, params: FILE }, getFileRoute),
        route('files.content', 'GET', '/files/:file_id/content', 'none', { summary: "Get a file's content", tags: files, params: FILE, responseTypes: ['application/octet-stream'] }, fileContentRoute),
        route('files.delete', 'DELETE', '/files/:file_id', 'none', { summary: 'Delete a file', tags: files, params: FILE }, deleteFileRoute),
        route('batches.create', 'POST', '/batches', 'json', {
          summary: 'Create a batch',
          description: "OpenAI's and Azure OpenAI's own batches when the selected provider runs them; for every other provider the gateway runs each line through the whole request lifecycle, from a queue that survives restarts.",
          tags: batches,
          body: CreateBatchSchema,
        }, createBatch),
        route('batches.list', 'GET', '/batches', 'none', { summary: 'List batches', tags: batches, query: ListBatchesQuery }, listBatchesRoute),
        route('batches.retrieve', 'GET', '/batches/:batch_id', 'none', { summary: 'Get a batch', tags: batches, params: BATCH }, getBatchRoute),
        route('batches.cancel', 'POST', '/batches/:batch_id/cancel', 'none', { summary: 'Cancel a batch', description: 'Lines not started never start; those in flight finish; then the batch is `cancelled`.', tags: batches, params: BATCH }, cancelBatchRoute),
      ]) {
        api.routes.add(r);
      }
    },
  };
}

export default batches;
