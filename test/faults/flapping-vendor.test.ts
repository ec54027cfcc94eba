import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountPayload } from '../helpers/fixtures.js';
import { api, batchItems, countSql, pickSeeded, seededRandom } from '../queue/helpers.js';
import { createPipelineContext, type PipelineContext } from '../queue/setup.js';
import { ended, expectEnvelope, expectExactImport, pollStatus } from './helpers.js';

/**
 * A flapping payment vendor: each reference fails half of its lookups (HTTP 500), drawn from its
 * own seeded sequence (the sandbox's `flap`). The service asks with PAYMENT_VENDOR_RETRIES=1, so one
 * lookup is at most 2 calls; a batch's extras job has 6 attempts, so an item makes at most 12 calls.
 * Because the sequences are seeded, every outcome is known in advance: which items succeed after how
 * many calls, which exhaust every attempt (failed at `extras`, 500 `payment_vendor_unavailable`),
 * which REST calls answer 201 and which 500. Nothing may ever be stored twice.
 *
 * (A *default* `flap` with a seed would give every reference the same sequence, since the sandbox
 * keeps the generator per reference: all items would fail and succeed in lockstep. Hence one script
 * per reference, each with its own seed.)
 */

let ctx: PipelineContext;
const S = 'FLAP';
const VENDOR = 'sandbox';
const RATE = 0.5;
const CALLS_PER_LOOKUP = 2; // PAYMENT_VENDOR_RETRIES=1
const JOB_ATTEMPTS = 6; // DEFAULT_JOB_OPTIONS.attempts
const MAX_CALLS = CALLS_PER_LOOKUP * JOB_ATTEMPTS;

/** The sandbox's flap, replayed: how many calls until the first success (null: none within `max`). */
function callsUntilSuccess(seed: number, max: number): number | null {
  const rnd = seededRandom(seed);
  for (let call = 1; call <= max; call++) if (rnd() >= RATE) return call;
  return null;
}

/** The first seeds from `from` whose first `max` calls all fail: references that will exhaust every attempt. */
function unluckySeeds(n: number, max: number, from: number): number[] {
  const out: number[] = [];
  for (let seed = from; out.length < n; seed++) if (callsUntilSuccess(seed, max) === null) out.push(seed);
  return out;
}

beforeAll(async () => {
  // Generous vendor timeout and job lock: a timed-out call or a stalled job re-run would spend a draw of
  // the sequence the predictions replay (the sandbox answers at once; only a loaded machine is slow).
  ctx = await createPipelineContext({ env: { PAYMENT_VENDOR_RETRIES: '1', PAYMENT_VENDOR_TIMEOUT_MS: '10000', WORKER_LOCK_MS: '15000' } });
  await ctx.createSupplier(S, { documentsRoot: 'flap' });
  await ctx.createTeam('Team');
  ctx.startWorkers();
});
afterAll(async () => ctx?.close());

const instructionRows = (ext: string) =>
  countSql(
    ctx,
    `SELECT count(*) AS n FROM payment_instructions p JOIN accounts a ON a.id = p.account_id JOIN import_suppliers s ON s.id = a.import_supplier_id
     WHERE s.code = $1 AND a.external_account_number = $2`,
    [S, ext],
  );

