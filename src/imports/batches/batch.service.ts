import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { sql, type Kysely } from 'kysely';
import { formatDatetime, type Clock } from '../../clock.js';
import type { BatchState, Database, ItemStage, ItemState } from '../../db/database.js';
import { AppError, badRequest, notFound, type ErrorEnvelope } from '../../errors.js';
import { parseJsonExact, printable, UnstorableString } from '../../json.js';
import { cancelPending, countItems, finishIfDone, insertItems, listItems, openItems, requeueFailed, type ItemRow, type NewItem } from '../../pipeline/items.repository.js';
import { STAGES, queueForStage, type Stage } from '../../pipeline/routing.js';
import type { StageQueue } from '../../ports.js';
import { recordAudit } from '../../audit/audit-log.js';
import { reaches } from '../../auth/supplier-scope.js';
import { findSupplierByCode } from '../suppliers/supplier.repository.js';
import { supplierNotFound } from '../suppliers/supplier.rules.js';
import { findTeamByName } from '../teams/team.repository.js';
import { issuesToItems } from '../shared/validation.js';
import { findBatch, type BatchRow } from './batch.repository.js';
import { bundleSchema, type ItemStateFilter } from './batch.schemas.js';
import { readLines, TooManyBytes } from './line-reader.js';
import { reconcileBatch, type Difference, type ReconciliationReport } from './reconciliation.js';

const INSERT_CHUNK = 250;
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ENQUEUE_PAGE = 1000;

export interface UploadParams {
  import_supplier: string;
  operations_team_name: string;
  dry_run: boolean;
  /** Register the meter points of the accounts it creates (upload's register=true). */
  register?: boolean | undefined;
  idempotencyKey?: string | undefined;
  /** The API key uploading (its Idempotency-Keys are its own); undefined for importctl. */
  apiKeyId?: string | undefined;
  /** The body's declared length (Content-Length), when it has one: over BATCH_MAX_BYTES is refused unread. */
  declaredBytes?: number | undefined;
}

export interface StageCounts {
  waiting: number;
  active: number;
  delayed: number;
  completed: number;
  failed: number;
}

export interface BatchSummary {
  batch_id: string;
  import_supplier: string;
  operations_team_name: string;
  dry_run: boolean;
  state: BatchState;
  total_items: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  created_at: string;
  finished_at: string | null;
}

export interface BatchStatus extends BatchSummary {
  stages: Record<Stage, StageCounts>;
}

/** An item as the batch endpoints show it. */
export type ItemView = Omit<ItemRow, 'updated_at'>;

export interface BatchServiceDeps {
  db: Kysely<Database>;
  clock: Clock;
  stageQueue: StageQueue;
  config: { batchMaxLineBytes: number; batchMaxLines: number; batchMaxBytes: number };
}

const envelope = (code: string, detail: string, errors: ErrorEnvelope['errors'] = []): ErrorEnvelope => ({ detail, code, errors });

const tooManyBytes = (max: number): AppError => new AppError(413, 'payload_too_large', `A cohort upload may have at most ${max} bytes.`);

