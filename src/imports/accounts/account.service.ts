import { sql, type Kysely } from 'kysely';
import { z } from 'zod';
import { utcDate, type Clock } from '../../clock.js';
import type { Database, Executor, ImportSupplier, OperationsTeam } from '../../db/database.js';
import { AppError, badRequest, item, notFound, type ErrorItem } from '../../errors.js';
import { enqueueWelcomeEmail, type Queues } from '../../queue/queues.js';
import type { InProgressMarkers, Permit, ProcessPermits } from '../../queue/semaphore.js';
import { issuesToItems, parseOrThrow } from '../shared/validation.js';
import { reaches } from '../../auth/supplier-scope.js';
import { findSupplierByCode } from '../suppliers/supplier.repository.js';
import { assertMigrationOngoing, supplierNotFound } from '../suppliers/supplier.rules.js';
import { findTeamByName } from '../teams/team.repository.js';
import { batchedLookup } from '../../db/batched.js';
import {
  findMeterPointClaimants,
  findProcess,
  lockProcess,
  linkAccount,
  listProcesses,
  nextAccountNumber,
  replaceMeterPointClaims,
  upsertStagedPayload,
  type ImportProcessRow,
  type MeterPointClaimant,
  type ListEntry,
  type ListKind,
} from './account.repository.js';
import type { ReferenceData } from '../reference/reference.service.js';
import { insertAccount, readAccountTree } from './account-tree.repository.js';
import type { EmbeddedCounts, EmbeddedExtras } from './embedded-extras.js';
import type { LockedWrite } from '../shared/imported-account.js';
import { accountView, type ImportedAccountView } from './account-view.js';
import { makeAccountDataSchema, meterPointIdentifiers, type AccountData } from './account.schemas.js';

export const processRequestSchema = z
  .strictObject({
    external_account_number: z.string().min(1).max(128),
    import_supplier_code: z.string().min(1),
    operations_team_name: z.string().min(1),
    dry_run: z.boolean().optional(),
  })
  .meta({ id: 'ProcessRequest' });
export type ProcessRequest = z.output<typeof processRequestSchema>;

export interface StageResult {
  first: boolean;
  import_supplier: string;
  external_account_number: string;
}

export interface ProcessOutcome {
  service_account_number: string;
  account_created_at: Date;
  accountId: string;
  /** A welcome e-mail row was written with the account: enqueue it once the transaction commits. */
  welcomeEmail: boolean;
}

/**
 * What the pipeline knows when it calls: the supplier and team it read with its claim on the item,
 * a moment ago. Passing them saves a lookup per step; the supplier's status is still checked.
 */
const EMBEDDED_KEYS = ['notes', 'statements', 'current_statement_transactions', 'historical_statement_transactions', 'ledgers', 'payment_instructions'];

/** Whether a staged account carries any history of its own to import with it. */
function carriesExtras(payload: unknown): boolean {
  const p = payload as Record<string, unknown> | null;
  return p !== null && typeof p === 'object' && EMBEDDED_KEYS.some((k) => Array.isArray(p[k]) && p[k].length > 0);
}

interface PreparedEmbedded {
  /** The staged payload the writes were prepared for, as JSON text. */
  payload: string;
  write: LockedWrite<EmbeddedCounts> | null;
}

export interface KnownContext {
  supplier: ImportSupplier;
  team: OperationsTeam;
}

export interface ProcessOptions {
  known?: KnownContext;
  /** Runs inside the account's transaction before it commits (the pipeline records the item's progress with the account). */
  beforeCommit?: (trx: Executor, outcome: ProcessOutcome) => Promise<void>;
  /**
   * The processing permit the caller holds: checked last, right before COMMIT, so an account whose
   * permit was lost during a stall rolls back (503 processing_permit_lost, retried) instead of
   * committing beside the holder that took the permit over.
   */
  permit?: Pick<Permit, 'assertHeld'> | null;
}

