import { randomInt } from 'node:crypto';
import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import { sql, type ExpressionBuilder } from 'kysely';
import type { Deps } from '../deps.js';
import type { Database, Executor, ItemStage, ItemState } from '../db/database.js';
import { AppError, type ErrorEnvelope } from '../errors.js';
import { toAppError } from '../app-errors.js';
import { finishIfDone } from '../imports/batches/batch.repository.js';
import type { Bundle } from '../imports/batches/batch.schemas.js';
import { queueForStage } from '../imports/batches/batch.service.js';
import type { KnownContext } from '../imports/accounts/account.service.js';
import type { Services } from '../imports/services.js';
import { lockImportedAccount, type LockedWrite } from '../imports/shared/imported-account.js';
import { SUPPLIER_COLUMNS_JOINED, supplierFromRow, type SupplierColumnsJoined } from '../imports/suppliers/supplier.repository.js';
import { PERMIT_RETRY_DELAY_MS, nextStage, type Stage, type StageJobData } from './contract.js';
import { enqueueStage } from './queues.js';
import type { Permit } from './semaphore.js';

interface ItemRow extends SupplierColumnsJoined {
  line: number;
  round: number;
  stage: ItemStage;
  state: ItemState;
  bundle: unknown;
  external_account_number: string | null;
  service_account_number: string | null;
  dry_run: boolean;
  cancel_requested_at: Date | null;
  team_id: string;
  team_name: string;
  team_created_at: Date;
}

/** What a job did, for the job's return value and the metrics. */
export type StageOutcome = 'advanced' | 'succeeded' | 'skipped' | 'cancelled';

/** Thrown inside a dry run's transaction so that everything it wrote is rolled back. */
class RollBack extends Error {
  constructor(readonly serviceAccountNumber: string) {
    super('dry run');
  }
}

/** A step failed on the item's own data: recorded on the item, never retried. */
class ItemFailed extends Error {
  constructor(
    readonly at: ItemStage,
    readonly error: AppError,
  ) {
    super(error.detail);
  }
}

const ALREADY_IMPORTED = 'account_import_process_already_imported';

/** What a step needs of its item and batch: read by the claim and by the slow path alike. */
const ITEM_COLUMNS = [
  'i.line',
  'i.round',
  'i.stage',
  'i.state',
  'i.bundle',
  'i.external_account_number',
  'i.service_account_number',
  'b.dry_run',
  'b.cancel_requested_at',
  ...SUPPLIER_COLUMNS_JOINED,
  't.id as team_id',
  't.name as team_name',
  't.created_at as team_created_at',
] as const;

/** The batch's supplier and team as the claim read them: the steps need not look them up again. */
const knownOf = (item: ItemRow): KnownContext => ({
  supplier: supplierFromRow(item),
  team: { id: item.team_id, name: item.team_name, created_at: item.team_created_at },
});

/**
 * Records a step's outcome on its item (advanced to the next stage, or succeeded). A step with a
 * transaction of its own calls it inside that transaction, so the domain rows and the item's
 * progress commit together; otherwise the processor calls it after the step.
 */
type RecordProgress = (ex: Executor, accountNumber: string | null) => Promise<void>;

export interface StageProcessorContext {
  deps: Deps;
  services: Services;
  /** Called with how long each job took (metrics). */
  observe?: (stage: Stage, outcome: 'completed' | 'failed' | 'delayed', seconds: number) => void;
}

/**
 * The processor of one stage's queue. It calls the same domain services as the REST endpoints;
 * PostgreSQL (batch_items) records where each item stands, so a job that runs twice (BullMQ is
 * at least once) finds its item already moved on and does nothing but make sure the item's
 * current job exists.
 */
