import { randomInt } from 'node:crypto';
import type { Kysely } from 'kysely';
import { toAppError } from '../app-errors.js';
import type { Clock } from '../clock.js';
import type { Database, Executor, ItemStage, ItemState } from '../db/database.js';
import { AppError, type ErrorEnvelope } from '../errors.js';
import type { Logger } from '../log.js';
import type { Permit, ProcessPermits, StageQueue } from '../ports.js';
import { SetNeedsSingles, type CreateEntry, type ProcessOutcome } from '../imports/accounts/account.service.js';
import type { Bundle } from '../imports/batches/batch.schemas.js';
import type { Services } from '../imports/services.js';
import { lockImportedAccount, lockImportedAccounts, pairKey, type ImportedAccount, type LockedWrite } from '../imports/shared/imported-account.js';
import { roundsByAccount, runWrites, runWriteSet } from '../imports/shared/write-set.js';
import { supplierFromRow } from '../imports/suppliers/supplier.repository.js';
import {
  claimItems,
  finishBatch,
  type FinishedBatch,
  itemKey,
  loadItem,
  markDelayed,
  recordItems,
  setItem,
  type ClaimedItem,
  type ItemRecord,
} from './items.repository.js';
import { recordAccountFailedEvents } from '../webhooks/outbox.js';
import { nextStageOf, queueForStage, type Stage, type StageJobData } from './routing.js';

/** A set's step: what it recorded for each item (with the item's own error, for a failure) and the states that left. */
interface StepResult {
  records: Map<string, ItemRecord & { appError?: AppError }>;
  states: Map<string, ItemState>;
  /** Items whose own check failed transiently before the set's writes (a vendor away): they retry, the others go on. */
  transient: Map<string, unknown>;
}

/** One job of a set: its item, and which attempt this is. */
export interface Member extends StageJobData {
  /** 1 for the first run of the job. */
  attempt: number;
  /** No retry follows if this attempt fails transiently: the item is recorded failed. */
  lastAttempt: boolean;
}

/** What a job did, for the job's return value and the metrics. */
export type StageOutcome = 'advanced' | 'succeeded' | 'skipped' | 'cancelled';

/** How each job of a set ends: done, delayed (no permit, or its window not open), invalid (recorded failed, never retried) or retried. */
export type MemberOutcome =
  | { kind: 'done'; result: StageOutcome }
  | { kind: 'delay'; until: number }
  | { kind: 'invalid'; error: AppError }
  | { kind: 'retry'; error: unknown };

/** An item's step as it was recorded, for the metrics: sent on, finished, or failed with its code. */
export interface ItemEvent {
  supplier: string;
  stage: ItemStage;
  outcome: 'passed' | 'succeeded' | 'failed';
  /** The error envelope's code when it failed; '' otherwise. */
  code: string;
  dryRun: boolean;
}

/** What the pipeline reports as it goes (the metrics listen). Called after the commit, never inside a transaction. */
export interface PipelineObserver {
  items(events: readonly ItemEvent[]): void;
  batchFinished(batch: FinishedBatch): void;
}

export interface PipelineDeps {
  /** Told of every recorded step and closed batch; optional. */
  observer?: PipelineObserver;
  db: Kysely<Database>;
  clock: Clock;
  log: Logger;
  permits: ProcessPermits;
  stageQueue: StageQueue;
  /** How long a process job waits before asking again for a permit, without spending an attempt. */
  permitRetryDelayMs: { min: number; max: number };
}

const ALREADY_IMPORTED = 'account_import_process_already_imported';

/** A step failed on the item's own data: the item fails there, and its job is not retried. */
const isInvalid = (e: AppError): boolean => e.status < 500 && e.status !== 429;

const windowElapsed = (end: Date): AppError =>
  new AppError(400, 'schedule_window_elapsed', `The schedule window ended at ${end.toISOString()} before the account was created; schedule it again.`);

/** Thrown inside a dry run's transaction so that everything it wrote is rolled back. */
class RollBack extends Error {
  constructor() {
    super('dry run');
  }
}

/** A dry run's step failed on the item's own data, at this stage. */
class FailedAt extends Error {
  constructor(
    readonly at: ItemStage,
    readonly error: AppError,
  ) {
    super(error.detail);
  }
}

