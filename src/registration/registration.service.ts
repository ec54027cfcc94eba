import type { Kysely } from 'kysely';
import { recordAudit } from '../audit/audit-log.js';
import type { Database } from '../db/database.js';
import { findSupplierByCode } from '../imports/suppliers/supplier.repository.js';
import type { RegistrationQueue } from '../ports.js';
import type { GatewayConfig } from './gateway-client.js';
import { reaches } from '../auth/supplier-scope.js';
import { AppError } from '../errors.js';
import { findBatch } from '../imports/batches/batch.repository.js';
import { UUID } from '../imports/batches/batch.service.js';
import { accountsOfBatch, accountsWithFailedRegistration, FAILED_REGISTRATION, markMeterPoints, requestWithdrawals, statusesOfAccount, type MarkResult } from './registration.repository.js';
import type { MeterPointStatus } from './states.js';

/** send-registration-flows' 200 body, as the published document has it (GbrMeterPointRegistrationStatuses). */
export interface RegistrationFlows {
  external_account_number: string;
  import_supplier_code: string;
  meter_points: Array<{ mpxn: string; status: 'REGISTRATION_FLOW_SUCCESS' } | { mpxn: string; status: 'REGISTRATION_FLOW_ERROR'; error_detail: string }>;
}

/** The published 404s: send-registration-flows' GbrRegistrationFlowError, meterpoint-statuses' GbrMeterPointStatusError. */
export class RegistrationNotFound extends Error {
  override readonly name = 'RegistrationNotFound';
  constructor(readonly body: Record<string, string>) {
    super(Object.values(body).at(-1));
  }
}

export interface RegistrationServiceDeps {
  db: Kysely<Database>;
  queue: RegistrationQueue;
  /** The gateway requests go to; undefined: none configured (marking then refuses, changing nothing). */
  gateway: GatewayConfig | undefined;
}

/** Why marking started nothing for a meter point in this status (REGISTRATION_FLOW_ERROR's error_detail). */
function notMarked(status: MeterPointStatus): string {
  if (status === 'ON_SUPPLY') return 'The meter point is on supply: it is registered already.';
  return `A registration attempt is already under way (${status}).`;
}

