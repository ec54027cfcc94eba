import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WorkerSet } from '../../src/queue/workers.js';
import { pollUntil } from '../helpers/poll.js';
import { LONG, SMALL_POOL, accountHoldings, batchItems, countSql, linesOf, ndjsonOf, type BatchItem } from './helpers.js';
import { createPipelineContext, type PipelineContext } from './setup.js';

// The pipeline runs the jobs a worker holds at once as one set (here up to 10: test/queue/setup.ts).
// These are the cases a set makes new: one account twice in a set, one meter point claimed by two
// accounts of a set, and a set whose transaction fails on one account.

const TEAM = 'Sets Team';
let ctx: PipelineContext;
let workers: WorkerSet | undefined;

beforeAll(async () => {
  ctx = await createPipelineContext({ deps: { dbPoolSize: SMALL_POOL } });
  await ctx.createTeam(TEAM);
  workers = ctx.startWorkers();
});
afterAll(async () => {
  await workers?.close(5_000);
  await ctx?.close();
});

type Line = { account: { external_account_number: string; supply_addresses: Array<{ meter_points: Array<{ identifier: string }> }> } } & Record<string, unknown>;

const accountsOf = (supplier: string) =>
  countSql(ctx, 'SELECT count(*) AS n FROM accounts a JOIN import_suppliers s ON s.id = a.import_supplier_id WHERE s.code = $1', [supplier]);

describe('one account twice in one set', () => {
  it('creates it once: both lines succeed with the same account number, and its history is imported once', async () => {
    await ctx.createSupplier('TWICE');
    const { ndjson } = await ctx.cohort({ count: 6, supplier: 'TWICE', prefix: 'TW', seed: 5 });
    const lines = linesOf(ndjson);
    // Line 3 again as line 4: adjacent, so in the same set of every stage.
    const doubled = [...lines.slice(0, 3), lines[2]!, ...lines.slice(3)];
    const { batch_id } = await ctx.upload(ndjsonOf(doubled), { supplier: 'TWICE', team: TEAM });
    const end = await ctx.waitForEnd(batch_id, LONG);
    expect(end).toMatchObject({ state: 'COMPLETED', total_items: 7, succeeded: 7, failed: 0 });

    const items = (await batchItems(ctx, batch_id)) as BatchItem[];
    const ext = (JSON.parse(lines[2]!) as Line).account.external_account_number;
    const twins = items.filter((i) => i.external_account_number === ext);
    expect(twins).toHaveLength(2);
    expect(twins[0]!.service_account_number).toMatch(/^A-[0-9A-F]{8}$/);
    expect(twins[1]!.service_account_number).toBe(twins[0]!.service_account_number);

    expect(await accountsOf('TWICE')).toBe(6);
    const holdings = await accountHoldings(ctx, 'TWICE');
    expect(holdings.get(ext)).toHaveLength(1);
    // The history of the twin is that of a single line: the second import of the same extras added nothing.
    const single = (JSON.parse(lines[2]!) as { notes?: unknown[]; statements?: unknown[]; payment_instruction?: unknown }) ?? {};
    const held = holdings.get(ext)![0]!;
    expect(held.statements).toBe(single.statements?.length ?? 0);
    expect(held.payment_instructions).toBe(single.payment_instruction ? 1 : 0);
  }, LONG);
});

describe('one meter point claimed by two accounts of a set', () => {
  it('goes to the earlier line; the later fails at stage with meter_point_already_registered at its identifier', async () => {
    await ctx.createSupplier('CLAIM');
    const { ndjson } = await ctx.cohort({ count: 5, supplier: 'CLAIM', prefix: 'CL', seed: 9 });
    const lines = linesOf(ndjson).map((l) => JSON.parse(l) as Line);
    const contested = lines[1]!.account.supply_addresses[0]!.meter_points[0]!.identifier;
    lines[3]!.account.supply_addresses[0]!.meter_points[0]!.identifier = contested;
    const { batch_id } = await ctx.upload(ndjsonOf(lines.map((l) => JSON.stringify(l))), { supplier: 'CLAIM', team: TEAM });
    const end = await ctx.waitForEnd(batch_id, LONG);
    expect(end).toMatchObject({ state: 'COMPLETED_WITH_ERRORS', succeeded: 4, failed: 1 });

    const items = (await batchItems(ctx, batch_id)) as BatchItem[];
    const loser = items.find((i) => i.state === 'failed')!;
    expect(loser.line).toBe(4);
    expect(loser.stage).toBe('stage');
    expect(loser.error).toMatchObject({ code: 'account_failed_validation' });
    expect(loser.error!.errors).toContainEqual(expect.objectContaining({ code: 'meter_point_already_registered', attr: 'supply_addresses.0.meter_points.0.identifier' }));

    expect(await accountsOf('CLAIM')).toBe(4);
    const owner = await ctx.deps.pool.query<{ ext: string }>(
      'SELECT a.external_account_number AS ext FROM meter_points m JOIN accounts a ON a.id = m.account_id WHERE m.identifier = $1',
      [contested],
    );
    expect(owner.rows).toEqual([{ ext: lines[1]!.account.external_account_number }]);
  }, LONG);
});

