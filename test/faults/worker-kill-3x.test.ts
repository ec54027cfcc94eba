import { afterAll, beforeAll, expect, it } from 'vitest';
import { pollUntil } from '../helpers/poll.js';
import { seededRandom } from '../queue/helpers.js';
import { createPipelineContext, type PipelineContext } from '../queue/setup.js';
import type { WorkerProcess } from '../queue/worker-process.js';
import { ended, expectExactImport, pollStatus, spawnTrackedWorker } from './helpers.js';

/**
 * Real worker processes (workers/all.ts) SIGKILLed at three seeded-random points of one batch, a
 * fresh process started after each. Short job locks and permit leases bring a dead worker's jobs
 * and permits back within seconds. Nothing may be lost or doubled, the deployment-wide permit cap
 * must hold throughout, and no permit may outlive the batch.
 */

let ctx: PipelineContext;
const workers: WorkerProcess[] = [];
const ACCOUNTS = 60;
const LIMIT = 3;
const SEED = 4242;

beforeAll(async () => {
  ctx = await createPipelineContext({ env: { WORKER_LOCK_MS: '2000', PROCESS_CONCURRENCY_LIMIT: String(LIMIT), PROCESS_PERMIT_TTL_MS: '2000' } });
  await ctx.createSupplier('KILL3', { documentsRoot: 'kill3' });
  await ctx.createTeam('Team');
});
afterAll(async () => {
  for (const w of workers) await w.kill('SIGKILL');
  await ctx?.close();
});

const workerEnv = () => ctx.workerEnv({ WORKER_CONCURRENCY_PROCESS: '6' });

/** Three kill points (items succeeded), one drawn from each of these windows of the batch. */
function killPoints(): number[] {
  const rnd = seededRandom(SEED);
  return [
    [0.1, 0.25],
    [0.4, 0.55],
    [0.7, 0.85],
  ].map(([lo, hi]) => Math.round(ACCOUNTS * (lo! + (hi! - lo!) * rnd())));
}

it('three SIGKILLs at seeded-random points, a fresh worker after each: exact counts, no account twice, permits back to 0', async ({ annotate }) => {
  const t0 = Date.now();
  const phases: string[] = [];
  const mark = (what: string) => phases.push(`${what}@${((Date.now() - t0) / 1000).toFixed(1)}s`);
  const { ndjson, accounts } = await ctx.cohort({ count: ACCOUNTS, supplier: 'KILL3', prefix: 'K3', seed: 41 });
  mark('cohort');
  let current = await spawnTrackedWorker(ctx.config, workerEnv(), workers);
  const { batch_id } = await ctx.upload(ndjson, { supplier: 'KILL3', team: 'Team' });

  let maxPermits = 0;
  const samplePermits = async () => {
    maxPermits = Math.max(maxPermits, await ctx.deps.permits.inUse());
  };
  const kills: Array<{ point: number; succeeded: number; inFlight: number; permitsHeld: number }> = [];
  for (const point of killPoints()) {
    mark('wait');
    await pollStatus(ctx, batch_id, (x) => x.succeeded >= point, `${point} items to succeed`, { timeoutMs: 60_000, onSample: samplePermits });
    const permitsHeld = await ctx.deps.permits.inUse();
    await current.kill('SIGKILL');
    expect(current.child.signalCode).toBe('SIGKILL');
    const at = await pollStatus(ctx, batch_id, () => true, 'the status');
    expect(at.state).toBe('RUNNING');
    expect(at.succeeded).toBeLessThan(ACCOUNTS);
    const inFlight = Object.values(at.stages).reduce((n, c) => n + c.active + c.waiting + c.delayed, 0);
    kills.push({ point, succeeded: at.succeeded, inFlight, permitsHeld });
    mark('killed');
    current = await spawnTrackedWorker(ctx.config, workerEnv(), workers);
    mark('spawned');
  }
  // Each kill landed mid-batch, with work in flight.
  for (const k of kills) expect(k.inFlight, JSON.stringify(kills)).toBeGreaterThan(0);

  const end = await pollStatus(ctx, batch_id, ended, 'the batch to end', { timeoutMs: 120_000, onSample: samplePermits });
  mark('ended');
  expect(end).toMatchObject({ state: 'COMPLETED', total_items: ACCOUNTS, succeeded: ACCOUNTS, failed: 0, cancelled: 0 });
  const figures = await expectExactImport(ctx, 'KILL3', accounts, batch_id);

  // The cap held throughout, dead holders' leases included; none is held once the batch is done.
  expect(maxPermits).toBeLessThanOrEqual(LIMIT);
  await pollUntil(async () => (await ctx.deps.permits.inUse()) === 0, { timeoutMs: 10_000, what: 'permits to return to 0' });
  // The surviving worker is alive and was never the one killed.
  expect(current.child.exitCode).toBeNull();
  expect(current.child.signalCode).toBeNull();
  mark('checked');
  await annotate(`[worker-kill-3x] ${phases.join(' ')}; kills ${JSON.stringify(kills)}; max permits seen ${maxPermits}/${LIMIT}; ${workers.length} worker processes; end ${JSON.stringify(figures)}`);
}, 300_000);
