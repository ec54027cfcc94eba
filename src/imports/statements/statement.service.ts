import type { Insertable, Kysely } from 'kysely';
import { utcDate, type Clock } from '../../clock.js';
import { chunkRows } from '../../db/chunked.js';
import type { Database, HistoricalStatementsTable } from '../../db/database.js';
import type { DocumentStore } from '../../documents/document-store.js';
import { AppError, item, type ErrorItem } from '../../errors.js';
import { supplierForChecks } from '../shared/account-lookup.js';
import { checkDocument } from '../shared/documents.js';
import { runLocked, type AccountPair, type ExtrasContext, type LockedWrite } from '../shared/imported-account.js';
import { statementPeriods } from '../shared/statement-periods.js';
import { issuesToItems, sortByEntry } from '../shared/validation.js';
import type { SetInsert } from '../shared/write-set.js';
import { makeStatementsRequestSchema, type StatementInput } from './statement.schemas.js';

export type StatementStatus = 'STATEMENT_CREATED' | 'STATEMENT_ALREADY_EXISTS';

export interface StatementsResult {
  import_supplier: string;
  external_account_number: string;
  statements: Array<StatementInput & { status: StatementStatus }>;
}

interface Period {
  from: string;
  to: string;
}
/**
 * Periods overlap when they share more than an end: one statement's bill_period_to_date may be the
 * next one's bill_period_from_date, as the published examples send them (decisions §1).
 */
const overlaps = (a: Period, b: Period) => (a.from < b.to && b.from < a.to) || (a.from === b.from && a.to === b.to);

/** Statements of every account of a set: one insert (or one per chunk under the parameter limit). */
const statementRows: SetInsert<Insertable<HistoricalStatementsTable>> = {
  async insert(trx, rows) {
    for (const chunk of chunkRows(rows)) await trx.insertInto('historical_statements').values(chunk).execute();
  },
};

export interface StatementServiceDeps {
  db: Kysely<Database>;
  clock: Clock;
  documents: DocumentStore;
}

export function createStatementService(deps: StatementServiceDeps) {
  const schema = makeStatementsRequestSchema(() => utcDate(deps.clock.now()));

  /**
   * Imports historical statements all or nothing. A statement_id the account already has is
   * skipped and reported STATEMENT_ALREADY_EXISTS; periods may not overlap; PDFs must be in storage.
   */
  async function importStatements(input: unknown): Promise<StatementsResult> {
    const write = await prepareStatements(input);
    return runLocked(deps.db, input as AccountPair, write); // prepare has checked the pair
  }

  /** Everything that can be checked before the account is locked (fields, storage); the writes come back to run under the lock. */
  async function prepareStatements(input: unknown, ctx: ExtrasContext = {}): Promise<LockedWrite<StatementsResult>> {
    const db = ctx.db ?? deps.db;
    // Field problems and storage problems are reported together: one item per problem.
    const parsed = schema.safeParse(input, { reportInput: true });
    const problems: ErrorItem[] = parsed.success ? [] : issuesToItems(parsed.error.issues);
    const supplier = await supplierForChecks(db, input, problems.length > 0, ctx.supplier);
    const rawStatements = Array.isArray((input as { statements?: unknown } | null)?.statements) ? (input as { statements: unknown[] }).statements : [];
    for (const [i, raw] of rawStatements.entries()) {
      const path = (raw as { statement_path?: unknown } | null)?.statement_path;
      const attr = `statements.${i}.statement_path`;
      if (!supplier || typeof path !== 'string' || problems.some((p) => p.attr === attr)) continue;
      const problem = await checkDocument(deps.documents, supplier.documents_root, path, attr, { pdf: true });
      if (problem) problems.push(problem);
    }
    if (!parsed.success) throw new AppError(400, 'invalid_request', 'Invalid request.', sortByEntry(problems, 'statements'));
    const req = parsed.data;

    return async (w, account) => {
      const existing = await w.read(statementPeriods, account.id);
      const ids = new Set(existing.map((e) => e.statement_id));
      const periods: Array<Period & { id: string }> = existing.map((e) => ({ id: e.statement_id, from: e.from, to: e.to }));
      const out: StatementsResult['statements'] = [];
      const toInsert: StatementInput[] = [];
      for (const [i, s] of req.statements.entries()) {
        if (ids.has(s.statement_id)) {
          out.push({ ...s, status: 'STATEMENT_ALREADY_EXISTS' });
          continue;
        }
        const period = { from: s.bill_period_from_date, to: s.bill_period_to_date };
        const clash = periods.find((p) => overlaps(p, period));
        if (clash) {
          problems.push(
            item(
              'overlapping_statement_periods',
              `The period ${period.from} to ${period.to} overlaps statement '${clash.id}' (${clash.from} to ${clash.to}).`,
              `statements.${i}`,
            ),
          );
        }
        ids.add(s.statement_id);
        periods.push({ id: s.statement_id, ...period });
        toInsert.push(s);
        out.push({ ...s, status: 'STATEMENT_CREATED' });
      }
      if (problems.length > 0) throw new AppError(400, 'invalid_request', 'Invalid request.', sortByEntry(problems, 'statements'));
      w.insert(
        statementRows,
        toInsert.map((s) => ({
          account_id: account.id,
          statement_id: s.statement_id,
          bill_period_from_date: s.bill_period_from_date,
          bill_period_to_date: s.bill_period_to_date,
          issued_date: s.issued_date ?? null,
          number: s.number ?? null,
          gross_amount: s.gross_amount ?? null,
          statement_path: s.statement_path ?? null,
        })),
      );
      return { import_supplier: req.import_supplier, external_account_number: req.external_account_number, statements: out };
    };
  }

  /** The request's field problems alone (no storage, no account). */
  function checkStatements(input: unknown): ErrorItem[] {
    const parsed = schema.safeParse(input, { reportInput: true });
    return parsed.success ? [] : issuesToItems(parsed.error.issues);
  }

  return { importStatements, prepareStatements, checkStatements };
}

export type StatementService = ReturnType<typeof createStatementService>;

