/**
 * The second door (the published interface's v2): one account at a time, scheduled, run by the same
 * per-account pipeline jobs as a cohort (as a batch of one). The route layer (src/http/routes/v2-accounts.ts)
 * parses bodies with account-import.schemas.ts and calls this service.
 */

/** The published `ImportStatusResponse.status` values. */
export const IMPORT_STATUSES = ['PENDING', 'IN_PROGRESS', 'PROCESSED', 'ERRORED', 'CANCELLED', 'DRY_RUN_SUCCEEDED', 'DRY_RUN_ERRORED'] as const;
export type ImportStatus = (typeof IMPORT_STATUSES)[number];

/** Events named in `latest_event.event`: the published three plus the ones our states need. */
export const IMPORT_EVENTS = [
  'EVENT_ACCOUNT_IMPORT_PROCESS_CREATED',
  'EVENT_ACCOUNT_IMPORT_PROCESS_STARTED',
  'EVENT_ACCOUNT_IMPORT_PROCESS_PROCESSED',
  'EVENT_ACCOUNT_IMPORT_PROCESS_ERRORED',
  'EVENT_ACCOUNT_IMPORT_PROCESS_CANCELLED',
  'EVENT_ACCOUNT_IMPORT_PROCESS_DRY_RUN_SUCCEEDED',
  'EVENT_ACCOUNT_IMPORT_PROCESS_DRY_RUN_ERRORED',
] as const;
export type ImportEventName = (typeof IMPORT_EVENTS)[number];

export interface LatestError {
  code: string | null;
  detail: string | null;
  /** Always 'import_process' here. */
  domain: string | null;
}

/** The published `ImportStatusResponse`; datetimes as `YYYY-MM-DDTHH:MM:SS.ffffffZ`-style ISO strings (clock.ts formatDatetime). */
export interface ImportStatusView {
  status: ImportStatus;
  /** Our account number once PROCESSED (the published name is kept); null otherwise. */
  kraken_identifier: string | null;
  created_at: string;
  modified_at: string;
  latest_event: { event: ImportEventName; occurred_at: string; data: LatestError | null };
  latest_error: LatestError | null;
}

/** A parsed, checked `TaskParameters` with its defaults filled in. */
export interface TaskParams {
  is_dry_run: boolean;
  schedule_window_start: Date;
  schedule_window_end: Date;
}

/** A parsed `ScheduleAccountCreation`: `payload` is the raw EnergyAccount, validated by the service with the v1 rules. */
export interface ScheduleRequest {
  payload: unknown;
  task_params: TaskParams;
}

export interface AccountImportService {
  /**
   * Validates the payload (every v1 account rule, 400 `import_process_failed_validation` with the items
   * in `errors`), then schedules validate → stage → process → extras for it, to start inside its window.
   * An already imported pair: 400 `account_import_process_already_imported` with `account_id`.
   * The same request again while the pair's import is open answers the same import (no second one);
   * a different request while one is open: 400 `account_import_process_already_scheduled`.
   */
  schedule(req: ScheduleRequest): Promise<ImportStatusView>;
  /** Validates only (`{ payload }`, task_params optional and checked when given): nothing is stored. 400 `account_failed_validation`. */
  validate(payload: unknown): Promise<void>;
  /** The pair's latest v2 import; 404 `not_found` when there is none (or the key does not reach the supplier). */
  status(importSupplierCode: string, externalIdentifier: string): Promise<ImportStatusView>;
}