export function createBatchService(deps: BatchServiceDeps) {
  /**
   * Streams an NDJSON cohort into batch items, then starts the pipeline. A line that is not JSON or
   * not a bundle becomes a failed item (stage parse); it never aborts the batch. The upload is whole
   * or nothing: if the stream breaks, the half-written batch is removed and nothing is enqueued.
   * A stream that fails (its client went away, it was cut for slowness) stops the inserts at once:
   * at most the one insert under way when it failed completes before the batch is removed.
   */
  async function upload(stream: Readable, params: UploadParams): Promise<{ batch_id: string; total_items: number; existing: boolean }> {
    if (params.declaredBytes !== undefined && params.declaredBytes > deps.config.batchMaxBytes) throw tooManyBytes(deps.config.batchMaxBytes);
    const supplier = await findSupplierByCode(deps.db, params.import_supplier);
    if (!supplier) throw supplierNotFound(params.import_supplier, 'import_supplier');
    const team = await findTeamByName(deps.db, params.operations_team_name);
    if (!team) throw badRequest('operations_team_not_found', `Operations team '${params.operations_team_name}' does not exist.`, 'operations_team_name');
    // Nothing is stored while Redis is away: the batch would wait for jobs nobody can enqueue (503).
    await deps.stageQueue.assertReachable();

    // The client left, or was cut, while the above ran: no batch for nobody.
    if (stream.errored) throw stream.errored;
    const id = randomUUID();
    if (params.idempotencyKey !== undefined) {
      const claimed = await deps.db
        .insertInto('batches')
        .values({ id, import_supplier_id: supplier.id, operations_team_id: team.id, dry_run: params.dry_run, register: params.register === true, idempotency_key: params.idempotencyKey, api_key_id: params.apiKeyId ?? null })
        // The only other unique key is the random id: a conflict is this key's batch (batches_idempotency).
        .onConflict((oc) => oc.doNothing())
        .returning('id')
        .executeTakeFirst();
      if (!claimed) {
        stream.resume(); // discard the body: the batch for this key exists already
        const existing = await deps.db
          .selectFrom('batches')
          .select(['id', 'total_items'])
          .where('import_supplier_id', '=', supplier.id)
          .where('idempotency_key', '=', params.idempotencyKey)
          .where(sql<boolean>`api_key_id IS NOT DISTINCT FROM ${params.apiKeyId ?? null}::bigint`)
          .executeTakeFirstOrThrow();
        return { batch_id: existing.id, total_items: existing.total_items, existing: true };
      }
    } else {
      await deps.db
        .insertInto('batches')
        .values({ id, import_supplier_id: supplier.id, operations_team_id: team.id, dry_run: params.dry_run, register: params.register === true, api_key_id: params.apiKeyId ?? null })
        .execute();
    }

    let total = 0;
    try {
      let chunk: NewItem[] = [];
      for await (const line of readLines(stream, deps.config.batchMaxLineBytes, deps.config.batchMaxBytes)) {
        if (++total > deps.config.batchMaxLines) {
          throw new AppError(413, 'payload_too_large', `A cohort upload may have at most ${deps.config.batchMaxLines} lines.`);
        }
        chunk.push(itemFromLine(line.number, line.text, deps.config.batchMaxLineBytes));
        if (chunk.length >= INSERT_CHUNK) {
          // Lines already read may follow a failure of the stream: not one more insert after it.
          if (stream.errored) throw stream.errored;
          await insertItems(deps.db, id, chunk);
          chunk = [];
        }
      }
      await insertItems(deps.db, id, chunk);
    } catch (err) {
      await deps.db.deleteFrom('batches').where('id', '=', id).execute();
      throw err instanceof TooManyBytes ? tooManyBytes(err.maxTotalBytes) : err;
    }
    await deps.db.transaction().execute(async (trx) => {
      await trx.updateTable('batches').set({ state: 'RUNNING', total_items: total }).where('id', '=', id).execute();
      await recordAudit(trx, {
        action: 'batch.upload',
        targetKind: 'batch',
        target: id,
        detail: { import_supplier: params.import_supplier, operations_team_name: params.operations_team_name, dry_run: params.dry_run, register: params.register === true, total_items: total },
      });
    });
    await enqueueOpen(id, params.dry_run);
    await finishIfDone(deps.db, id, deps.clock.now());
    return { batch_id: id, total_items: total, existing: false };
  }

  /**
   * (Re-)enqueues every open item's job at its stage and round. Job ids are deterministic, so an
   * item that still has its job is untouched: this is both the start of a batch and its repair
   * after Redis lost its jobs. Answers how many items are open and how many jobs were really created
   * (counted only with `countCreated`, which looks each job up first: the repair's report).
   */
  async function enqueueOpen(batchId: string, dryRun: boolean, countCreated = false): Promise<{ open: number; created: number }> {
    let after = 0;
    let open = 0;
    let created = 0;
    for (;;) {
      const page = await openItems(deps.db, batchId, after, ENQUEUE_PAGE);
      if (page.length === 0) return { open, created };
      for (const stage of STAGES) {
        const jobs = page.filter((i) => queueForStage(i.stage, dryRun) === stage).map((i) => ({ batchId, line: i.line, round: i.round }));
        if (countCreated) created += await deps.stageQueue.enqueueMissing(stage, jobs);
        else await deps.stageQueue.enqueue(stage, jobs);
      }
      open += page.length;
      after = page.at(-1)!.line;
    }
  }

  async function mustFind(batchId: string): Promise<BatchRow> {
    const batch = UUID.test(batchId) ? await findBatch(deps.db, batchId) : undefined;
    // A batch of a supplier the request's API key does not reach is one that does not exist.
    if (!batch || !reaches(batch.supplier_code)) throw notFound('batch_not_found', `Batch '${batchId}' does not exist.`);
    return batch;
  }

  async function status(batchId: string): Promise<BatchStatus> {
    const batch = await mustFind(batchId);
    const counts = await countItems(deps.db, batchId);
    const stages = Object.fromEntries(STAGES.map((s) => [s, { waiting: 0, active: 0, delayed: 0, completed: 0, failed: 0 }])) as Record<Stage, StageCounts>;
    const order: readonly ItemStage[] = ['parse', ...STAGES];
    for (const { stage, state, n } of counts) {
      const at = order.indexOf(stage);
      for (const s of STAGES) {
        const here = order.indexOf(s);
        if (here < at || (here === at && state === 'succeeded')) stages[s].completed += n;
        else if (here === at && (state === 'waiting' || state === 'active' || state === 'delayed' || state === 'failed')) stages[s][state] += n;
      }
    }
    return { ...summarise(batch, counts), stages };
  }

  async function items(
    batchId: string,
    filter: ItemStateFilter | undefined,
    afterLine: number,
    pageSize: number,
  ): Promise<{ items: ItemView[]; more: boolean }> {
    await mustFind(batchId);
    const states: Record<ItemStateFilter, ItemState[]> = { failed: ['failed'], succeeded: ['succeeded'], pending: ['waiting', 'active', 'delayed'] };
    const rows = await listItems(deps.db, batchId, filter === undefined ? undefined : states[filter], afterLine, pageSize + 1);
    return { items: rows.slice(0, pageSize).map(({ updated_at: _, ...view }) => view), more: rows.length > pageSize };
  }

  /** Re-enqueues failed items (optionally only some accounts, or one error code) from the stage where they failed; parse failures cannot be retried. */
  async function retry(batchId: string, externalAccountNumbers?: readonly string[], code?: string): Promise<{ requeued: number }> {
    const batch = await mustFind(batchId);
    if (batch.state === 'UPLOADING') throw badRequest('batch_not_ready', 'The batch is still uploading.');
    const requeued = await deps.db.transaction().execute(async (trx) => {
      const n = await requeueFailed(trx, batchId, externalAccountNumbers, code);
      if (n > 0) {
        await trx.updateTable('batches').set({ state: 'RUNNING', finished_at: null, cancel_requested_at: null }).where('id', '=', batchId).execute();
      }
      await recordAudit(trx, { action: 'batch.retry', targetKind: 'batch', target: batchId, detail: { requeued: n, ...(externalAccountNumbers ? { external_account_numbers: externalAccountNumbers.length } : {}), ...(code !== undefined ? { code } : {}) } });
      return n;
    });
    if (requeued > 0) await enqueueOpen(batchId, batch.dry_run);
    return { requeued };
  }

  /** Stops a batch: items not yet started are cancelled; active ones finish their step; successes stay. */
  async function cancel(batchId: string): Promise<BatchStatus> {
    const batch = await mustFind(batchId);
    if (batch.state === 'RUNNING') {
      await deps.db.transaction().execute(async (trx) => {
        await trx.updateTable('batches').set({ cancel_requested_at: deps.clock.now() }).where('id', '=', batchId).execute();
        await cancelPending(trx, batchId);
        await recordAudit(trx, { action: 'batch.cancel', targetKind: 'batch', target: batchId });
      });
      await finishIfDone(deps.db, batchId, deps.clock.now());
    }
    return status(batchId);
  }

  async function list(supplierCode: string, before: { created_at: Date; id: string } | null, pageSize: number): Promise<{ batches: BatchSummary[]; more: boolean }> {
    const supplier = await findSupplierByCode(deps.db, supplierCode);
    if (!supplier) throw notFound('import_supplier_not_found', `Import supplier '${supplierCode}' does not exist.`);
    const rows = await deps.db
      .selectFrom('batches as b')
      .innerJoin('import_suppliers as s', 's.id', 'b.import_supplier_id')
      .innerJoin('operations_teams as t', 't.id', 'b.operations_team_id')
      .select(['b.id', 's.code as supplier_code', 't.name as team_name', 'b.dry_run', 'b.state', 'b.total_items', 'b.cancel_requested_at', 'b.created_at', 'b.finished_at'])
      .where('b.import_supplier_id', '=', supplier.id)
      .$if(before !== null, (q) => q.where((eb) => eb.or([eb('b.created_at', '<', before!.created_at), eb.and([eb('b.created_at', '=', before!.created_at), eb('b.id', '<', before!.id)])])))
      .orderBy('b.created_at', 'desc')
      .orderBy('b.id', 'desc')
      .limit(pageSize + 1)
      .execute();
    const page = rows.slice(0, pageSize);
    const batches = await Promise.all(page.map(async (b) => summarise(b, await countItems(deps.db, b.id))));
    return { batches, more: rows.length > pageSize };
  }

  /**
   * Repairs every running batch after a Redis loss: re-creates the job of each open item that has
   * none. Answers the running batches, their open items, and the jobs it really re-created (an open
   * item whose job is still in Redis is left alone and not counted).
   */
  async function reconcile(batchId?: string): Promise<{ batches: number; openItems: number; jobsRecreated: number }> {
    const running = await deps.db
      .selectFrom('batches')
      .select(['id', 'dry_run'])
      .where('state', '=', 'RUNNING')
      .$if(batchId !== undefined, (q) => q.where('id', '=', batchId!))
      .execute();
    let openItems = 0;
    let jobsRecreated = 0;
    for (const b of running) {
      const { open, created } = await enqueueOpen(b.id, b.dry_run, true);
      openItems += open;
      jobsRecreated += created;
      // importctl batch reconcile is an operator's action; a worker's own reconcile at start-up has no actor and records nothing.
      await recordAudit(deps.db, { action: 'batch.reconcile', targetKind: 'batch', target: b.id, detail: { open_items: open, jobs_recreated: created } });
      await finishIfDone(deps.db, b.id, deps.clock.now());
    }
    return { batches: running.length, openItems, jobsRecreated };
  }

  /**
   * The batch's reconciliation: what its file carried for its succeeded items against what the
   * database holds (reconciliation.ts). A dry-run batch wrote nothing, so there is nothing to reconcile.
   */
  async function reconciliation(batchId: string, opts: { limit?: number; onDifference?: (d: Difference) => void | Promise<void> } = {}): Promise<ReconciliationReport> {
    const batch = await mustFind(batchId);
    if (batch.dry_run) throw badRequest('batch_is_dry_run', `Batch '${batchId}' is a dry run: it wrote nothing to reconcile.`);
    return reconcileBatch(deps.db, batch, opts);
  }

  return { upload, status, items, retry, cancel, list, reconcile, reconciliation, mustFind };
}

