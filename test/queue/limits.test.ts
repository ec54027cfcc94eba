import { afterAll, beforeAll, expect, it } from 'vitest';
import { SMALL_POOL, batchItems, batchStatus, type BatchStatusBody } from './helpers.js';
import { createPipelineContext, type PipelineContext } from './setup.js';

const SUPPLIER = 'LIM';
const COUNT = 60;

let ctx: PipelineContext;
/** attemptsMade of each process job as it completed (completed jobs are removed from Redis at once). */
const processCompletions: Array<{ id: string | undefined; attemptsMade: number }> = [];
beforeAll(async () => {
  ctx = await createPipelineContext({ env: { PROCESS_CONCURRENCY_LIMIT: '2', WORKER_CONCURRENCY_PROCESS: '10' }, deps: { dbPoolSize: SMALL_POOL } });
  await ctx.createSupplier(SUPPLIER, { documentsRoot: 'limits' });
  await ctx.createTeam('Team');
  const set = ctx.startWorkers();
  for (const w of set.workers.filter((w) => w.name === 'process')) w.on('completed', (job) => processCompletions.push({ id: job.id, attemptsMade: job.attemptsMade }));
});
afterAll(async () => ctx?.close());

it('never processes more than 2 accounts at once with stage concurrency 10, and no job fails for it', async () => {
  expect(ctx.config.processConcurrencyLimit).toBe(2);
  expect(ctx.config.workerConcurrency.process).toBe(10);
  const { ndjson } = await ctx.cohort({ count: COUNT, supplier: SUPPLIER, prefix: 'LI', seed: 3 });
  const { batch_id } = await ctx.upload(ndjson, { supplier: SUPPLIER, team: 'Team' });

  // Measurement, not synchronisation: sample the permits every ~5 ms, and the process queue's
  // delayed jobs and the batch status alongside, until the batch ends.
  const permitSamples: number[] = [];
  const delayedJobSamples: number[] = [];
  const statusSamples: BatchStatusBody[] = [];
  let done = false;
  // Generous: the machine may be shared; alone the batch takes about 10 s.
  const deadline = Date.now() + 100_000;
  const sampler = (async () => {
    while (!done && Date.now() < deadline) {
      const [inUse, delayed] = await Promise.all([ctx.deps.permits.inUse(), ctx.deps.queues.process.getDelayedCount()]);
      permitSamples.push(inUse);
      delayedJobSamples.push(delayed);
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  let end: BatchStatusBody;
  try {
    for (;;) {
      const s = await batchStatus(ctx, batch_id);
      statusSamples.push(s);
      if (s.state !== 'RUNNING') {
        end = s;
        break;
      }
      if (Date.now() > deadline) throw new Error(`batch ${batch_id} did not end: ${JSON.stringify(s)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    done = true;
    await sampler;
  }

  expect(end).toMatchObject({ state: 'COMPLETED', total_items: COUNT, succeeded: COUNT, failed: 0 });
  expect(permitSamples.length).toBeGreaterThan(20);
  expect(Math.max(...permitSamples)).toBeLessThanOrEqual(2);
  expect(Math.max(...permitSamples)).toBeGreaterThanOrEqual(1);

  // Waiting for a permit is not a failure: no process job failed or spent an attempt on it.
  const process = ctx.deps.queues.process;
  expect(await process.getFailedCount()).toBe(0);
  expect(processCompletions).toHaveLength(COUNT);
  for (const job of processCompletions) expect(job.attemptsMade, `job ${job.id}`).toBe(1);
  for (const item of await batchItems(ctx, batch_id)) expect(item).toMatchObject({ state: 'succeeded', error: null, attempts: 1 });
  const accounts = await ctx.deps.db.selectFrom('accounts').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();
  expect(Number(accounts.n)).toBe(COUNT);

  // Items did wait for a permit: seen as delayed process jobs in Redis and as `delayed` in the batch
  // status (with 60 accounts and 10 process slots for 2 permits, most samples see some).
  expect(delayedJobSamples.filter((n) => n > 0).length, 'no sample saw a delayed process job').toBeGreaterThan(0);
  expect(statusSamples.filter((s) => s.stages.process.delayed > 0).length, 'no status showed stages.process.delayed > 0').toBeGreaterThan(0);

  // Every permit is back once the batch is done.
  expect(await ctx.deps.permits.inUse()).toBe(0);
}, 120_000);