/**
 * The pipeline: runs a stage for a set of items at once. The items are claimed with one statement,
 * checked in memory, written with one statement per table for the whole set in one transaction,
 * recorded with one statement and sent on with one enqueue. Each item still ends on its own, with
 * its own outcome. When the set's transaction fails, its items run again one by one, so one bad
 * account never fails its neighbours. The REST endpoints call the same domain functions (stageMany,
 * processMany) with a set of one.
 */
export function createPipeline(deps: PipelineDeps, services: Services) {
  const { db } = deps;
  const accounts = services.accounts;

  /** Runs `stage` for the jobs of a set; answers each job's outcome, in order. Never throws. */
  async function runSet(stage: Stage, members: readonly Member[]): Promise<MemberOutcome[]> {
    const outcomes: Array<MemberOutcome | undefined> = members.map(() => undefined);
    const indexOf = new Map(members.map((m, i) => [itemKey(m), i]));
    const permits = new Map<string, Permit>();
    try {
      let runnable = [...members];
      if (stage === 'process') {
        // A permit per account when the limit is on; an item without one waits without spending an attempt.
        const got = await Promise.all(members.map(() => deps.permits.tryAcquire()));
        got.forEach((p, i) => p && permits.set(itemKey(members[i]!), p));
        const waiting = members.filter((m) => !permits.has(itemKey(m)));
        if (waiting.length > 0) {
          runnable = members.filter((m) => permits.has(itemKey(m)));
          const marked = await markDelayed(db, stage, waiting);
          for (const m of waiting) {
            outcomes[indexOf.get(itemKey(m))!] = marked.has(itemKey(m))
              ? { kind: 'delay', until: Date.now() + randomInt(deps.permitRetryDelayMs.min, deps.permitRetryDelayMs.max) }
              : await settleUnclaimed(stage, m);
          }
        }
      }
      const claimed = await claimItems(db, stage, runnable);
      const claimedKeys = new Set(claimed.map((c) => itemKey(c)));
      for (const m of runnable) if (!claimedKeys.has(itemKey(m))) outcomes[indexOf.get(itemKey(m))!] = await settleUnclaimed(stage, m);
      const ready = await gateWindows(stage, claimed, (item, outcome) => (outcomes[indexOf.get(itemKey(item))!] = outcome));
      const memberOf = (item: ClaimedItem) => members[indexOf.get(itemKey(item))!]!;
      const answer = (item: ClaimedItem, outcome: MemberOutcome) => (outcomes[indexOf.get(itemKey(item))!] = outcome);
      // The process queue also runs dry-run batches' items, which take their own path: a set never mixes the two.
      await runClaimed(stage, ready.filter((i) => !i.dry_run), permits, memberOf, answer);
      await runClaimed(stage, ready.filter((i) => i.dry_run), permits, memberOf, answer);
    } catch (err) {
      // Claiming or settling failed (the database away): every job not yet answered retries.
      deps.log.debug({ err, stage }, 'stage set failed before its items ran');
      for (const [i, m] of members.entries()) if (!outcomes[i]) outcomes[i] = await failTransient(stage, m, undefined, err);
    } finally {
      await Promise.allSettled([...permits.values()].map((p) => p.release()));
    }
    return outcomes.map((o) => o ?? { kind: 'retry', error: new Error('no outcome') });
  }

  /**
   * A scheduled account's window: before its start the item waits (delayed until then); after its
   * end, an account not yet created fails instead of being created late. Answers the items that run now.
   */
  async function gateWindows(stage: Stage, items: readonly ClaimedItem[], answer: (item: ClaimedItem, o: MemberOutcome) => void): Promise<ClaimedItem[]> {
    const now = deps.clock.now().getTime();
    const early = items.filter((i) => i.schedule_window_start !== null && i.schedule_window_start.getTime() > now);
    const late = items.filter((i) => i.schedule_window_end !== null && i.schedule_window_end.getTime() < now && i.service_account_number === null && !early.includes(i));
    for (const item of early) {
      await setItem(db, jobOf(item), { state: 'delayed' }, item.stage);
      // Measured on the service's clock, waited on the queue's: the delay is the difference.
      answer(item, { kind: 'delay', until: Date.now() + (item.schedule_window_start!.getTime() - now) });
    }
    if (late.length > 0) {
      const errors = late.map((item) => windowElapsed(item.schedule_window_end!));
      const states = await recordItems(db, late.map((item, k) => ({ item, record: { kind: 'failed', at: item.stage, error: errors[k]!.body() } })));
      late.forEach((item, k) => states.has(itemKey(item)) && answer(item, { kind: 'invalid', error: errors[k]! }));
      observe(late.flatMap((item, k) => (states.has(itemKey(item)) ? [eventOf(item, item.stage, 'failed', errors[k]!.code)] : [])));
      await finishBatches(late);
    }
    return items.filter((i) => !early.includes(i) && !late.includes(i));
  }

  /** Runs the step of a set of claimed items; a set whose transaction fails runs again one item at a time. */
  async function runClaimed(
    stage: Stage,
    items: readonly ClaimedItem[],
    permits: ReadonlyMap<string, Permit>,
    memberOf: (item: ClaimedItem) => Member,
    answer: (item: ClaimedItem, o: MemberOutcome) => void,
  ): Promise<void> {
    if (items.length === 0) return;
    let records: StepResult['records'];
    let states: StepResult['states'];
    let transient: StepResult['transient'];
    try {
      ({ records, states, transient } = await step(stage, items, permits));
    } catch (err) {
      if (items.length > 1) {
        if (!(err instanceof SetNeedsSingles)) deps.log.warn({ err, stage, items: items.length }, 'a set failed; running its items one by one');
        for (const item of items) await runClaimed(stage, [item], permits, memberOf, answer);
        return;
      }
      const item = items[0]!;
      const e = toAppError(err);
      if (isInvalid(e)) {
        // Its own data: recorded where it failed, never retried.
        const at = err instanceof FailedAt ? err.at : item.stage;
        const recorded = await recordItems(db, [{ item, record: { kind: 'failed', at, error: e.body() } }]);
        if (recorded.has(itemKey(item))) observe([eventOf(item, at, 'failed', e.code)]);
        await finishBatches([item]);
        answer(item, { kind: 'invalid', error: e });
      } else {
        answer(item, await failTransient(stage, memberOf(item), item.stage, err, item));
      }
      return;
    }
    // Sent on: one enqueue per next stage for the whole set.
    const onward = new Map<Stage, StageJobData[]>();
    const finished: ClaimedItem[] = [];
    for (const item of items) {
      const record = records.get(itemKey(item));
      const state = states.get(itemKey(item));
      if (!record) continue;
      if (record.kind === 'advance' && record.next && state === 'waiting') {
        const next = queueForStage(record.next, item.dry_run);
        onward.set(next, [...(onward.get(next) ?? []), jobOf(item)]);
      } else if (state !== undefined) {
        finished.push(item);
      }
    }
    for (const [next, jobs] of onward) await deps.stageQueue.enqueue(next, jobs);
    observe(
      items.flatMap((item): ItemEvent[] => {
        const record = records.get(itemKey(item));
        const state = states.get(itemKey(item));
        if (!record || state === undefined || state === 'cancelled') return [];
        if (record.kind === 'failed') return [eventOf(item, record.at, 'failed', codeOf(record.error))];
        return [eventOf(item, stage, record.next ? 'passed' : 'succeeded', '')];
      }),
    );
    await finishBatches(finished);
    for (const item of items) {
      const record = records.get(itemKey(item));
      if (!record) {
        answer(item, await failTransient(stage, memberOf(item), item.stage, transient.get(itemKey(item)), item));
        continue;
      }
      if (record.kind === 'failed') answer(item, { kind: 'invalid', error: record.appError ?? toAppError(record.error) });
      else answer(item, { kind: 'done', result: states.get(itemKey(item)) === 'cancelled' ? 'cancelled' : record.next ? 'advanced' : 'succeeded' });
    }
  }

  /** Closes the batches of items that ended (each batch once). */
  async function finishBatches(items: ReadonlyArray<Pick<ClaimedItem, 'batch_id'>>): Promise<void> {
    for (const batchId of new Set(items.map((i) => i.batch_id))) await finishIfDone(batchId);
  }

  /** Closes the batch when nothing of it is open any more, and tells the observer. */
  async function finishIfDone(batchId: string): Promise<void> {
    const finished = await finishBatch(db, batchId, deps.clock.now());
    if (finished) tell(() => deps.observer?.batchFinished(finished));
  }

  function observe(events: readonly ItemEvent[]): void {
    if (events.length > 0) tell(() => deps.observer?.items(events));
  }

  /** An observer's failure is its own: it never changes what the pipeline did. */
  function tell(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      deps.log.warn({ err }, 'pipeline observer failed');
    }
  }

  /** Runs one stage's work for a set of claimed items and records it. Throws when the set must run again one by one. */
  async function step(stage: Stage, items: readonly ClaimedItem[], permits: ReadonlyMap<string, Permit>): Promise<StepResult> {
    const records = new Map<string, ItemRecord & { appError?: AppError }>();
    const transient = new Map<string, unknown>();
    const set = (item: ClaimedItem, record: ItemRecord & { appError?: AppError }) => records.set(itemKey(item), record);
    const fail = (item: ClaimedItem, at: ItemStage, e: AppError) => set(item, { kind: 'failed', at, error: e.body() as ErrorEnvelope, appError: e });
    const next = (item: ClaimedItem) => nextStageOf(stage, item.dry_run);
    const record = (ex: Executor) => recordItems(ex, items.flatMap((item) => (records.has(itemKey(item)) ? [{ item, record: records.get(itemKey(item))! }] : [])));

    if (stage === 'process' && items[0]!.dry_run) {
      // A dry run: everything after validation in one rolled-back transaction per item.
      for (const item of items) {
        try {
          await dryRun(item);
          set(item, { kind: 'advance', next: null, account: null });
        } catch (err) {
          if (err instanceof FailedAt) fail(item, err.at, err.error);
          else throw err;
        }
      }
      return { records, states: await record(db), transient };
    }

    switch (stage) {
      case 'validate': {
        const entries = items.map((item) => ({ input: bundleOf(item).account, known: supplierFromRow(item) }));
        const results = await accounts.validateMany(entries);
        items.forEach((item, k) => {
          const r = results[k]!;
          if (bundleOf(item).account.import_supplier !== item.supplier_code) fail(item, 'validate', supplierMismatch(item.supplier_code));
          else if (r instanceof AppError) invalidOrThrow(r, () => fail(item, 'validate', r));
          else set(item, { kind: 'advance', next: next(item), account: null });
        });
        return { records, states: await record(db), transient };
      }
      case 'stage': {
        const states = await db.transaction().execute(async (trx) => {
          const results = await accounts.stageMany(trx, items.map((item) => ({ input: bundleOf(item).account, known: supplierFromRow(item) })));
          items.forEach((item, k) => {
            const r = results[k]!;
            const existing = r instanceof AppError ? alreadyImportedNumber(r) : null;
            // The pipeline makes sure an account exists: one imported before (by this item's earlier run or another upload) is a success.
            if (r instanceof AppError && !existing) invalidOrThrow(r, () => fail(item, 'stage', r));
            else set(item, { kind: 'advance', next: next(item), account: existing });
          });
          return record(trx);
        });
        return { records, states, transient };
      }
      case 'process': {
        // An item that already has its account (a repeat of a job whose step committed) just moves on.
        const done = items.filter((i) => i.service_account_number !== null);
        for (const item of done) set(item, { kind: 'advance', next: next(item), account: item.service_account_number });
        const todo = items.filter((i) => i.service_account_number === null);
        if (todo.length === 0) return { records, states: await record(db), transient };
        let states = new Map<string, ItemState>();
        const entries: CreateEntry[] = todo.map((item) => ({
          req: { external_account_number: item.external_account_number ?? '', import_supplier_code: item.supplier_code, operations_team_name: item.team_name },
          known: { supplier: supplierFromRow(item), team: { id: item.team_id, name: item.team_name, created_at: item.team_created_at } },
        }));
        await accounts.processMany(entries, {
          permits: todo.flatMap((i) => permits.get(itemKey(i)) ?? []),
          beforeCommit: async (trx, results) => {
            todo.forEach((item, k) => {
              const r = results[k]!;
              const existing = r instanceof AppError ? alreadyImportedNumber(r) : null;
              if (r instanceof AppError && !existing) invalidOrThrow(r, () => fail(item, 'process', r));
              else set(item, { kind: 'advance', next: next(item), account: existing ?? (r as ProcessOutcome).service_account_number });
            });
            // The items' progress commits with their accounts.
            states = await record(trx);
          },
        });
        return { records, states, transient };
      }
      case 'extras': {
        // Each item's extras are checked first (fields, documents in storage, the payment vendor), with no lock held.
        const prepared = await Promise.all(
          items.map(async (item) => {
            try {
              return await prepareExtras(item);
            } catch (err) {
              const e = toAppError(err);
              if (isInvalid(e)) fail(item, 'extras', e);
              // With a set of more than one, the others go on; this one retries (its vendor call was its own).
              else if (items.length > 1) transient.set(itemKey(item), err);
              else throw err;
              return null;
            }
          }),
        );
        const states = await db.transaction().execute(async (trx) => {
          // Then every write of the set in one transaction, under one lock of all its accounts (taken in
          // id order, so two sets never deadlock on each other), each account's in the REST order.
          const pairOf = (item: ClaimedItem) => ({ import_supplier: item.supplier_code, external_account_number: item.external_account_number ?? '' });
          // Each table is written once for the whole set (runWriteSet); an account twice in the set has
          // its second item in a second round, which sees what the first wrote.
          const ready = items.flatMap((item, k) => (prepared[k] ? [{ item, writes: prepared[k] }] : []));
          const writing = ready.filter((r) => r.writes.length > 0);
          const accounts = writing.length > 0 ? await lockImportedAccounts(trx, writing.map((r) => pairOf(r.item))) : new Map<string, ImportedAccount>();
          for (const r of ready) if (r.writes.length === 0) set(r.item, { kind: 'advance', next: null, account: null });
          for (const round of roundsByAccount(writing, (r) => pairKey(pairOf(r.item)))) {
            const outcomes = await runWriteSet(trx, round.map((r) => ({ account: accounts.get(pairKey(pairOf(r.item)))!, writes: r.writes })));
            round.forEach((r, j) => {
              const outcome = outcomes[j]!;
              if (outcome.ok) set(r.item, { kind: 'advance', next: null, account: null });
              // An item refused by its own extras keeps none of them and fails alone; anything else is the set's problem.
              else invalidOrThrow(toAppError(outcome.error), () => fail(r.item, 'extras', toAppError(outcome.error)), outcome.error);
            });
          }
          return record(trx);
        });
        return { records, states, transient };
      }
    }
  }

  /** The bundle's extras, checked: the writes to run under the account's lock (all or nothing with the item). */
  async function prepareExtras(item: ClaimedItem, ex?: Executor): Promise<Array<LockedWrite<unknown>>> {
    const bundle = bundleOf(item);
    const supplier = supplierFromRow(item);
    const pair = { import_supplier: item.supplier_code, external_account_number: item.external_account_number ?? '' };
    const ctx = { db: ex, supplier };
    const writes: Array<LockedWrite<unknown>> = [];
    if (bundle.notes?.length) writes.push(await services.notes.prepareNotes({ ...pair, notes: bundle.notes }, ctx));
    if (bundle.transactions?.length) writes.push(await services.transactions.prepareTransactions({ ...pair, transactions: bundle.transactions }, {}, ctx));
    if (bundle.statements?.length) writes.push(await services.statements.prepareStatements({ ...pair, statements: bundle.statements }, ctx));
    if (bundle.payment_instruction) writes.push(await services.paymentInstructions.preparePaymentInstruction({ ...pair, ...bundle.payment_instruction }, ctx));
    return writes;
  }

  /** A dry-run item: stage, process and extras in one transaction, rolled back. Throws FailedAt for its own data. */
  async function dryRun(item: ClaimedItem): Promise<void> {
    const at = async <T>(where: ItemStage, fn: () => Promise<T>): Promise<T> => {
      try {
        return await fn();
      } catch (err) {
        const e = toAppError(err);
        if (err instanceof RollBack || !isInvalid(e)) throw err;
        throw new FailedAt(where, e);
      }
    };
    const known = { supplier: supplierFromRow(item), team: { id: item.team_id, name: item.team_name, created_at: item.team_created_at } };
    try {
      await db.transaction().execute(async (trx) => {
        let existing: string | null = null;
        try {
          await at('stage', () => accounts.stage(bundleOf(item).account, trx, known.supplier));
        } catch (err) {
          existing = err instanceof FailedAt ? alreadyImportedNumber(err.error) : null;
          if (!existing) throw err;
        }
        const request = { external_account_number: item.external_account_number ?? '', import_supplier_code: item.supplier_code, operations_team_name: item.team_name };
        if (!existing) await at('process', () => accounts.createIn(trx, request, known));
        const writes = await at('extras', () => prepareExtras(item, trx));
        if (writes.length > 0) {
          await at('extras', async () => {
            const account = await lockImportedAccount(trx, item.supplier_code, item.external_account_number ?? '');
            await runWrites(trx, account, writes);
          });
        }
        throw new RollBack();
      });
    } catch (err) {
      if (err instanceof RollBack) return;
      throw err;
    }
  }

  /**
   * A job that could not claim its item: find out why and leave the item and its batch right. A
   * repeat of a job whose item has moved on (the worker died after advancing it) makes sure the
   * item's current job exists, which also repairs a crash between advancing and enqueueing.
   */
  async function settleUnclaimed(stage: Stage, job: StageJobData): Promise<MemberOutcome> {
    const item = await loadItem(db, job);
    if (!item || item.round !== job.round) return { kind: 'done', result: 'skipped' };
    if (item.state === 'succeeded' || item.state === 'failed' || item.state === 'cancelled') {
      // The job that finished this item may have failed to close the batch: close it now if done.
      await finishIfDone(job.batchId);
      return { kind: 'done', result: 'skipped' };
    }
    if (item.cancel_requested_at) {
      await setItem(db, job, { state: 'cancelled' });
      await finishIfDone(job.batchId);
      return { kind: 'done', result: 'cancelled' };
    }
    const itemQueue = queueForStage(item.stage, item.dry_run);
    if (itemQueue !== stage) await deps.stageQueue.enqueue(itemQueue, [job]);
    return { kind: 'done', result: 'skipped' };
  }

  /**
   * A transient failure (database, Redis, vendor): the job retries with backoff and the item waits
   * for it; on the job's last attempt the item fails with the error. Guarded by the claim: progress
   * this run's own step committed is left alone, and the job's retry settles the rest.
   */
  async function failTransient(stage: Stage, m: Member, claimedAt: ItemStage | undefined, err: unknown, item?: ClaimedItem): Promise<MemberOutcome> {
    try {
      if (m.lastAttempt) {
        const e = toAppError(err);
        // Failed here one at a time, so its account.failed webhook deliveries are written here, with it.
        await db.transaction().execute(async (trx) => {
          await setItem(trx, m, { stage: claimedAt ?? stage, state: 'failed', error: e.body() }, claimedAt);
          await recordAccountFailedEvents(trx, [m]);
        });
        if (item) observe([eventOf(item, claimedAt ?? stage, 'failed', e.code)]);
        await finishIfDone(m.batchId);
      } else if (claimedAt) {
        await setItem(db, m, { state: 'waiting' }, claimedAt);
      }
    } catch {
      // The database is still away: the job's retry (or the reconciler) puts the item right.
    }
    return { kind: 'retry', error: err };
  }

  return { runSet };
}