export interface AccountServiceDeps {
  db: Kysely<Database>;
  clock: Clock;
  permits: ProcessPermits;
  inProgress: InProgressMarkers;
  queues: Queues;
  reference: ReferenceData;
  /** Imports the account's own notes, statements, transactions and payment instructions as it is created. */
  embeddedExtras?: EmbeddedExtras;
}

const FAILED_VALIDATION = 'Account data failed validation.';

/** Thrown inside a dry run's transaction so that everything it wrote is rolled back. */
class DryRunRollback extends Error {
  constructor(readonly outcome: ProcessOutcome) {
    super('dry run');
  }
}

export const dryRunRolledBack = (): AppError =>
  new AppError(
    400,
    'dry_run_rolled_back',
    'The account would import successfully; it was rolled back because this was a dry run.',
  );

export const alreadyImported = (supplierCode: string, row: Pick<ImportProcessRow, 'external_account_number' | 'account_number'>) =>
  badRequest(
    'account_import_process_already_imported',
    `Account '${row.external_account_number}' of import supplier '${supplierCode}' has already been imported.`,
    null,
    { external_account_number: row.external_account_number, service_account_number: row.account_number },
  );

const markedToSkip = (ext: string) =>
  badRequest('account_marked_to_skip', `Account '${ext}' is marked to be skipped and cannot be migrated.`);

const processDoesNotExist = (ext: string) =>
  badRequest(
    'import_process_does_not_exist',
    `No account data has been staged for account '${ext}'; stage it first.`,
    'external_account_number',
  );

/**
 * The account lifecycle: validate → stage → process, plus status and lists.
 * Every entry point runs in one transaction; the REST routes and the queue workers both call these.
 */