export function createRegistrationService(deps: RegistrationServiceDeps) {
  /** The imported account of a supplier, or the published 404 built by `notFound`. */
  async function accountOf(supplierCode: string, ext: string, notFound: () => RegistrationNotFound): Promise<{ id: string }> {
    const supplier = await findSupplierByCode(deps.db, supplierCode);
    if (!supplier) throw notFound();
    // Imported: created by process (a staged account is not one yet).
    const account = await deps.db.selectFrom('accounts').select('id').where('import_supplier_id', '=', supplier.id).where('external_account_number', '=', ext).executeTakeFirst();
    if (!account) throw notFound();
    return account;
  }

  /**
   * send-registration-flows (decisions.md §8): marks each meter point of the account that may start
   * a new attempt, and enqueues its request; answers each meter point as marked or not, and why not.
   * With no gateway configured nothing is marked: every meter point answers REGISTRATION_FLOW_ERROR.
   */
  async function sendFlows(supplierCode: string, ext: string): Promise<RegistrationFlows> {
    const flowNotFound = (detail: string) => () => new RegistrationNotFound({ external_account_number: ext, import_supplier_code: supplierCode, error_detail: detail });
    const account = await accountOf(supplierCode, ext, flowNotFound(`Account not found for ${ext}.`));
    const answer = (points: ReadonlyArray<Pick<MarkResult, 'mpxn' | 'request_id' | 'status'>>, refused?: string): RegistrationFlows => ({
      external_account_number: ext,
      import_supplier_code: supplierCode,
      meter_points: points.map((p) =>
        p.request_id !== null && refused === undefined
          ? { mpxn: p.mpxn, status: 'REGISTRATION_FLOW_SUCCESS' as const }
          : { mpxn: p.mpxn, status: 'REGISTRATION_FLOW_ERROR' as const, error_detail: refused ?? notMarked(p.status) },
      ),
    });
    if (!deps.gateway) {
      const points = await statusesOfAccount(deps.db, account.id);
      if (points.length === 0) throw flowNotFound(`No meter points found for ${ext}.`)();
      return answer(points.map((p) => ({ ...p, request_id: null })), 'No registration gateway is configured.');
    }
    // Nothing is marked while Redis is away: the request would wait for a job nobody can enqueue (503).
    await deps.queue.assertReachable();
    const marked = await deps.db.transaction().execute(async (trx) => {
      const rows = await markMeterPoints(trx, [account.id]);
      const started = rows.filter((r) => r.request_id !== null);
      if (started.length > 0) {
        await recordAudit(trx, { action: 'registration.send', targetKind: 'account', target: `${supplierCode}/${ext}`, detail: { meter_points: started.map((r) => r.mpxn) } });
      }
      return rows;
    });
    if (marked.length === 0) throw flowNotFound(`No meter points found for ${ext}.`)();
    // After the commit: a job for a marking that rolled back would find nothing to send. A lost
    // enqueue (Redis away) is found again by the poller's sweep of unanswered attempts.
    await deps.queue.enqueue(marked.filter((r) => r.request_id !== null).map((r) => ({ requestId: r.request_id!, kind: 'request' as const })));
    return answer(marked);
  }

  /** meterpoint-statuses-for-account: the account's meter points and their statuses (a flat list, as the document's schema has it). */
  async function statuses(supplierCode: string, ext: string): Promise<Array<{ mpxn: string; status: MeterPointStatus }>> {
    const notFound = () => new RegistrationNotFound({ error: `No meterpoints found for ${ext}.` });
    const account = await accountOf(supplierCode, ext, notFound);
    const points = await statusesOfAccount(deps.db, account.id);
    if (points.length === 0) throw notFound();
    return points;
  }

  /**
   * Marks the meter points of these accounts, a chunk of accounts per transaction, and enqueues the
   * attempts started. Answers how many meter points were marked and how many were not (an attempt
   * already under way, on supply). Its callers check first that a gateway is configured.
   */
  async function markAccounts(
    accountIds: readonly string[],
    audit?: { action: string; target: string; kind: 'batch' | 'supplier' },
    from?: readonly MeterPointStatus[],
  ): Promise<{ marked: number; not_marked: number }> {
    const out = { marked: 0, not_marked: 0 };
    for (let i = 0; i < accountIds.length; i += MARK_CHUNK) {
      const chunk = accountIds.slice(i, i + MARK_CHUNK);
      const rows = await deps.db.transaction().execute((trx) => markMeterPoints(trx, chunk, from));
      const started = rows.filter((r) => r.request_id !== null);
      out.marked += started.length;
      out.not_marked += rows.length - started.length;
      await deps.queue.enqueue(started.map((r) => ({ requestId: r.request_id!, kind: 'request' as const })));
    }
    if (audit) await recordAudit(deps.db, { action: audit.action, targetKind: audit.kind, target: audit.target, detail: out });
    return out;
  }

  /** Registers the meter points of a batch's succeeded accounts (importctl batch register, POST …/batches/{id}/registration-flows/). */
  async function registerBatch(batchId: string): Promise<{ batch_id: string; accounts: number; meter_points_marked: number; meter_points_not_marked: number }> {
    const batch = UUID.test(batchId) ? await findBatch(deps.db, batchId) : undefined;
    if (!batch || !reaches(batch.supplier_code)) throw new AppError(404, 'batch_not_found', `Batch '${batchId}' does not exist.`);
    if (batch.dry_run) throw new AppError(400, 'batch_is_dry_run', `Batch '${batchId}' is a dry run: it created no account to register.`);
    if (!deps.gateway) throw new AppError(400, 'registration_flow_error', 'No registration gateway is configured.');
    await deps.queue.assertReachable();
    let after = 0;
    const accounts: string[] = [];
    for (;;) {
      const page = await accountsOfBatch(deps.db, batchId, after, 5_000);
      if (page.length === 0) break;
      accounts.push(...page.map((p) => p.account_id));
      after = page.at(-1)!.line;
    }
    const done = await markAccounts(accounts, { action: 'batch.register', kind: 'batch', target: batchId });
    return { batch_id: batchId, accounts: accounts.length, meter_points_marked: done.marked, meter_points_not_marked: done.not_marked };
  }

  /**
   * Withdraws the current attempt of the account's meter points (or of one, by mpxn) where §8 allows
   * it (REGISTRATION_REQUESTED, REGISTRATION_ACCEPTED, OBJECTION_RECEIVED): the withdrawal goes to the
   * gateway through the queue, and the meter point moves to WITHDRAWAL_REQUESTED once it is taken.
   */
  async function withdraw(supplierCode: string, ext: string, mpxn?: string): Promise<WithdrawalFlows> {
    const flowNotFound = (detail: string) => () => new RegistrationNotFound({ external_account_number: ext, import_supplier_code: supplierCode, error_detail: detail });
    const account = await accountOf(supplierCode, ext, flowNotFound(`Account not found for ${ext}.`));
    if (!deps.gateway) throw new AppError(400, 'registration_flow_error', 'No registration gateway is configured.');
    await deps.queue.assertReachable();
    const rows = await deps.db.transaction().execute(async (trx) => {
      const found = await requestWithdrawals(trx, account.id, mpxn);
      const asked = found.filter((r) => r.request_id !== null);
      if (asked.length > 0) await recordAudit(trx, { action: 'registration.withdraw', targetKind: 'account', target: `${supplierCode}/${ext}`, detail: { meter_points: asked.map((r) => r.mpxn) } });
      return found;
    });
    if (rows.length === 0) throw flowNotFound(mpxn === undefined ? `No meter points found for ${ext}.` : `No meter point ${mpxn} on ${ext}.`)();
    await deps.queue.enqueue(rows.filter((r) => r.request_id !== null).map((r) => ({ requestId: r.request_id!, kind: 'withdrawal' as const })));
    return {
      external_account_number: ext,
      import_supplier_code: supplierCode,
      meter_points: rows.map((r) =>
        r.request_id !== null
          ? { mpxn: r.mpxn, status: 'WITHDRAWAL_FLOW_SUCCESS' as const }
          : { mpxn: r.mpxn, status: 'WITHDRAWAL_FLOW_ERROR' as const, error_detail: `Nothing to withdraw: the meter point is ${r.status}.` },
      ),
    };
  }

  /**
   * Re-sends the failed registrations (UNABLE_TO_REGISTER, REGISTRATION_REJECTED,
   * REGISTRATION_OBJECTED) of a batch's accounts or of a supplier's: a new attempt for each of those
   * meter points only (the console's re-send, audited). Answers how many were marked.
   */
  async function resendFailed(scope: { batchId: string } | { supplierCode: string }): Promise<{ marked: number; not_marked: number }> {
    if (!deps.gateway) throw new AppError(400, 'registration_flow_error', 'No registration gateway is configured.');
    await deps.queue.assertReachable();
    if ('batchId' in scope) {
      const accounts = await accountsWithFailedRegistration(deps.db, { batchId: scope.batchId });
      return markAccounts(accounts, { action: 'registration.resend', kind: 'batch', target: scope.batchId }, FAILED_REGISTRATION);
    }
    const supplier = await findSupplierByCode(deps.db, scope.supplierCode);
    if (!supplier) throw new AppError(404, 'import_supplier_not_found', `Import supplier '${scope.supplierCode}' does not exist.`);
    const accounts = await accountsWithFailedRegistration(deps.db, { supplierId: supplier.id });
    return markAccounts(accounts, { action: 'registration.resend', kind: 'supplier', target: supplier.code }, FAILED_REGISTRATION);
  }

  return { sendFlows, statuses, markAccounts, registerBatch, withdraw, resendFailed, gatewayConfigured: () => deps.gateway !== undefined };
}

/** Accounts marked per transaction: their meter points' rows are locked until it commits. */
const MARK_CHUNK = 500;

export interface WithdrawalFlows {
  external_account_number: string;
  import_supplier_code: string;
  meter_points: Array<{ mpxn: string; status: 'WITHDRAWAL_FLOW_SUCCESS' } | { mpxn: string; status: 'WITHDRAWAL_FLOW_ERROR'; error_detail: string }>;
}

export type RegistrationService = ReturnType<typeof createRegistrationService>;
