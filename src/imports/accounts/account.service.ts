import { sql, type Kysely } from 'kysely';
import { z } from 'zod';
import { utcDate, type Clock } from '../../clock.js';
import type { Database, Executor, ImportSupplier, OperationsTeam } from '../../db/database.js';
import { AppError, badRequest, item, notFound, type ErrorItem } from '../../errors.js';
import type { InProgressMarkers, OnAccountsCreated, Permit, ProcessPermits } from '../../ports.js';
import { issuesToItems, parseOrThrow } from '../shared/validation.js';
import { reaches } from '../../auth/supplier-scope.js';
import { findSupplierByCode } from '../suppliers/supplier.repository.js';
import { assertMigrationOngoing, supplierNotFound, supplierNotOngoing } from '../suppliers/supplier.rules.js';
import { findTeamByName } from '../teams/team.repository.js';
import { batchedLookup } from '../../db/batched.js';
import {
  findMeterPointClaimants,
  findProcess,
  findProcesses,
  keyOfPair,
  linkAccounts,
  listProcesses,
  lockProcesses,
  nextAccountNumbers,
  replaceMeterPointClaimsMany,
  upsertStagedPayloads,
  type ImportProcessRow,
  type MeterPointClaimant,
  type ListEntry,
  type ListKind,
} from './account.repository.js';
import type { ReferenceData } from '../reference/reference.service.js';
import { insertAccounts, readAccountTree } from './account-tree.repository.js';
import type { EmbeddedCounts, EmbeddedExtras } from './embedded-extras.js';
import type { LockedWrite } from '../shared/imported-account.js';
import { runWriteSet } from '../shared/write-set.js';
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
  /** Called once accounts with a welcome e-mail row have committed (the queue sends them). */
  onAccountsCreated: OnAccountsCreated;
  reference: ReferenceData;
  /** Imports the account's own notes, statements, transactions and payment instructions as it is created. */
  embeddedExtras?: EmbeddedExtras;
}

const FAILED_VALIDATION = 'Account data failed validation.';

/** An account data object to check, with the supplier the caller already read (if any). */
export interface ValidateEntry {
  input: unknown;
  known?: ImportSupplier | undefined;
}

/** A valid account data object and its supplier. */
export interface Validated {
  data: AccountData;
  supplier: ImportSupplier;
}

/** A process request of a set, with the supplier and team the caller already read (if any). */
export interface CreateEntry {
  req: ProcessRequest;
  known?: KnownContext;
}

/**
 * A set's transaction lost a race with another transaction on one of its accounts (a meter point
 * claimed since validation): nothing of the set may commit. The caller runs the set's entries one by
 * one, where the account that lost gets its own error and the others go through.
 */
export class SetNeedsSingles extends Error {
  constructor() {
    super('a write of the set lost a race; run its entries one by one');
  }
}

/**
 * Splits a set into rounds in which no pair repeats, keeping order: the first occurrence of each
 * pair in the first round, the second in the next, and so on. Entries without a pair go first.
 */
export function roundsByPair<T>(entries: readonly T[], pairOf: (e: T) => readonly [string, string] | null): number[][] {
  const rounds: number[][] = [];
  const seen = new Map<string, number>();
  entries.forEach((e, i) => {
    const pair = pairOf(e);
    const key = pair === null ? null : JSON.stringify(pair);
    const round = key === null ? 0 : (seen.get(key) ?? 0);
    if (key !== null) seen.set(key, round + 1);
    (rounds[round] ??= []).push(i);
  });
  return rounds;
}