export type Pipeline = ReturnType<typeof createPipeline>;

const jobOf = (item: Pick<ClaimedItem, 'batch_id' | 'line' | 'round'>): StageJobData => ({ batchId: item.batch_id, line: item.line, round: item.round });

const bundleOf = (item: ClaimedItem): Bundle => item.bundle as Bundle;

const supplierMismatch = (code: string): AppError =>
  new AppError(400, 'account_failed_validation', 'Account data failed validation.', [
    { code: 'import_supplier_mismatch', detail: `The batch is for supplier '${code}'.`, attr: 'import_supplier' },
  ]);

const alreadyImportedNumber = (e: AppError): string | null => (e.code === ALREADY_IMPORTED ? String(e.extra.service_account_number) : null);

/** An item's own error is recorded; anything else (a 5xx, a 429) is the set's problem: it runs again one by one. */
function invalidOrThrow(e: AppError, record: () => void, original: unknown = e): void {
  if (!isInvalid(e)) throw original;
  record();
}

const eventOf = (item: ClaimedItem, stage: ItemStage, outcome: ItemEvent['outcome'], code: string): ItemEvent => ({ supplier: item.supplier_code, stage, outcome, code, dryRun: item.dry_run });

/** The code of a recorded envelope (the transactions 400 shape has it at the top too). */
const codeOf = (error: unknown): string => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : '';
};