export function createStageProcessor(ctx: StageProcessorContext, stage: Stage) {
  const { deps, services } = ctx;
  const db = deps.db;

  const loadItem = (data: StageJobData): Promise<ItemRow | undefined> =>
    db
      .selectFrom('batch_items as i')
      .innerJoin('batches as b', 'b.id', 'i.batch_id')
      .innerJoin('import_suppliers as s', 's.id', 'b.import_supplier_id')
      .innerJoin('operations_teams as t', 't.id', 'b.operations_team_id')
      .select(ITEM_COLUMNS)
      .where('i.batch_id', '=', data.batchId)
      .where('i.line', '=', data.line)
      .executeTakeFirst();

  /**
   * The items this queue may work on: open, this round, at a stage this queue runs (dry runs do
   * stage, process and extras together in the process queue), in a batch not being cancelled.
   */
  const claimable = (data: StageJobData) => {
    const stageMatch = (eb: ExpressionBuilder<Database & { i: Database['batch_items']; b: Database['batches'] }, 'i' | 'b'>) => {
      if (stage === 'validate') return eb('i.stage', '=', 'validate');
      if (stage === 'process') {
        return eb.or([
          eb.and([eb('b.dry_run', '=', false), eb('i.stage', '=', 'process')]),
          eb.and([eb('b.dry_run', '=', true), eb('i.stage', 'in', ['stage', 'process', 'extras'])]),
        ]);
      }
      return eb.and([eb('b.dry_run', '=', false), eb('i.stage', '=', stage)]);
    };
    return db
      .updateTable('batch_items as i')
      .from('batches as b')
      .whereRef('b.id', '=', 'i.batch_id')
      .where('i.batch_id', '=', data.batchId)
      .where('i.line', '=', data.line)
      .where('i.round', '=', data.round)
      .where('i.state', 'in', ['waiting', 'delayed', 'active'])
      .where('b.cancel_requested_at', 'is', null)
      .where(stageMatch);
  };

  /**
   * The common path in one statement: marks the item active and returns what the step needs.
   * Undefined when this job may not run it (moved on, finished, cancelled): see settleUnclaimed.
   */
  const claimItem = (data: StageJobData, attempt: number): Promise<ItemRow | undefined> =>
    claimable(data)
      .innerJoin('import_suppliers as s', 's.id', 'b.import_supplier_id')
      .innerJoin('operations_teams as t', 't.id', 'b.operations_team_id')
      .set({ state: 'active', attempts: attempt, updated_at: sql`now()` })
      .returning(ITEM_COLUMNS)
      .executeTakeFirst();

  /**
   * Updates the item of this job's round and answers its new state (undefined: no row changed). With
   * `claimedAt`, only while the item is still where this job claimed it (that stage, active):
   * progress another run of the job (a stalled repeat) or this run's own committed step recorded is
   * never overwritten.
   */
  const setItem = (ex: Executor, data: StageJobData, values: Record<string, unknown>, claimedAt?: ItemStage) =>
    ex
      .updateTable('batch_items')
      .set({ ...values, updated_at: sql`now()` })
      .where('batch_id', '=', data.batchId)
      .where('line', '=', data.line)
      .where('round', '=', data.round)
      .$if(claimedAt !== undefined, (q) => q.where('stage', '=', claimedAt!).where('state', '=', 'active'))
      .returning('state')
      .executeTakeFirst();

  /** Runs this stage's work for the item; returns the account number when it learned one. `permit`: the process stage's. */
  async function runStep(item: ItemRow, record: RecordProgress, permit: Permit | null): Promise<string | null> {
    const bundle = item.bundle as Bundle;
    const known = knownOf(item);
    const ext = item.external_account_number ?? '';
    const pair = { import_supplier: item.supplier_code, external_account_number: ext };
    const request = { external_account_number: ext, import_supplier_code: item.supplier_code, operations_team_name: item.team_name };
    const attempt = async <T>(at: ItemStage, fn: () => Promise<T>): Promise<T> => {
      try {
        return await fn();
      } catch (err) {
        if (err instanceof RollBack || err instanceof ItemFailed) throw err;
        const e = toAppError(err);
        if (e.status < 500 && e.status !== 429) throw new ItemFailed(at, e);
        throw err;
      }
    };
    /**
     * The bundle's extras, all or nothing: each is checked first (fields, documents in storage, the
     * payment vendor), with no lock held; then every write runs in one transaction under one lock
     * of the account, in the REST order (notes, transactions, statements, payment instruction).
     * `ex` is the dry run's transaction; otherwise the writes get their own, which also records the item.
     */
    const runExtras = async (ex?: Executor) => {
      const ctx = { db: ex, supplier: known.supplier };
      const writes: Array<LockedWrite<unknown>> = [];
      if (bundle.notes?.length) writes.push(await attempt('extras', () => services.notes.prepareNotes({ ...pair, notes: bundle.notes }, ctx)));
      if (bundle.transactions?.length) {
        writes.push(await attempt('extras', () => services.transactions.prepareTransactions({ ...pair, transactions: bundle.transactions }, {}, ctx)));
      }
      if (bundle.statements?.length) writes.push(await attempt('extras', () => services.statements.prepareStatements({ ...pair, statements: bundle.statements }, ctx)));
      if (bundle.payment_instruction) {
        writes.push(await attempt('extras', () => services.paymentInstructions.preparePaymentInstruction({ ...pair, ...bundle.payment_instruction }, ctx)));
      }
      const apply = async (trx: Executor) => {
        if (writes.length > 0) {
          await attempt('extras', async () => {
            const account = await lockImportedAccount(trx, pair.import_supplier, pair.external_account_number);
            for (const write of writes) await write(trx, account);
          });
        }
        if (!ex) await record(trx, null);
      };
      await (ex ? apply(ex) : db.transaction().execute(apply));
    };
    /** The pipeline makes sure an account exists: one imported before (by this item's earlier run or another upload) is a success. */
    const alreadyImportedNumber = (err: unknown): string | null =>
      err instanceof ItemFailed && err.error.code === ALREADY_IMPORTED ? String(err.error.extra.service_account_number) : null;

    switch (stage) {
      case 'validate':
        await attempt('validate', async () => {
          if (bundle.account.import_supplier !== item.supplier_code) {
            throw new AppError(400, 'account_failed_validation', 'Account data failed validation.', [
              { code: 'import_supplier_mismatch', detail: `The batch is for supplier '${item.supplier_code}'.`, attr: 'import_supplier' },
            ]);
          }
          await services.accounts.validate(bundle.account, known.supplier);
        });
        return null;
      case 'stage':
        try {
          await db.transaction().execute(async (trx) => {
            await attempt('stage', () => services.accounts.stage(bundle.account, trx, known.supplier));
            await record(trx, null);
          });
          return null;
        } catch (err) {
          const existing = alreadyImportedNumber(err);
          if (existing) return existing;
          throw err;
        }
      case 'process':
        if (item.dry_run) {
          // Everything after validation in one transaction, rolled back: the item reports what would happen.
          try {
            await db.transaction().execute(async (trx) => {
              let existing: string | null = null;
              try {
                await attempt('stage', () => services.accounts.stage(bundle.account, trx, known.supplier));
              } catch (err) {
                existing = alreadyImportedNumber(err);
                if (!existing) throw err;
              }
              const number = existing ?? (await attempt('process', () => services.accounts.createIn(trx, request, known))).service_account_number;
              await runExtras(trx);
              throw new RollBack(number);
            });
          } catch (err) {
            if (err instanceof RollBack) return null;
            throw err;
          }
          return null;
        }
        if (item.service_account_number) return item.service_account_number;
        try {
          const beforeCommit = (trx: Executor, outcome: { service_account_number: string }) => record(trx, outcome.service_account_number);
          // The permit is checked right before COMMIT: lost during a stall, the account rolls back (503, the job retries).
          return (await attempt('process', () => services.accounts.processStaged(request, { known, beforeCommit, permit }))).service_account_number;
        } catch (err) {
          const existing = alreadyImportedNumber(err);
          if (existing) return existing;
          throw err;
        }
      case 'extras':
        await runExtras();
        return null;
    }
  }

  /** A job that could not claim its item: find out why and leave the item and its batch right. */
  async function settleUnclaimed(data: StageJobData): Promise<StageOutcome> {
    const item = await loadItem(data);
    if (!item || item.round !== data.round) return 'skipped';
    if (item.state === 'succeeded' || item.state === 'failed' || item.state === 'cancelled') {
      // The job that finished this item may have failed to close the batch: close it now if done.
      await finishIfDone(db, data.batchId, deps.clock.now());
      return 'skipped';
    }
    if (item.cancel_requested_at) {
      await setItem(db, data, { state: 'cancelled' });
      await finishIfDone(db, data.batchId, deps.clock.now());
      return 'cancelled';
    }
    const itemQueue = queueForStage(item.stage, item.dry_run);
    // A repeat of a job whose item has moved on (the worker died after advancing it): make sure
    // the item's current job exists, which also repairs a crash between advancing and enqueueing.
    if (itemQueue !== stage) await enqueueStage(deps.queues, itemQueue, [data]);
    return 'skipped';
  }

  return async (job: Job<StageJobData>, token?: string): Promise<StageOutcome> => {
    const started = performance.now();
    const data = job.data;
    const permit = stage === 'process' ? await deps.permits.tryAcquire() : null;
    if (stage === 'process' && !permit) {
      // No permit: wait without spending an attempt (only if the item is this job's to run).
      const marked = await claimable(data).set({ state: 'delayed', updated_at: sql`now()` }).executeTakeFirst();
      if (Number(marked.numUpdatedRows) === 0) return settleUnclaimed(data);
      await job.moveToDelayed(Date.now() + randomInt(PERMIT_RETRY_DELAY_MS.min, PERMIT_RETRY_DELAY_MS.max), token);
      ctx.observe?.(stage, 'delayed', (performance.now() - started) / 1000);
      throw new DelayedError();
    }
    let item: ItemRow | undefined;
    try {
      // Conditional: a cancel that reached the item before this wins, and nothing runs.
      item = await claimItem(data, job.attemptsMade + 1);
      if (!item) return await settleUnclaimed(data);
      const claimed = item;
      const next = claimed.dry_run ? (stage === 'validate' ? 'process' : null) : nextStage(stage);
      // What the record left the item as: 'waiting' sends it on; undefined until recorded.
      let recorded: ItemState | null | undefined;
      const record: RecordProgress = async (ex, number) => {
        const accountNumber = number ?? claimed.service_account_number;
        const values = next
          ? {
              stage: next,
              // A cancel that arrived while this step ran stops the item here instead of sending it on.
              state: sql<ItemState>`CASE WHEN (SELECT cancel_requested_at FROM batches WHERE id = ${data.batchId}) IS NULL THEN 'waiting' ELSE 'cancelled' END`,
              service_account_number: accountNumber,
            }
          : { state: 'succeeded', service_account_number: claimed.dry_run ? null : accountNumber };
        recorded = (await setItem(ex, data, values, claimed.stage))?.state ?? null;
      };
      const number = await runStep(claimed, record, permit);
      // Steps without a transaction of their own (validate, a dry run, an account found already imported) record now.
      if (recorded === undefined) await record(db, number);
      if (recorded === 'waiting' && next) await enqueueStage(deps.queues, next, [data]);
      else await finishIfDone(db, data.batchId, deps.clock.now());
      ctx.observe?.(stage, 'completed', (performance.now() - started) / 1000);
      return next ? 'advanced' : 'succeeded';
    } catch (err) {
      ctx.observe?.(stage, 'failed', (performance.now() - started) / 1000);
      // Guarded by the claim: a failure after this run's step committed (an enqueue, closing the
      // batch) leaves the recorded progress alone, and the job's retry settles the rest.
      if (err instanceof ItemFailed) {
        await fail(data, err.at, err.error.body() as ErrorEnvelope, item?.stage);
        throw new UnrecoverableError(`${err.error.code}: ${err.error.detail}`);
      }
      const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
      if (lastAttempt) {
        await fail(data, item?.stage ?? stage, toAppError(err).body() as ErrorEnvelope, item?.stage);
      } else {
        await setItem(db, data, { state: 'waiting' }, item?.stage).catch(() => undefined);
      }
      throw err;
    } finally {
      await permit?.release();
    }
  };

  async function fail(data: StageJobData, at: ItemStage, error: ErrorEnvelope, claimedAt?: ItemStage): Promise<void> {
    await setItem(db, data, { stage: at, state: 'failed', error: JSON.stringify(error) }, claimedAt);
    await finishIfDone(db, data.batchId, deps.clock.now());
  }
}