describe('a batch against a flapping vendor', () => {
  it('every item ends succeeded or failed (extras, 500 payment_vendor_unavailable) as its sequence predicts; one instruction per success; a retry with the vendor back completes it, still one each', async ({ annotate }) => {
    const COUNT = 60;
    const UNLUCKY = 4;
    const { ndjson, accounts } = await ctx.cohort({ count: COUNT, supplier: S, prefix: 'FP', seed: 51 });
    const refs = accounts.map((a) => a.bundle.payment_instruction!.reference);
    const exts = accounts.map((a) => a.bundle.account.external_account_number as string);
    // Seeds: 1000+i for most; a seeded pick of items gets seeds that fail all 12 calls.
    const seeds = refs.map((_, i) => 1000 + i);
    const unluckyAt = pickSeeded([...refs.keys()], UNLUCKY, 52);
    const bad = unluckySeeds(UNLUCKY, MAX_CALLS, 100_000);
    unluckyAt.forEach((i, k) => (seeds[i] = bad[k]!));
    refs.forEach((ref, i) => ctx.vendor.set(ref, { kind: 'flap', failureRate: RATE, seed: seeds[i]! }));
    const predicted = seeds.map((seed) => callsUntilSuccess(seed, MAX_CALLS));
    const failing = new Set(predicted.flatMap((c, i) => (c === null ? [i] : [])));
    expect([...failing].sort((a, b) => a - b)).toEqual([...unluckyAt].sort((a, b) => a - b));
    // The flapping is real: most items need more than one call, some need several job attempts.
    expect(predicted.filter((c) => c !== null && c > 1).length).toBeGreaterThan(COUNT / 3);
    expect(predicted.filter((c) => c !== null && c > CALLS_PER_LOOKUP).length).toBeGreaterThan(0);

    const { batch_id } = await ctx.upload(ndjson, { supplier: S, team: 'Team' });
    const end = await pollStatus(ctx, batch_id, ended, 'the batch to end', { timeoutMs: 120_000 });
    expect(end).toMatchObject({ state: 'COMPLETED_WITH_ERRORS', total_items: COUNT, succeeded: COUNT - UNLUCKY, failed: UNLUCKY, cancelled: 0 });

    const items = await batchItems(ctx, batch_id);
    const calls = refs.map((ref) => ctx.vendor.countFor(ref));
    for (const [i, item] of items.entries()) {
      const ext = exts[i]!;
      if (failing.has(i)) {
        // Gave up after every attempt, with the envelope the REST endpoint answers; the account exists, no instruction.
        expect(item, ext).toMatchObject({ stage: 'extras', state: 'failed', attempts: JOB_ATTEMPTS, error: { code: 'payment_vendor_unavailable', errors: [] } });
        expect(Object.keys(item.error!).sort()).toEqual(['code', 'detail', 'errors']);
        expect(item.service_account_number, ext).toMatch(/^A-[0-9A-F]{8}$/);
        expect(await instructionRows(ext), ext).toBe(0);
        expect(calls[i], ext).toBe(MAX_CALLS);
      } else {
        expect(item, ext).toMatchObject({ stage: 'extras', state: 'succeeded', error: null });
        expect(await instructionRows(ext), ext).toBe(1);
        // Asked until the first success, never again after it.
        expect(calls[i], ext).toBe(predicted[i]);
      }
    }
    const callsBeforeRetry = calls.reduce((a, b) => a + b, 0);

    // The vendor is back: the failed items are retried from extras and succeed, asking once each.
    ctx.vendor.setDefault({ kind: 'found' });
    for (const i of failing) ctx.vendor.set(refs[i]!, { kind: 'found' });
    const retry = await api(ctx).post(`/v1/data-import/batches/${batch_id}/retry/`);
    expect(retry.statusCode, retry.body).toBe(200);
    expect(retry.json()).toEqual({ requeued: UNLUCKY });
    const end2 = await pollStatus(ctx, batch_id, ended, 'the retried batch to end', { timeoutMs: 90_000 });
    expect(end2).toMatchObject({ state: 'COMPLETED', succeeded: COUNT, failed: 0 });
    for (const [i, ref] of refs.entries()) expect(ctx.vendor.countFor(ref), ref).toBe(failing.has(i) ? MAX_CALLS + 1 : predicted[i]);
    // Exactly one account and one instruction per line, and every other extra exactly once, despite 6 extras attempts.
    const figures = await expectExactImport(ctx, S, accounts, batch_id);
    expect(await countSql(ctx, 'SELECT count(*) - count(DISTINCT (account_id, vendor, reference)) AS n FROM payment_instructions')).toBe(0);
    await annotate(
      `[flapping-vendor batch] ${COUNT} items, ${callsBeforeRetry} vendor calls (${callsBeforeRetry - (COUNT - UNLUCKY)} answered 500); ${UNLUCKY} exhausted ${MAX_CALLS} calls → failed 500 payment_vendor_unavailable; ` +
        `after retry ${end2.succeeded}/${COUNT}; end ${JSON.stringify(figures)}`,
    );
  }, 240_000);
});