/** The pair an account data object names, when it names one. */
const pairOfInput = (input: unknown): readonly [string, string] | null => {
  const o = input as { import_supplier?: unknown; external_account_number?: unknown } | null;
  return o !== null && typeof o === 'object' && typeof o.import_supplier === 'string' && typeof o.external_account_number === 'string'
    ? [o.import_supplier, o.external_account_number]
    : null;
};

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
   * Validates account data objects against every rule, including the ones that need the database
   * (supplier exists, meter points not claimed by another account). All problems at once, per
   * entry: its data and supplier, or its 400 account_failed_validation. Entries checked together
   * share one lookup of the meter points' claimants.
   */
  async function validateMany(db: Executor, entries: readonly ValidateEntry[]): Promise<Array<Validated | AppError>> {
    await deps.reference.refresh();
    const suppliers = new Map<string, Promise<ImportSupplier | undefined>>();
    const supplierOf = (code: string, known?: ImportSupplier): Promise<ImportSupplier | undefined> => {
      if (known?.code === code) return Promise.resolve(known);
      let found = suppliers.get(code);
      if (!found) suppliers.set(code, (found = db === deps.db ? supplierByCode(code) : findSupplierByCode(db, code)));
      return found;
    };
    const checked = await Promise.all(
      entries.map(async ({ input, known }) => {
        const parsed = schema.safeParse(input, { reportInput: true });
        const items: ErrorItem[] = parsed.success ? [] : issuesToItems(parsed.error.issues);
        const rawSupplier = (input as { import_supplier?: unknown } | null)?.import_supplier;
        let supplier: ImportSupplier | undefined;
        if (typeof rawSupplier === 'string' && rawSupplier !== '') {
          supplier = await supplierOf(rawSupplier, known);
          if (!supplier) items.push(supplierNotFound(rawSupplier, 'import_supplier').errors[0]!);
        }
        // The service's rules make external_account_number present whenever the parse succeeded.
        const data = parsed.success ? (parsed.data as AccountData) : undefined;
        return { items, supplier, data };
      }),
    );
    const identifiers = [...new Set(checked.flatMap((c) => (c.data && c.supplier ? meterPointIdentifiers(c.data) : [])))];
    const claimants = await claimantsOf(db, identifiers);
    return checked.map(({ items, supplier, data }) => {
      if (data && supplier) {
        items.push(...meterPointClaimErrors(claimants, data, supplier));
        // Its own notes, statements, transactions and instructions, under the extras endpoints' rules.
        if (deps.embeddedExtras) items.push(...deps.embeddedExtras.check(data, supplier.code));
      }
      if (items.length > 0 || !data || !supplier) return new AppError(400, 'account_failed_validation', FAILED_VALIDATION, items);
      return { data, supplier };
    });
  }

  async function validate(db: Executor, input: unknown, known?: ImportSupplier): Promise<Validated> {
    const [result] = await validateMany(db, [{ input, known }]);
    if (result instanceof AppError) throw result;
    return result!;
  }

  /** Who claims each identifier: on the pool, shared with the requests in flight; in a transaction, read in it. */
  async function claimantsOf(db: Executor, identifiers: readonly string[]): Promise<Map<string, MeterPointClaimant>> {
    if (db !== deps.db) return findMeterPointClaimants(db, identifiers);
    const found = await Promise.all(identifiers.map(async (i) => [i, await claimantOf(i)] as const));
    return new Map(found.filter((f): f is readonly [string, MeterPointClaimant] => f[1] !== undefined));
  }

  function meterPointClaimErrors(claimants: ReadonlyMap<string, MeterPointClaimant>, data: AccountData, supplier: ImportSupplier): ErrorItem[] {
    // Claimed by another pair; the pair's own claims (a re-stage) are no conflict.
    const claimed = new Set(
      meterPointIdentifiers(data).filter((i) => {
        const c = claimants.get(i);
        return c !== undefined && (c.supplierId !== supplier.id || c.externalAccountNumber !== data.external_account_number);
      }),
    );
    return meterPointErrors(data, claimed);
  }

  /** Stages in the caller's transaction when given one (`known`: the supplier the caller just read). */
  async function stage(input: unknown, executor?: Executor, known?: ImportSupplier): Promise<StageResult> {
    const one = async (trx: Executor) => {
      const [result] = await stageMany(trx, [{ input, known }]);
      if (result instanceof AppError) throw result;
      return result!;
    };
    return executor ? one(executor) : deps.db.transaction().execute(one);
  }

  /**
   * Stages a set of accounts in the caller's transaction: checked together, then written with one
   * statement per table for the whole set. Answers each entry's result or its own error (nothing
   * written for it). A pair that repeats in the set is staged again after its first, in order, as
   * separate requests would be. A meter point claimed by two accounts of the set goes to the first.
   * Throws, so the caller rolls back, only when a write loses a race with another transaction: a
   * set of more than one throws SetNeedsSingles (run its entries one by one), a set of one its error.
   */
  async function stageMany(trx: Executor, entries: readonly ValidateEntry[]): Promise<Array<StageResult | AppError>> {
    const out: Array<StageResult | AppError> = [];
    for (const round of roundsByPair(entries, (e) => pairOfInput(e.input))) {
      const results = await stageRound(trx, round.map((i) => entries[i]!));
      round.forEach((i, k) => (out[i] = results[k]!));
    }
    return out;
  }

  async function stageRound(trx: Executor, entries: readonly ValidateEntry[]): Promise<Array<StageResult | AppError>> {
    const results: Array<StageResult | AppError | Validated> = await validateMany(trx, entries);
    // A meter point claimed by two accounts of the set belongs to the first; the later one fails as it would after it.
    const taken = new Map<string, string>();
    results.forEach((r, i) => {
      if (r instanceof AppError || !('data' in r)) return;
      const pair = keyOfPair({ supplierId: r.supplier.id, externalAccountNumber: r.data.external_account_number });
      const mine = meterPointIdentifiers(r.data);
      const clash = new Set(mine.filter((id) => taken.has(id) && taken.get(id) !== pair));
      if (clash.size > 0) {
        results[i] = new AppError(400, 'account_failed_validation', FAILED_VALIDATION, meterPointErrors(r.data, clash));
        return;
      }
      for (const id of mine) taken.set(id, pair);
    });
    // A supplier not ONGOING: the pair's own state answers first (already imported, skipped).
    for (const [i, r] of results.entries()) {
      if (r instanceof AppError || !('data' in r) || r.supplier.status === 'ONGOING') continue;
      const existing = await findProcess(trx, r.supplier.id, r.data.external_account_number);
      if (existing?.account_id) results[i] = alreadyImported(r.supplier.code, existing);
      else if (existing?.marked_to_skip) results[i] = markedToSkip(r.data.external_account_number);
      else results[i] = supplierNotOngoing(r.supplier);
    }
    const writes = results.flatMap((r, i) => (r instanceof AppError || !('data' in r) ? [] : [{ i, ...r }]));
    // The upsert refuses an imported or skipped pair; only then are the rows read, to say which.
    const rows = await upsertStagedPayloads(
      trx,
      writes.map((w) => ({ supplierId: w.supplier.id, externalAccountNumber: w.data.external_account_number, payload: w.data })),
      deps.clock.now(),
    );
    const pairOf = (w: (typeof writes)[number]) => ({ supplierId: w.supplier.id, externalAccountNumber: w.data.external_account_number });
    const refused = writes.filter((w) => !rows.has(keyOfPair(pairOf(w))));
    if (refused.length > 0) {
      // A concurrent process or skip won the row: report its state.
      const now = await findProcesses(trx, refused.map(pairOf));
      for (const w of refused) {
        const row = now.get(keyOfPair(pairOf(w)));
        results[w.i] = row?.account_id ? alreadyImported(w.supplier.code, row) : markedToSkip(w.data.external_account_number);
      }
    }
    const staged = writes.filter((w) => rows.has(keyOfPair(pairOf(w))));
    const lost = await replaceMeterPointClaimsMany(
      trx,
      staged.map((w) => {
        const row = rows.get(keyOfPair(pairOf(w)))!;
        return { processId: row.id, identifiers: meterPointIdentifiers(w.data), fresh: row.first };
      }),
    );
    if (lost.size > 0) {
      // Another transaction claimed a meter point since validation: this transaction must not commit.
      if (entries.length > 1) throw new SetNeedsSingles();
      const w = staged[0]!;
      throw new AppError(400, 'account_failed_validation', FAILED_VALIDATION, meterPointErrors(w.data, new Set([...lost.values()].flat())));
    }
    for (const w of staged) {
      results[w.i] = { first: rows.get(keyOfPair(pairOf(w)))!.first, import_supplier: w.supplier.code, external_account_number: w.data.external_account_number };
    }
    return results as Array<StageResult | AppError>;
  }

  /**
   * Creates the account from its staged data. Idempotent in effect: the process row is locked, so
   * a second concurrent call waits and then sees the account the first one created.
   * `dryRun` runs everything and rolls it back. Concurrency permits are the caller's business; the
   * caller's permit, when given, must still be held when the transaction commits.
   */
  async function processStaged(req: ProcessRequest, opts: ProcessOptions = {}): Promise<ProcessOutcome> {
    const entry: CreateEntry = opts.known ? { req, known: opts.known } : { req };
    if (!req.dry_run) {
      const [result] = await processMany([entry], {
        ...(opts.beforeCommit ? { beforeCommit: (trx, results) => opts.beforeCommit!(trx, results[0] as ProcessOutcome) } : {}),
        permits: opts.permit ? [opts.permit] : [],
      });
      if (result instanceof AppError) throw result;
      return result!;
    }
    const end = await deps.inProgress.begin(req.import_supplier_code, req.external_account_number);
    try {
      const prepared = await prepareEmbedded([entry]);
      await deps.db.transaction().execute(async (trx) => {
        const [created] = await createMany(trx, [entry], prepared);
        if (created instanceof AppError) throw created;
        throw new DryRunRollback(created!);
      });
      throw new Error('unreachable: a dry run always rolls back');
    } catch (err) {
      if (err instanceof DryRunRollback) throw dryRunRolledBack();
      throw mapUniqueViolation(err);
    } finally {
      await end();
    }
  }

  /**
   * Creates a set of accounts from their staged data in one transaction: their extras checked first
   * with no lock held, then one statement per table for the whole set. Answers each entry's outcome
   * or its own error (nothing written for it). `beforeCommit` runs in the transaction with the
   * results (the pipeline records its items there); every permit must still be held at COMMIT.
   * Throws when the transaction fails: the caller runs a set of more than one again one by one.
   */
  async function processMany(
    entries: readonly CreateEntry[],
    opts: { beforeCommit?: (trx: Executor, results: ReadonlyArray<ProcessOutcome | AppError>) => Promise<void>; permits?: ReadonlyArray<Pick<Permit, 'assertHeld'>> } = {},
  ): Promise<Array<ProcessOutcome | AppError>> {
    const end = await deps.inProgress.beginMany(entries.map((e) => [e.req.import_supplier_code, e.req.external_account_number] as const));
    try {
      // The accounts' own extras are checked against storage and the payment vendor before any lock
      // is taken, as the extras endpoints do; the transaction uses them if the staged data is unchanged.
      const prepared = await prepareEmbedded(entries);
      const results = await deps.db.transaction().execute(async (trx) => {
        const created = await createMany(trx, entries, prepared);
        await opts.beforeCommit?.(trx, created);
        for (const permit of opts.permits ?? []) await permit.assertHeld();
        return created;
      });
      const welcome = results.flatMap((r) => (r instanceof AppError || !r.welcomeEmail ? [] : [r.accountId]));
      if (welcome.length > 0) await deps.onAccountsCreated(welcome);
      return results;
    } catch (err) {
      throw entries.length === 1 ? mapUniqueViolation(err) : err;
    } finally {
      await end();
    }
  }

  /**
   * The accounts' own extras, checked outside any transaction for the staged data as it is now, by
   * keyOfPair (absent: none, or nothing staged to check: the transaction refuses it anyway).
   */
  async function prepareEmbedded(entries: readonly CreateEntry[]): Promise<Map<string, PreparedEmbedded>> {
    const out = new Map<string, PreparedEmbedded>();
    if (!deps.embeddedExtras) return out;
    const withSupplier = await Promise.all(
      entries.map(async (e) => ({ e, supplier: e.known?.supplier.code === e.req.import_supplier_code ? e.known.supplier : await findSupplierByCode(deps.db, e.req.import_supplier_code) })),
    );
    const found = withSupplier.flatMap(({ e, supplier }) => (supplier ? [{ supplier, pair: { supplierId: supplier.id, externalAccountNumber: e.req.external_account_number } }] : []));
    const processes = await findProcesses(deps.db, found.map((f) => f.pair));
    await deps.reference.refresh();
    await Promise.all(
      found.map(async ({ supplier, pair }) => {
        const process = processes.get(keyOfPair(pair));
        if (!process || process.payload === null || process.account_id || process.marked_to_skip) return;
        const payload = JSON.stringify(process.payload);
        if (!carriesExtras(process.payload)) return void out.set(keyOfPair(pair), { payload, write: null });
        const parsed = schema.safeParse(process.payload, { reportInput: true });
        if (!parsed.success) return;
        // A problem with the extras is this account's own: the transaction checks again and reports it.
        const write = await deps.embeddedExtras!.prepare(parsed.data as AccountData, supplier, deps.db).catch((err: unknown) => {
          if (err instanceof AppError && err.status < 500) return undefined;
          throw err;
        });
        if (write !== undefined) out.set(keyOfPair(pair), { payload, write });
      }),
    );
    return out;
  }

  /** The set's accounts, in the caller's transaction: see processMany. */
  async function createMany(trx: Executor, entries: readonly CreateEntry[], prepared: ReadonlyMap<string, PreparedEmbedded>): Promise<Array<ProcessOutcome | AppError>> {
    const out: Array<ProcessOutcome | AppError> = [];
    // A pair twice in one set: the second runs after the first, and finds its account (already imported).
    for (const round of roundsByPair(entries, (e) => [e.req.import_supplier_code, e.req.external_account_number] as const)) {
      const results = await createRound(trx, round.map((i) => entries[i]!), prepared);
      round.forEach((i, k) => (out[i] = results[k]!));
    }
    return out;
  }

  async function createRound(trx: Executor, entries: readonly CreateEntry[], prepared: ReadonlyMap<string, PreparedEmbedded>): Promise<Array<ProcessOutcome | AppError>> {
    const results: Array<ProcessOutcome | AppError | undefined> = entries.map(() => undefined);
    const suppliers = await Promise.all(
      entries.map(async ({ req, known }) => (known?.supplier.code === req.import_supplier_code ? known.supplier : await findSupplierByCode(trx, req.import_supplier_code))),
    );
    const pairs = entries.flatMap((e, i) => (suppliers[i] ? [{ supplierId: suppliers[i].id, externalAccountNumber: e.req.external_account_number }] : []));
    const locked = await lockProcesses(trx, pairs);
    const processes = await findProcesses(trx, pairs.filter((p) => locked.has(keyOfPair(p))));
    // Staged data was valid when staged; rules that depend on today, the reference lists or other accounts are checked again.
    await deps.reference.refresh();
    const ready: Array<{ i: number; supplier: ImportSupplier; team: OperationsTeam; process: ImportProcessRow; data: AccountData; embedded: LockedWrite<EmbeddedCounts> | null }> = [];
    for (const [i, { req, known }] of entries.entries()) {
      try {
        const supplier = suppliers[i];
        if (!supplier) throw supplierNotFound(req.import_supplier_code, 'import_supplier_code');
        const pair = keyOfPair({ supplierId: supplier.id, externalAccountNumber: req.external_account_number });
        const process = processes.get(pair);
        if (!process || (process.payload === null && !process.marked_to_skip)) throw processDoesNotExist(req.external_account_number);
        if (process.account_id) throw alreadyImported(supplier.code, process);
        if (process.marked_to_skip) throw markedToSkip(req.external_account_number);
        assertMigrationOngoing(supplier, 'import_supplier_code');
        const team = known?.team.name === req.operations_team_name ? known.team : await findTeamByName(trx, req.operations_team_name);
        if (!team) {
          throw badRequest('operations_team_not_found', `Operations team '${req.operations_team_name}' does not exist.`, 'operations_team_name');
        }
        const data = parseOrThrow(schema, process.payload, 'account_failed_validation', FAILED_VALIDATION) as AccountData;
        // The account's own extras are checked (documents, the payment vendor) before anything is written.
        // Prepared before the transaction when the staged data has not changed since; otherwise (a re-stage
        // in between, or a caller inside its own transaction such as a dry-run batch) checked here.
        const early = prepared.get(pair);
        const embedded =
          early && early.payload === JSON.stringify(process.payload)
            ? early.write
            : deps.embeddedExtras
              ? await deps.embeddedExtras.prepare(data, supplier, trx)
              : null;
        ready.push({ i, supplier, team, process, data, embedded });
      } catch (err) {
        if (!(err instanceof AppError) || err.status >= 500) throw err;
        results[i] = err;
      }
    }
    const numbers = await nextAccountNumbers(trx, ready.length);
    const now = deps.clock.now();
    const accounts = await insertAccounts(
      trx,
      ready.map((r, k) => ({ number: numbers[k]!, supplierId: r.supplier.id, teamId: r.team.id, data: r.data, now })),
    );
    await linkAccounts(trx, ready.map((r, k) => ({ processId: r.process.id, accountId: accounts[k]!.id })));
    // The accounts' own extras, written for all of them together; an account refused by its own extras
    // fails the round as it always did (all or nothing: the caller then runs its accounts one by one).
    const withExtras = ready.flatMap((r, k) => {
      const account = accounts[k]!;
      const imported = { id: account.id, number: numbers[k]!, createdAt: account.created_at, lastStatementClosingDate: r.data.last_statement_closing_date ?? null, supplier: r.supplier };
      return r.embedded ? [{ account: imported, writes: [r.embedded] }] : [];
    });
    const refused = (await runWriteSet(trx, withExtras)).find((o) => !o.ok);
    if (refused && !refused.ok) throw refused.error;
    const emails: Array<{ account_id: string; recipient: string }> = [];
    for (const [k, r] of ready.entries()) {
      const account = accounts[k]!;
      const number = numbers[k]!;
      // The e-mail row commits (or rolls back, as in a dry run) with the account: never one without the other.
      const recipient = r.data.billing_email ?? r.data.customers?.find((c) => c.email)?.email ?? undefined;
      const welcomeEmail = r.supplier.send_customer_emails && recipient !== undefined;
      if (welcomeEmail) emails.push({ account_id: account.id, recipient });
      results[r.i] = { service_account_number: number, account_created_at: account.created_at, accountId: account.id, welcomeEmail };
    }
    if (emails.length > 0) await trx.insertInto('customer_emails').values(emails).execute();
    return results as Array<ProcessOutcome | AppError>;
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
    /** validate for a set: each entry's data or its error; one lookup of the meter points' claimants for all. */
    validateMany: (entries: readonly ValidateEntry[]) => validateMany(deps.db, entries),
    stage,
    stageMany,
    /** Creates the account inside the caller's transaction (dry-run batches roll it back with their extras). */
    createIn: async (trx: Executor, req: ProcessRequest, known?: KnownContext) => {
      const [result] = await createMany(trx, [known ? { req, known } : { req }], new Map()).catch((err: unknown) => Promise.reject(mapUniqueViolation(err)));
      if (result instanceof AppError) throw result;
      return result!;
    },
    processStaged,
    processMany,
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