describe('a set whose transaction fails on one account', () => {
  it('runs its accounts one by one: the others are created, the bad one retries, and succeeds once the fault is gone', async () => {
    await ctx.createSupplier('BAD');
    const { ndjson } = await ctx.cohort({ count: 8, supplier: 'BAD', prefix: 'BD', seed: 13 });
    const lines = linesOf(ndjson).map((l) => JSON.parse(l) as Line);
    const bad = lines[4]!.account.external_account_number;
    // A database fault on this one account only (a trigger in this file's own database): every
    // attempt to create it fails on the database, as a broken constraint or a bad value would.
    await ctx.deps.pool.query(`
      CREATE FUNCTION refuse_one() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.external_account_number = '${bad}' THEN RAISE EXCEPTION 'refused by the test' USING ERRCODE = 'check_violation'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER refuse_one BEFORE INSERT ON accounts FOR EACH ROW EXECUTE FUNCTION refuse_one();`);
    try {
      const { batch_id } = await ctx.upload(ndjsonOf(lines.map((l) => JSON.stringify(l))), { supplier: 'BAD', team: TEAM });
      // Its seven neighbours go through while it is refused.
      await pollUntil(async () => (await ctx.status(batch_id)).succeeded === 7 || null, { timeoutMs: LONG, what: 'the seven good accounts' });
      const mid = (await batchItems(ctx, batch_id)) as BatchItem[];
      const stuck = mid.find((i) => i.external_account_number === bad)!;
      expect(stuck.state).not.toBe('failed');
      expect(stuck.stage).toBe('process');
      expect(await accountsOf('BAD')).toBe(7);
    } finally {
      await ctx.deps.pool.query('DROP TRIGGER refuse_one ON accounts; DROP FUNCTION refuse_one();');
    }
    // The job's next retry finds the fault gone.
    const batches = await ctx.deps.pool.query<{ id: string }>("SELECT b.id FROM batches b JOIN import_suppliers s ON s.id = b.import_supplier_id WHERE s.code = 'BAD'");
    const end = await ctx.waitForEnd(batches.rows[0]!.id, LONG);
    expect(end).toMatchObject({ state: 'COMPLETED', succeeded: 8, failed: 0 });
    expect(await accountsOf('BAD')).toBe(8);
  }, LONG);
});

describe('a dry-run batch beside a normal one', () => {
  it('never lets a set mix them: the dry run creates nothing, the normal batch creates every account', async () => {
    await ctx.createSupplier('DRYSET');
    await ctx.createSupplier('REALSET');
    const dry = await ctx.cohort({ count: 12, supplier: 'DRYSET', prefix: 'DS', seed: 21 });
    const real = await ctx.cohort({ count: 12, supplier: 'REALSET', prefix: 'RS', seed: 22 });
    // Both in the process queue at once: their jobs are held together by the same worker.
    const [a, b] = await Promise.all([
      ctx.upload(dry.ndjson, { supplier: 'DRYSET', team: TEAM, dryRun: true }),
      ctx.upload(real.ndjson, { supplier: 'REALSET', team: TEAM }),
    ]);
    expect(await ctx.waitForEnd(a.batch_id, LONG)).toMatchObject({ state: 'COMPLETED', succeeded: 12, failed: 0 });
    expect(await ctx.waitForEnd(b.batch_id, LONG)).toMatchObject({ state: 'COMPLETED', succeeded: 12, failed: 0 });
    expect(await accountsOf('DRYSET')).toBe(0);
    expect(await accountsOf('REALSET')).toBe(12);
    for (const item of (await batchItems(ctx, a.batch_id)) as BatchItem[]) expect(item.service_account_number).toBeNull();
    for (const item of (await batchItems(ctx, b.batch_id)) as BatchItem[]) expect(item.service_account_number).toMatch(/^A-/);
  }, LONG);
});

describe('two rounds of one item in one set', () => {
  it('the current round runs and the stale one is skipped, neither failing for the other', async () => {
    await ctx.createSupplier('ROUNDS');
    const { ndjson } = await ctx.cohort({ count: 1, supplier: 'ROUNDS', prefix: 'RO', seed: 31 });
    const { batch_id } = await ctx.upload(ndjson, { supplier: 'ROUNDS', team: TEAM });
    expect(await ctx.waitForEnd(batch_id, LONG)).toMatchObject({ state: 'COMPLETED', succeeded: 1 });
    // As after a retry of its extras: the item is back at extras in round 1, while a job of round 0 lingers.
    await ctx.deps.pool.query("UPDATE batch_items SET stage = 'extras', state = 'waiting', round = 1 WHERE batch_id = $1", [batch_id]);
    await ctx.deps.pool.query("UPDATE batches SET state = 'RUNNING', finished_at = NULL WHERE id = $1", [batch_id]);
    const ended: Array<{ id: string | undefined; how: string }> = [];
    const extras = workers!.workers.find((w) => w.name === 'extras')!;
    const onCompleted = (job: { id?: string | undefined }, value: unknown) => ended.push({ id: job.id, how: String(value) });
    const onFailed = (job: { id?: string | undefined } | undefined, err: Error) => ended.push({ id: job?.id, how: `failed: ${err.message}` });
    extras.on('completed', onCompleted);
    extras.on('failed', onFailed);
    try {
      // Both at once, so that one worker holds them in one set.
      await ctx.deps.ports.stageQueue.enqueue('extras', [
        { batchId: batch_id, line: 1, round: 0 },
        { batchId: batch_id, line: 1, round: 1 },
      ]);
      await pollUntil(async () => ended.length >= 2 || null, { timeoutMs: LONG, what: 'both jobs to end' });
    } finally {
      extras.off('completed', onCompleted);
      extras.off('failed', onFailed);
    }
    expect(ended.sort((a, b) => String(a.id).localeCompare(String(b.id)))).toEqual([
      { id: `${batch_id}.1.extras.0`, how: 'skipped' },
      { id: `${batch_id}.1.extras.1`, how: 'succeeded' },
    ]);
    expect(await ctx.waitForEnd(batch_id, LONG)).toMatchObject({ state: 'COMPLETED', succeeded: 1, failed: 0 });
  }, LONG);
});