describe('the REST endpoint against a flapping vendor', () => {
  it('20 sequential calls answer 201 or 500 payment_vendor_unavailable as predicted; the 500s repeated once the vendor is back answer 201; one row each', async ({ annotate }) => {
    const N = 20;
    const exts = Array.from({ length: N }, (_, i) => `FR-${String(i + 1).padStart(3, '0')}`);
    for (const ext of exts) {
      const staged = await api(ctx).post('/v1/data-import/account-import-process/create-or-update/', accountPayload(S, ext));
      expect(staged.statusCode, staged.body).toBe(201);
      const processed = await api(ctx).post('/v1/data-import/account-import-process/process/', { external_account_number: ext, import_supplier_code: S, operations_team_name: 'Team' });
      expect(processed.statusCode, processed.body).toBe(201);
    }
    const refs = exts.map((ext) => `CARD-${ext}`);
    const seeds = refs.map((_, i) => 2000 + i);
    refs.forEach((ref, i) => ctx.vendor.set(ref, { kind: 'flap', failureRate: RATE, seed: seeds[i]! }));
    const predicted = seeds.map((seed) => callsUntilSuccess(seed, CALLS_PER_LOOKUP));
    const expect500 = new Set(predicted.flatMap((c, i) => (c === null ? [i] : [])));
    expect(expect500.size).toBeGreaterThan(0);
    expect(expect500.size).toBeLessThan(N);

    const post = (i: number) =>
      api(ctx).post('/v1/data-import/payment-instruction/create/', { import_supplier: S, external_account_number: exts[i], vendor: VENDOR, reference: refs[i], type: 'CARD' });
    const first: number[] = [];
    for (let i = 0; i < N; i++) {
      const res = await post(i);
      first.push(res.statusCode);
      if (expect500.has(i)) {
        expectEnvelope(res, 500, 'payment_vendor_unavailable');
        expect(await instructionRows(exts[i]!)).toBe(0);
        expect(ctx.vendor.countFor(refs[i]!)).toBe(CALLS_PER_LOOKUP);
      } else {
        expect(res.statusCode, res.body).toBe(201);
        expect(res.json()).toMatchObject({ reference: refs[i] });
        expect(await instructionRows(exts[i]!)).toBe(1);
        expect(ctx.vendor.countFor(refs[i]!)).toBe(predicted[i]);
      }
    }

    // The vendor is back. "Retry the request as it is": the 500s now answer 201, asking once more.
    for (const i of expect500) ctx.vendor.set(refs[i]!, { kind: 'found' });
    for (const i of expect500) {
      const res = await post(i);
      expect(res.statusCode, res.body).toBe(201);
      expect(ctx.vendor.countFor(refs[i]!)).toBe(CALLS_PER_LOOKUP + 1);
    }
    // A repeat of a success answers from storage without asking the vendor again.
    const ok = [...Array(N).keys()].find((i) => !expect500.has(i))!;
    const callsBefore = ctx.vendor.countFor(refs[ok]!);
    const again = await post(ok);
    expect(again.statusCode, again.body).toBe(201);
    expect(ctx.vendor.countFor(refs[ok]!)).toBe(callsBefore);
    for (const ext of exts) expect(await instructionRows(ext), ext).toBe(1);
    await annotate(`[flapping-vendor REST] first pass ${first.filter((c) => c === 201).length}×201 ${first.filter((c) => c === 500).length}×500; after the vendor came back ${N}/${N} stored, one row each`);
  }, 60_000);
});