export type BatchService = ReturnType<typeof createBatchService>;

function itemFromLine(line: number, text: string | null, maxBytes: number): NewItem {
  const failed = (error: ErrorEnvelope, ext: string | null = null): NewItem => ({ line, external_account_number: ext, bundleJson: null, stage: 'parse', state: 'failed', error });
  if (text === null) return failed(envelope('line_too_long', `Line ${line} is longer than ${maxBytes} bytes.`));
  let json: unknown;
  try {
    json = parseJsonExact(text);
  } catch (err) {
    return err instanceof UnstorableString
      ? failed(envelope('invalid_characters', `Line ${line} has a string that cannot be stored: ${err.message}.`))
      : // The parser's message may quote a NUL or half a surrogate pair, which PostgreSQL would refuse to store.
        failed(envelope('invalid_json', `Line ${line} is not valid JSON: ${printable((err as Error).message)}`));
  }
  const parsed = bundleSchema.safeParse(json, { reportInput: true });
  const ext = (json as { account?: { external_account_number?: unknown } } | null)?.account?.external_account_number;
  const extText = typeof ext === 'string' ? ext : null;
  if (!parsed.success) {
    return failed(envelope('invalid_request', `Line ${line} is not an account bundle.`, issuesToItems(parsed.error.issues)), extText);
  }
  // Kept as text from here on: the parsed objects die young instead of waiting, and being promoted
  // to the old generation, while the chunk fills and is inserted (most of an upload's RSS growth).
  return { line, external_account_number: extText, bundleJson: JSON.stringify(parsed.data), stage: 'validate', state: 'waiting', error: null };
}

function summarise(batch: BatchRow, counts: Array<{ state: ItemState; n: number }>): BatchSummary {
  const sum = (state: ItemState) => counts.filter((c) => c.state === state).reduce((a, c) => a + c.n, 0);
  return {
    batch_id: batch.id,
    import_supplier: batch.supplier_code,
    operations_team_name: batch.team_name,
    dry_run: batch.dry_run,
    state: batch.state,
    total_items: batch.total_items,
    succeeded: sum('succeeded'),
    failed: sum('failed'),
    cancelled: sum('cancelled'),
    created_at: formatDatetime(batch.created_at),
    finished_at: batch.finished_at ? formatDatetime(batch.finished_at) : null,
  };
}
