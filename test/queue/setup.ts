import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { generateCohort, type GeneratedAccount } from '../../src/cohort/generate.js';
import { utcDate } from '../../src/clock.js';
import { resolveDocumentKey } from '../../src/documents/document-store.js';
import { QUEUE_NAMES, type QueueName } from '../../src/queue/contract.js';
import { startWorkers, type WorkerSet } from '../../src/queue/workers.js';
import { createTestContext, type ContextOptions, type TestContext } from '../helpers/context.js';
import { FAKE_VENDOR_API_KEY, startFakeVendor, type FakeVendor } from '../helpers/fake-vendor.js';
import { pollUntil } from '../helpers/poll.js';

export interface PipelineContext extends TestContext {
  vendor: FakeVendor;
  auth: { authorization: string };
  startWorkers(queues?: readonly QueueName[]): WorkerSet;
  /**
   * The environment a separate worker process (spawnWorker) needs to use this context's documents
   * and vendor, with the context's own settings (`opts.env`) and `extra` on top.
   */
  workerEnv(extra?: Record<string, string>): Record<string, string>;
  /** Generates a cohort, writes its documents to the store, returns the NDJSON and the generated bundles. */
  cohort(opts: { count: number; supplier: string; prefix: string; invalidRate?: number; seed?: number }): Promise<{ ndjson: string; accounts: GeneratedAccount[] }>;
  upload(ndjson: string, q: { supplier: string; team: string; dryRun?: boolean }, headers?: Record<string, string>): Promise<{ batch_id: string; total_items: number }>;
  status(batchId: string): Promise<Record<string, unknown> & { state: string; succeeded: number; failed: number }>;
  waitForEnd(batchId: string, timeoutMs?: number): Promise<Record<string, unknown> & { state: string; succeeded: number; failed: number }>;
  items(batchId: string, state?: string): Promise<Array<Record<string, unknown>>>;
}

/** A service instance plus a fake vendor and a documents folder, with helpers to run cohorts through it. */
export async function createPipelineContext(opts: ContextOptions = {}): Promise<PipelineContext> {
  const vendor = await startFakeVendor();
  const docs = mkdtempSync(path.join(tmpdir(), 'di-docs-'));
  const services = {
    DOCUMENTS_DIR: docs,
    PAYMENT_VENDORS: JSON.stringify({ sandbox: { base_url: vendor.baseUrl, api_key: FAKE_VENDOR_API_KEY } }),
    // Sets of at most 10 jobs held at once per stage (the defaults are 100): a test batch of 60 to 120
    // accounts then moves in several sets, so the fault tests can act between them (stop the workers
    // with part of a batch done), and every set-based path still runs.
    PIPELINE_SET_SIZE: '10',
    WORKER_CONCURRENCY_VALIDATE: '10',
    WORKER_CONCURRENCY_STAGE: '10',
    WORKER_CONCURRENCY_PROCESS: '10',
    WORKER_CONCURRENCY_EXTRAS: '10',
  };
  const ctx = await createTestContext({
    ...opts,
    env: {
      ...services,
      PAYMENT_VENDOR_TIMEOUT_MS: '2000',
      WORKER_LOCK_MS: '5000',
      ...opts.env,
    },
    deps: { vendorBackoffMs: { min: 10, max: 50 }, ...opts.deps },
  });
  const auth = await ctx.authHeaders();
  const sets: WorkerSet[] = [];
  const get = async (url: string) => ctx.app.inject({ method: 'GET', url, headers: auth });

  const self: PipelineContext = {
    ...ctx,
    vendor,
    auth,
    startWorkers(queues = QUEUE_NAMES) {
      const set = startWorkers(ctx.deps, ctx.built.services, {
        queues,
        observe: (q, o, s) => ctx.built.metrics.observeJob(q, o, s),
        observer: ctx.built.metrics.pipelineObserver,
        observeAcceptance: (s) => ctx.built.metrics.observeAcceptance(s),
      });
      sets.push(set);
      return set;
    },
    workerEnv(extra = {}) {
      return { ...services, ...opts.env, ...extra };
    },
    async cohort(o) {
      const supplier = await ctx.deps.db.selectFrom('import_suppliers').select('documents_root').where('code', '=', o.supplier).executeTakeFirstOrThrow();
      const accounts = [...generateCohort({ count: o.count, supplier: o.supplier, prefix: o.prefix, seed: o.seed ?? 1, invalidRate: o.invalidRate ?? 0, vendor: 'sandbox', today: utcDate(ctx.clock.now()) })];
      for (const a of accounts) {
        for (const d of a.documents) {
          const key = resolveDocumentKey(supplier.documents_root, d.path);
          if (key.ok) await ctx.deps.documents.put(key.key, d.body);
        }
      }
      return { ndjson: accounts.map((a) => JSON.stringify(a.bundle)).join('\n') + '\n', accounts };
    },
    async upload(ndjson, q, headers = {}) {
      const res = await ctx.app.inject({
        method: 'POST',
        url: `/v1/data-import/batches/?import_supplier=${q.supplier}&operations_team_name=${encodeURIComponent(q.team)}${q.dryRun ? '&dry_run=true' : ''}`,
        payload: ndjson,
        headers: { ...auth, 'content-type': 'application/x-ndjson', ...headers },
      });
      if (res.statusCode !== 202) throw new Error(`upload answered ${res.statusCode}: ${res.body}`);
      return res.json();
    },
    async status(batchId) {
      return (await get(`/v1/data-import/batches/${batchId}/`)).json();
    },
    async waitForEnd(batchId, timeoutMs = 60_000) {
      return pollUntil(
        async () => {
          const s = await self.status(batchId);
          return s.state !== 'RUNNING' && s.state !== 'UPLOADING' ? s : null;
        },
        { timeoutMs, intervalMs: 100, what: `batch ${batchId} to end` },
      );
    },
    async items(batchId, state) {
      const all: Array<Record<string, unknown>> = [];
      let url: string | null = `/v1/data-import/batches/${batchId}/items/${state ? `?state=${state}` : ''}`;
      while (url) {
        const res = await get(url);
        all.push(...(res.json() as Array<Record<string, unknown>>));
        const link = res.headers.link as string | undefined;
        url = link ? /^<([^>]+)>/.exec(link)![1]! : null;
      }
      return all;
    },
    async close() {
      await Promise.all(sets.map((s) => s.close(5_000)));
      await ctx.close();
      await vendor.close();
      rmSync(docs, { recursive: true, force: true });
    },
  };
  return self;
}
