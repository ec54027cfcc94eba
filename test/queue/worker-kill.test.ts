import { afterAll, beforeAll, expect, it } from 'vitest';
import { pollUntil } from '../helpers/poll.js';
import { createPipelineContext, type PipelineContext } from './setup.js';
import { spawnWorker, type WorkerProcess } from './worker-process.js';

let ctx: PipelineContext;
const workers: WorkerProcess[] = [];
const ACCOUNTS = 150;

beforeAll(async () => {
  // Short job locks and permit leases so a killed worker's jobs and permits come back within seconds.
  ctx = await createPipelineContext({ env: { WORKER_LOCK_MS: '2000', PROCESS_CONCURRENCY_LIMIT: '3', PROCESS_PERMIT_TTL_MS: '2000' } });
  await ctx.createSupplier('KILL', { documentsRoot: 'kill' });
  await ctx.createTeam('Team');
});
afterAll(async () => {
  for (const w of workers) await w.kill('SIGKILL');
  await ctx?.close();
});

const workerEnv = () => ctx.workerEnv({ WORKER_CONCURRENCY_PROCESS: '6' });

it('a worker killed with SIGKILL mid-batch loses nothing: the batch completes exactly once after a new worker starts', async () => {
  const { ndjson } = await ctx.cohort({ count: ACCOUNTS, supplier: 'KILL', prefix: 'K' });
  const first = await spawnWorker(ctx.config, workerEnv());
  workers.push(first);
  const { batch_id } = await ctx.upload(ndjson, { supplier: 'KILL', team: 'Team' });

  // Kill it while work is in flight: some items done, many not.
  await pollUntil(async () => (await ctx.status(batch_id)).succeeded >= 20, { timeoutMs: 60_000, what: '20 items to succeed' });
  await first.kill('SIGKILL');
  const atKill = await ctx.status(batch_id);
  expect(atKill.state).toBe('RUNNING');
  expect(atKill.succeeded).toBeLessThan(ACCOUNTS);

  workers.push(await spawnWorker(ctx.config, workerEnv()));
  const end = await ctx.waitForEnd(batch_id, 120_000);
  expect(end).toMatchObject({ state: 'COMPLETED', total_items: ACCOUNTS, succeeded: ACCOUNTS, failed: 0 });

  const db = ctx.deps.db;
  const accounts = await db.selectFrom('accounts').select(({ fn }) => [fn.countAll<string>().as('n'), fn.count<string>('external_account_number').distinct().as('distinct')]).executeTakeFirstOrThrow();
  expect(Number(accounts.n)).toBe(ACCOUNTS);
  expect(Number(accounts.distinct)).toBe(ACCOUNTS);
  const perTable = async (table: 'account_transactions' | 'historical_statements' | 'payment_instructions') =>
    Number((await db.selectFrom(table).select(({ fn }) => fn.countAll<string>().as('n')).executeTakeFirstOrThrow()).n);
  expect(await perTable('account_transactions')).toBe(ACCOUNTS * 10);
  expect(await perTable('historical_statements')).toBe(ACCOUNTS * 2);
  expect(await perTable('payment_instructions')).toBe(ACCOUNTS);
  // The killed worker's permits expired with their leases: none is held once the batch is done.
  await pollUntil(async () => (await ctx.deps.permits.inUse()) === 0, { timeoutMs: 10_000, what: 'permits to return to 0' });
}, 180_000);
