import type { Job } from 'bullmq';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { StageJobData } from '../../src/queue/contract.js';
import { createPipelineContext, type PipelineContext } from '../queue/setup.js';
import { startImportctl, type RunResult } from './run-cli.js';

/**
 * Issue 10, item 11: `importctl batch reconcile` reports the jobs it really re-created, not the
 * items that were open. A running batch whose items all still have their jobs: 0 re-created. Some
 * jobs removed from Redis: exactly that many re-created (and exactly those jobs are back). The batch
 * runs with no workers, so nothing moves between the runs.
 */

const SUPPLIER = 'RECON';
const TEAM = 'Reconcile Team';
const COUNT = 12;
const REMOVED = 5;

let ctx: PipelineContext;
let batchId: string;
let env: Record<string, string>;

const reconcile = async (args: string[] = [batchId]): Promise<RunResult> => (await startImportctl(['batch', 'reconcile', ...args], env, 60_000)).done;
const validateJobs = async () => ((await ctx.deps.queues.validate.getJobs(['waiting', 'delayed', 'active', 'prioritized'], 0, -1)) as Array<Job<StageJobData>>).map((j) => j.id!).sort();
const reported = (recreated: number) => `reconciled 1 running batch(es): ${recreated} job(s) re-created for ${COUNT} open item(s); the others still had theirs`;

beforeAll(async () => {
  ctx = await createPipelineContext();
  await ctx.createSupplier(SUPPLIER, { documentsRoot: 'reconcile' });
  await ctx.createTeam(TEAM);
  const { ndjson } = await ctx.cohort({ count: COUNT, supplier: SUPPLIER, prefix: 'RC', seed: 5 });
  ({ batch_id: batchId } = await ctx.upload(ndjson, { supplier: SUPPLIER, team: TEAM }));
  // The service's own PostgreSQL, Redis and prefix: what an operator's shell on that deployment has.
  env = { DATABASE_URL: ctx.config.databaseUrl, REDIS_URL: ctx.config.redisUrl, REDIS_PREFIX: ctx.config.redisPrefix };
});
afterAll(async () => ctx?.close());

it('reports 0 re-created while every open item has its job, then exactly the jobs removed from Redis, then 0 again', { timeout: 180_000 }, async () => {
  const all = await validateJobs();
  expect(all).toHaveLength(COUNT);
  expect((await ctx.status(batchId)).state).toBe('RUNNING');

  const untouched = await reconcile();
  expect({ code: untouched.code, stderr: untouched.stderr, lines: untouched.lines }).toEqual({ code: 0, stderr: '', lines: [reported(0)] });
  expect(await validateJobs()).toEqual(all);

  // Redis loses some of the batch's jobs.
  const removed = all.filter((_, i) => i % 2 === 0).slice(0, REMOVED);
  for (const id of removed) await (await ctx.deps.queues.validate.getJob(id))!.remove();
  expect(await validateJobs()).toEqual(all.filter((id) => !removed.includes(id)));

  const repaired = await reconcile();
  expect({ code: repaired.code, stderr: repaired.stderr, lines: repaired.lines }).toEqual({ code: 0, stderr: '', lines: [reported(REMOVED)] });
  expect(await validateJobs()).toEqual(all);

  // Every running batch (no id): nothing is missing any more.
  const again = await reconcile([]);
  expect({ code: again.code, stderr: again.stderr, lines: again.lines }).toEqual({ code: 0, stderr: '', lines: [reported(0)] });
  expect(await validateJobs()).toEqual(all);
});