export function createAccountService(deps: AccountServiceDeps) {
  const schema = makeAccountDataSchema(() => utcDate(deps.clock.now()), deps.reference);

  // The validate endpoint's reads outside any transaction: concurrent requests share each query.
  const suppliersByCode = batchedLookup<string, ImportSupplier>(async (codes) => {
    const rows = await deps.db.selectFrom('import_suppliers').selectAll().where(sql<boolean>`code = any(${[...codes]}::text[])`).execute();
    return new Map(rows.map((r) => [r.code, r]));
  });
  // As findSupplierByCode: a supplier the request's API key does not reach is one that does not exist.
  const supplierByCode = async (code: string): Promise<ImportSupplier | undefined> => (reaches(code) ? suppliersByCode(code) : undefined);
  const claimantOf = batchedLookup<string, MeterPointClaimant>(async (identifiers) => findMeterPointClaimants(deps.db, identifiers));

  /**
   * Validates an account data object against every rule, including the ones that need the
   * database (supplier exists, meter points not claimed by another account). All problems at once.
   */
  async function validate(db: Executor, input: unknown, known?: ImportSupplier): Promise<{ data: AccountData; supplier: ImportSupplier }> {
    await deps.reference.refresh();
    const parsed = schema.safeParse(input, { reportInput: true });
    const items: ErrorItem[] = parsed.success ? [] : issuesToItems(parsed.error.issues);
    const rawSupplier = (input as { import_supplier?: unknown } | null)?.import_supplier;
    let supplier: ImportSupplier | undefined;
    if (typeof rawSupplier === 'string' && rawSupplier !== '') {
      supplier = known?.code === rawSupplier ? known : db === deps.db ? await supplierByCode(rawSupplier) : await findSupplierByCode(db, rawSupplier);
      if (!supplier) items.push(supplierNotFound(rawSupplier, 'import_supplier').errors[0]!);
    }
    // The service's rules make external_account_number present whenever the parse succeeded.
    const data = parsed.success ? (parsed.data as AccountData) : undefined;
    if (data && supplier) {
      items.push(...(await meterPointClaimErrors(db, data, supplier)));
      // Its own notes, statements, transactions and instructions, under the extras endpoints' rules.
      if (deps.embeddedExtras) items.push(...deps.embeddedExtras.check(data, supplier.code));
    }
    if (items.length > 0 || !data || !supplier) {
      throw new AppError(400, 'account_failed_validation', FAILED_VALIDATION, items);
    }
    return { data, supplier };
  }

  async function meterPointClaimErrors(db: Executor, data: AccountData, supplier: ImportSupplier): Promise<ErrorItem[]> {
    const identifiers = meterPointIdentifiers(data);
    // On the pool, shared with the requests in flight; in a transaction, read in it.
    const claimants =
      db === deps.db
        ? new Map(await Promise.all(identifiers.map(async (i) => [i, await claimantOf(i)] as const)))
        : await findMeterPointClaimants(db, identifiers);
    // Claimed by another pair; the pair's own claims (a re-stage) are no conflict.
    const claimed = new Set(
      identifiers.filter((i) => {
        const c = claimants.get(i);
        return c !== undefined && (c.supplierId !== supplier.id || c.externalAccountNumber !== data.external_account_number);
      }),
    );
    return meterPointErrors(data, claimed);
  }

  /** Stages in the caller's transaction when given one (`known`: the supplier the caller just read). */
  async function stage(input: unknown, executor?: Executor, known?: ImportSupplier): Promise<StageResult> {
    return executor ? stageIn(executor, input, known) : deps.db.transaction().execute((trx) => stageIn(trx, input, known));
  }

  async function stageIn(trx: Executor, input: unknown, known?: ImportSupplier): Promise<StageResult> {
    {
      const { data, supplier } = await validate(trx, input, known);
      if (supplier.status !== 'ONGOING') {
        // The pair's own state answers before the supplier's status (already imported, skipped).
        const existing = await findProcess(trx, supplier.id, data.external_account_number);
        if (existing?.account_id) throw alreadyImported(supplier.code, existing);
        if (existing?.marked_to_skip) throw markedToSkip(data.external_account_number);
        assertMigrationOngoing(supplier, 'import_supplier');
      }
      // The upsert refuses an imported or skipped pair; only then is the row read, to say which.
      const row = await upsertStagedPayload(trx, supplier.id, data.external_account_number, data, deps.clock.now());
      if (!row) {
        // A concurrent process or skip won the row between our read and our write: report its state.
        const now = await findProcess(trx, supplier.id, data.external_account_number);
        if (now?.account_id) throw alreadyImported(supplier.code, now);
        throw markedToSkip(data.external_account_number);
      }
      const lost = await replaceMeterPointClaims(trx, row.id, meterPointIdentifiers(data), row.first);
      if (lost.length > 0) {
        throw new AppError(400, 'account_failed_validation', FAILED_VALIDATION, meterPointErrors(data, new Set(lost)));
      }
      return { first: row.first, import_supplier: supplier.code, external_account_number: data.external_account_number };
    }
  }

  /**
   * Creates the account from its staged data. Idempotent in effect: the process row is locked, so
   * a second concurrent call waits and then sees the account the first one created.
   * `dryRun` runs everything and rolls it back. Concurrency permits are the caller's business; the
   * caller's permit, when given, must still be held when the transaction commits.
   */
  async function processStaged(req: ProcessRequest, opts: ProcessOptions = {}): Promise<ProcessOutcome> {
    const end = await deps.inProgress.begin(req.import_supplier_code, req.external_account_number);
    try {
      // The account's own extras are checked against storage and the payment vendor before any lock
      // is taken, as the extras endpoints do; the transaction uses them if the staged data is unchanged.
      const prepared = await prepareEmbedded(req, opts.known?.supplier);
      const outcome = await deps.db.transaction().execute(async (trx) => {
        const created = await createInTransaction(trx, req, opts.known, prepared);
        if (req.dry_run) throw new DryRunRollback(created);
        await opts.beforeCommit?.(trx, created);
        await opts.permit?.assertHeld();
        return created;
      });
      if (outcome.welcomeEmail) await enqueueWelcomeEmail(deps.queues, { accountId: outcome.accountId });
      return outcome;
    } catch (err) {
      if (err instanceof DryRunRollback) throw dryRunRolledBack();
      throw mapUniqueViolation(err);
    } finally {
      await end();
    }
  }

  /** The account's own extras, checked outside any transaction, for the staged data as it is now (null: none, or nothing staged to check). */
  async function prepareEmbedded(req: ProcessRequest, known?: ImportSupplier): Promise<PreparedEmbedded | null> {
    if (!deps.embeddedExtras) return null;
    const supplier = known?.code === req.import_supplier_code ? known : await findSupplierByCode(deps.db, req.import_supplier_code);
    const process = supplier ? await findProcess(deps.db, supplier.id, req.external_account_number) : undefined;
    // Anything the transaction would refuse anyway (nothing staged, imported, skipped) is left to it.
    if (!supplier || !process || process.payload === null || process.account_id || process.marked_to_skip) return null;
    if (!carriesExtras(process.payload)) return { payload: JSON.stringify(process.payload), write: null };
    await deps.reference.refresh();
    const parsed = schema.safeParse(process.payload, { reportInput: true });
    if (!parsed.success) return null;
    const write = await deps.embeddedExtras.prepare(parsed.data as AccountData, supplier, deps.db);
    return { payload: JSON.stringify(process.payload), write };
  }

  async function createInTransaction(trx: Executor, req: ProcessRequest, known?: KnownContext, prepared?: PreparedEmbedded | null): Promise<ProcessOutcome> {
    const supplier = known?.supplier.code === req.import_supplier_code ? known.supplier : await findSupplierByCode(trx, req.import_supplier_code);
    if (!supplier) throw supplierNotFound(req.import_supplier_code, 'import_supplier_code');
    const process = (await lockProcess(trx, supplier.id, req.external_account_number))
      ? await findProcess(trx, supplier.id, req.external_account_number)
      : undefined;
    if (!process || (process.payload === null && !process.marked_to_skip)) throw processDoesNotExist(req.external_account_number);
    if (process.account_id) throw alreadyImported(supplier.code, process);
    if (process.marked_to_skip) throw markedToSkip(req.external_account_number);
    assertMigrationOngoing(supplier, 'import_supplier_code');
    const team = known?.team.name === req.operations_team_name ? known.team : await findTeamByName(trx, req.operations_team_name);
    if (!team) {
      throw badRequest('operations_team_not_found', `Operations team '${req.operations_team_name}' does not exist.`, 'operations_team_name');
    }
    // Staged data was valid when staged; rules that depend on today, the reference lists or other accounts are checked again.
    await deps.reference.refresh();
    const data = parseOrThrow(schema, process.payload, 'account_failed_validation', FAILED_VALIDATION) as AccountData;
    const number = await nextAccountNumber(trx);
    // The account's own extras are checked (documents, the payment vendor) before anything is written.
    // Prepared before the transaction when the staged data has not changed since; otherwise (a re-stage
    // in between, or a caller inside its own transaction such as a dry-run batch) checked here.
    const embedded =
      prepared && prepared.payload === JSON.stringify(process.payload)
        ? prepared.write
        : deps.embeddedExtras
          ? await deps.embeddedExtras.prepare(data, supplier, trx)
          : null;
    const account = await insertAccount(trx, { number, supplierId: supplier.id, teamId: team.id, data, now: deps.clock.now() });
    await linkAccount(trx, process.id, account.id);
    if (embedded) {
      await embedded(trx, { id: account.id, number, createdAt: account.created_at, lastStatementClosingDate: data.last_statement_closing_date ?? null, supplier });
    }
    // The e-mail row commits (or rolls back, as in a dry run) with the account: never one without the other.
    const recipient = data.billing_email ?? data.customers?.find((c) => c.email)?.email ?? undefined;
    const welcomeEmail = supplier.send_customer_emails && recipient !== undefined;
    if (welcomeEmail) await trx.insertInto('customer_emails').values({ account_id: account.id, recipient }).execute();
    return { service_account_number: number, account_created_at: account.created_at, accountId: account.id, welcomeEmail };
  }

  /** The REST door: takes a permit first when the concurrency limit is on (429 when none is free). */
  async function processWithPermit(input: unknown): Promise<ProcessOutcome> {
    const req = parseOrThrow(processRequestSchema, input, 'invalid_request', 'Invalid request.');
    const permit = await deps.permits.tryAcquire();
    if (!permit) {
      throw new AppError(
        429,
        'concurrency_limit_exceeded',
        'Too many accounts are being processed at once; retry after other processing finishes.',
        [],
        {},
        { 'Retry-After': '1' },
      );
    }
    try {
      return await processStaged(req, { permit });
    } finally {
      await permit.release();
    }
  }

  async function status(supplierCode: string, ext: string): Promise<{ status: 'UNKNOWN' | 'COMPLETED' | 'IN_PROGRESS'; service_account_number: string }> {
    const supplier = await findSupplierByCode(deps.db, supplierCode);
    const process = supplier ? await findProcess(deps.db, supplier.id, ext) : undefined;
    if (!process) throw notFound('account_not_found', `No account import found for supplier '${supplierCode}' and account '${ext}'.`);
    if (process.account_number) return { status: 'COMPLETED', service_account_number: process.account_number };
    const running = await deps.inProgress.isInProgress(supplierCode, ext);
    return { status: running ? 'IN_PROGRESS' : 'UNKNOWN', service_account_number: '' };
  }

  /** The created account of a pair, read back whole (404 account_not_found when there is none). */
  async function show(supplierCode: string, ext: string): Promise<ImportedAccountView> {
    const supplier = await findSupplierByCode(deps.db, supplierCode);
    const rows = supplier ? await readAccountTree(deps.db, supplier.id, ext) : undefined;
    if (!supplier || !rows) throw notFound('account_not_found', `No imported account for supplier '${supplierCode}' and account '${ext}'.`);
    return accountView(supplier.code, rows);
  }

  async function list(kind: ListKind, supplierCode: string, after: string | null, pageSize: number): Promise<{ entries: ListEntry[]; more: boolean }> {
    const supplier = await findSupplierByCode(deps.db, supplierCode);
    if (!supplier) throw notFound('import_supplier_not_found', `Import supplier '${supplierCode}' does not exist.`);
    const rows = await listProcesses(deps.db, supplier.id, kind, after, pageSize + 1);
    return { entries: rows.slice(0, pageSize), more: rows.length > pageSize };
  }

  return {
    validate: async (input: unknown, known?: ImportSupplier) => (await validate(deps.db, input, known)).data,
    stage,
    /** Creates the account inside the caller's transaction (dry-run batches roll it back with their extras). */
    createIn: (trx: Executor, req: ProcessRequest, known?: KnownContext) => createInTransaction(trx, req, known).catch((err: unknown) => Promise.reject(mapUniqueViolation(err))),
    processStaged,
    processWithPermit,
    status,
    show,
    list,
  };
}

export type AccountService = ReturnType<typeof createAccountService>;

function meterPointErrors(data: AccountData, claimed: ReadonlySet<string>): ErrorItem[] {
  const items: ErrorItem[] = [];
  (data.supply_addresses ?? []).forEach((s, i) =>
    s.meter_points.forEach((mp, j) => {
      if (claimed.has(mp.identifier)) {
        items.push(
          item(
            'meter_point_already_registered',
            `Meter point ${mp.identifier} is already registered to another account.`,
            `supply_addresses.${i}.meter_points.${j}.identifier`,
          ),
        );
      }
    }),
  );
  return items;
}

/** A unique violation on meter points means another account took one first: a validation error, not a 500. */
function mapUniqueViolation(err: unknown): unknown {
  const e = err as { code?: string; constraint?: string };
  if (e.code === '23505' && e.constraint === 'meter_points_identifier_key') {
    return new AppError(400, 'account_failed_validation', FAILED_VALIDATION, [
      item('meter_point_already_registered', 'A meter point of this account is already registered to another account.', 'supply_addresses'),
    ]);
  }
  return err;
}
