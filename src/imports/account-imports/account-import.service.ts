import { createHash, randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { formatInstant, type Clock } from '../../clock.js';
import type { Database } from '../../db/database.js';
import { AppError, badRequest, type ErrorEnvelope } from '../../errors.js';
import { findItem, insertItems } from '../../pipeline/items.repository.js';
import type { StageQueue } from '../../ports.js';
import { reaches } from '../../auth/supplier-scope.js';
import type { AccountService } from '../accounts/account.service.js';
import { findProcess } from '../accounts/account.repository.js';
import { insertScheduledBatch } from '../batches/batch.repository.js';
import { findSupplierByCode } from '../suppliers/supplier.repository.js';
import { insertScheduledImport, latestScheduledImport, lockPair } from './account-import.repository.js';
import type { AccountImportService, ImportEventName, ImportStatus, ImportStatusView, LatestError, ScheduleRequest } from './account-import.types.js';

export interface AccountImportServiceDeps {
  db: Kysely<Database>;
  clock: Clock;
  stageQueue: StageQueue;
  accounts: Pick<AccountService, 'validate'>;
}

const DOMAIN = 'import_process';

const notFound = (): AppError => new AppError(404, 'not_found', 'The requested resource was not found.');

/** The published 400 of a schedule request whose payload fails validation; our envelope carries the items too. */
const failedValidation = (items: AppError['errors']): AppError =>
  new AppError(400, 'import_process_failed_validation', 'Import process validation failed; the errors list says where.', items, { domain: DOMAIN });

const alreadyImported = (ext: string, accountNumber: string): AppError =>
  badRequest('account_import_process_already_imported', `Account '${ext}' has already been imported as ${accountNumber}.`, null, {
    account_id: accountNumber,
  });

const alreadyScheduled = (ext: string): AppError =>
  badRequest(
    'account_import_process_already_scheduled',
    `An import of account '${ext}' is already scheduled or running, with a different request; wait for it to end, or send the same request.`,
  );

/**
 * The second door: one account at a time, scheduled, run through the same per-account pipeline
 * jobs as a cohort (as a batch of one, whose window the pipeline enforces). The status is read from
 * the batch's single item, so the two doors can never disagree about where an account stands.
 */
export function createAccountImportService(deps: AccountImportServiceDeps): AccountImportService {
  async function schedule(req: ScheduleRequest): Promise<ImportStatusView> {
    let data;
    try {
      data = await deps.accounts.validate(req.payload);
    } catch (err) {
      if (err instanceof AppError && err.code === 'account_failed_validation') throw failedValidation(err.errors);
      throw err;
    }
    const supplier = await findSupplierByCode(deps.db, data.import_supplier);
    if (!supplier) throw failedValidation([{ code: 'import_supplier_not_found', detail: `Import supplier '${data.import_supplier}' does not exist.`, attr: 'import_supplier' }]);
    const ext = data.external_account_number;
    if (!supplier.default_operations_team_id) {
      throw badRequest(
        'operations_team_not_found',
        `Import supplier '${supplier.code}' has no default operations team for scheduled accounts; an operator sets one with 'importctl supplier set-team'.`,
      );
    }
    const teamId = supplier.default_operations_team_id;
    const hash = requestHash(req);
    const scheduled = await deps.db.transaction().execute(async (trx) => {
      await lockPair(trx, supplier.id, ext);
      const process = await findProcess(trx, supplier.id, ext);
      if (process?.account_number) throw alreadyImported(ext, process.account_number);
      const latest = await latestScheduledImport(trx, supplier.id, ext);
      if (latest) {
        const item = await findItem(trx, latest.batch_id, 1);
        if (item && isOpen(item.state)) {
          // The same request again (a client's retry) is the same import; a different one waits its turn.
          if (latest.request_hash === hash) return { batchId: latest.batch_id, created: false };
          throw alreadyScheduled(ext);
        }
      }
      const batchId = randomUUID();
      await insertScheduledBatch(trx, {
        id: batchId,
        supplierId: supplier.id,
        teamId,
        dryRun: req.task_params.is_dry_run,
        windowStart: req.task_params.schedule_window_start,
        windowEnd: req.task_params.schedule_window_end,
      });
      await insertItems(trx, batchId, [
        { line: 1, external_account_number: ext, bundleJson: JSON.stringify({ account: req.payload }), stage: 'validate', state: 'waiting', error: null },
      ]);
      await insertScheduledImport(trx, { supplierId: supplier.id, externalAccountNumber: ext, batchId, requestHash: hash });
      return { batchId, created: true };
    });
    // The job waits in the queue for its window: the pipeline delays it until the start.
    if (scheduled.created) await deps.stageQueue.enqueue('validate', [{ batchId: scheduled.batchId, line: 1, round: 0 }]);
    return viewOf(scheduled.batchId);
  }

  async function validate(payload: unknown): Promise<void> {
    await deps.accounts.validate(payload);
  }

  async function status(importSupplierCode: string, externalIdentifier: string): Promise<ImportStatusView> {
    // A supplier the request's API key does not reach is one that does not exist.
    const supplier = reaches(importSupplierCode) ? await findSupplierByCode(deps.db, importSupplierCode) : undefined;
    const latest = supplier ? await latestScheduledImport(deps.db, supplier.id, externalIdentifier) : undefined;
    if (!latest) throw notFound();
    return viewOf(latest.batch_id);
  }

  async function viewOf(batchId: string): Promise<ImportStatusView> {
    const item = await findItem(deps.db, batchId, 1);
    if (!item) throw notFound();
    const envelope = item.error as ErrorEnvelope | null;
    const status = statusOf(item);
    const error: LatestError | null = envelope && (status === 'ERRORED' || status === 'DRY_RUN_ERRORED') ? { code: envelope.code, detail: envelope.detail, domain: DOMAIN } : null;
    const created = formatInstant(item.batch_created_at);
    const modified = formatInstant(item.updated_at);
    return {
      status,
      kraken_identifier: status === 'PROCESSED' ? item.service_account_number : null,
      created_at: created,
      modified_at: modified,
      latest_event: { event: EVENT_OF[status], occurred_at: status === 'PENDING' ? created : modified, data: error },
      latest_error: error,
    };
  }

  return { schedule, validate, status };
}

const isOpen = (state: string): boolean => state === 'waiting' || state === 'active' || state === 'delayed';

function statusOf(item: { stage: string; state: string; dry_run: boolean; attempts: number; round: number }): ImportStatus {
  switch (item.state) {
    case 'succeeded':
      return item.dry_run ? 'DRY_RUN_SUCCEEDED' : 'PROCESSED';
    case 'failed':
      return item.dry_run ? 'DRY_RUN_ERRORED' : 'ERRORED';
    case 'cancelled':
      return 'CANCELLED';
    default:
      // Not started: waiting for its first run, or for its window to open.
      return item.stage === 'validate' && item.state !== 'active' && item.round === 0 ? 'PENDING' : 'IN_PROGRESS';
  }
}

const EVENT_OF: Record<ImportStatus, ImportEventName> = {
  PENDING: 'EVENT_ACCOUNT_IMPORT_PROCESS_CREATED',
  IN_PROGRESS: 'EVENT_ACCOUNT_IMPORT_PROCESS_STARTED',
  PROCESSED: 'EVENT_ACCOUNT_IMPORT_PROCESS_PROCESSED',
  ERRORED: 'EVENT_ACCOUNT_IMPORT_PROCESS_ERRORED',
  CANCELLED: 'EVENT_ACCOUNT_IMPORT_PROCESS_CANCELLED',
  DRY_RUN_SUCCEEDED: 'EVENT_ACCOUNT_IMPORT_PROCESS_DRY_RUN_SUCCEEDED',
  DRY_RUN_ERRORED: 'EVENT_ACCOUNT_IMPORT_PROCESS_DRY_RUN_ERRORED',
};

/** What makes two scheduling requests the same: the payload and whether it is a dry run (the window defaults to now, so it is left out). */
function requestHash(req: ScheduleRequest): string {
  return createHash('sha256').update(JSON.stringify([req.payload, req.task_params.is_dry_run])).digest('hex');
}
