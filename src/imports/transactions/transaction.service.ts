import { sql, type Kysely } from 'kysely';
import { addDaysUtc, utcDate, type Clock } from '../../clock.js';
import { chunkRows } from '../../db/chunked.js';
import type { Database } from '../../db/database.js';
import { AppError, type ErrorItem } from '../../errors.js';
import { findImportedAccountSupplier } from '../shared/account-lookup.js';
import { assertSameAccount, runLocked, runLockedDry, type AccountPair, type ExtrasContext, type ImportedAccount, type LockedWrite } from '../shared/imported-account.js';
import { statementPeriods, type StoredStatementPeriod } from '../shared/statement-periods.js';
import { issuesToItems, parseOrThrow } from '../shared/validation.js';
import { groupBy, type SetInsert, type SetRead } from '../shared/write-set.js';
import { noteRows } from '../notes/note.service.js';
import type { ReferenceData } from '../reference/reference.service.js';
import {
  makeTransactionSchema,
  MAX_TRANSACTIONS_PER_REQUEST,
  transactionsQuerySchema,
  transactionsRequestSchema,
  type TransactionInput,
} from './transaction.schemas.js';

export type TransactionStatus = 'TRANSACTION_ADDED_TO_ACCOUNT' | 'TRANSACTION_ALREADY_EXISTS';

export interface TransactionResult {
  status: TransactionStatus;
  transaction_data: Record<string, unknown>;
}

/**
 * The interface's own 400 shape for transactions: the first failing transaction only, with the
 * stable code and the attr path beside the status and reason (decisions §3).
 */
export class TransactionImportError extends AppError {
  constructor(
    code: string,
    detail: string,
    attr: string,
    readonly transactionData: unknown,
  ) {
    super(400, code, detail, [{ code, detail, attr }]);
  }

  override body(): Record<string, unknown> {
    const first = this.errors[0]!;
    return { status: 'TRANSACTION_IMPORT_ERROR', error_detail: this.detail, transaction_data: this.transactionData, code: this.code, attr: first.attr };
  }
}

export const movedDescription = (original: string): string =>
  `Originally dated ${original}; moved into the current statement period on import`;

/** The first day of the account's open statement period (decisions §3), from the statements it holds. */
export function openPeriodStart(account: Pick<ImportedAccount, 'createdAt' | 'lastStatementClosingDate'>, statements: readonly StoredStatementPeriod[]): string {
  const closings = [account.lastStatementClosingDate, ...statements.map((s) => s.to)].filter((d): d is string => d !== null);
  if (closings.length === 0) return utcDate(account.createdAt);
  return addDaysUtc(closings.sort().at(-1)!, 1);
}

/** Which of each account's given transaction ids it already holds: one statement for the whole set. */
const storedTransactionIds: SetRead<{ accountId: string; ids: readonly string[] }, Set<string>> = {
  async load(trx, keys) {
    const pairs = keys.flatMap((k) => k.ids.map((id) => [k.accountId, id] as const));
    const rows =
      pairs.length === 0
        ? []
        : await trx
            .selectFrom('account_transactions')
            .select(['account_id', 'transaction_id'])
            .where(
              sql<boolean>`(account_id, transaction_id) in (select * from unnest(${pairs.map((p) => p[0])}::bigint[], ${pairs.map((p) => p[1])}::text[]))`,
            )
            .execute();
    const byAccount = groupBy(rows, (r) => r.account_id);
    return keys.map((k) => new Set((byAccount.get(k.accountId) ?? []).map((r) => r.transaction_id)));
  },
};

export interface TransactionServiceDeps {
  db: Kysely<Database>;
  clock: Clock;
  reference: ReferenceData;
}

type Parsed = { ok: true; tx: TransactionInput } | { ok: false; error: TransactionImportError };

export function createTransactionService(deps: TransactionServiceDeps) {
  const transactionSchema = makeTransactionSchema(deps.reference);

  /**
   * Imports a request's transactions all or nothing. Each is checked in input order; the first that
   * fails aborts the request (nothing written) and is the one reported.
   */
  async function importTransactions(input: unknown, query: unknown): Promise<TransactionResult[]> {
    const write = await prepareTransactions(input, query);
    // The published dry_run: every check and write runs, then rolls back; the answer is what would happen.
    if ((input as { dry_run?: unknown }).dry_run === true) return runLockedDry(deps.db, input as AccountPair, write);
    return runLocked(deps.db, input as AccountPair, write); // prepare has checked the pair
  }

  /** The request's checks that need no lock; the rest (they depend on what the account holds) run with the writes, under the lock. */
  async function prepareTransactions(input: unknown, query: unknown, ctx: ExtrasContext = {}): Promise<LockedWrite<TransactionResult[]>> {
    const req = parseOrThrow(transactionsRequestSchema, input, 'invalid_request', 'Invalid request.');
    const opts = parseOrThrow(transactionsQuerySchema, query ?? {}, 'invalid_request', 'Invalid query parameters.');
    await findImportedAccountSupplier(ctx.db ?? deps.db, req.import_supplier, req.external_account_number, ctx.supplier);
    await deps.reference.refresh();
    const parsed = req.transactions.map((raw, i) => parseOne(transactionSchema, raw, i));

    return async (w, account) => {
      assertSameAccount(req.account_number, account);
      const today = utcDate(deps.clock.now());
      const ids = parsed.flatMap((p) => (p.ok ? [p.tx.transaction_id] : []));
      // Looked up in both modes: with check_previously_added=false a stored id is an error rather than
      // skipped, and knowing it here lets the 400 name the first failing transaction in input order.
      // An account's own transactions are never moved, so they need no statement period.
      const [existing, start] = await Promise.all([
        w.read(storedTransactionIds, { accountId: account.id, ids }),
        ctx.fromAccount ? today : w.read(statementPeriods, account.id).then((periods) => openPeriodStart(account, periods)),
      ]);

      const seen = new Set<string>();
      const results: TransactionResult[] = [];
      const toInsert: Array<{ tx: TransactionInput; date: string; original: string | null; index: number }> = [];
      for (const [i, p] of parsed.entries()) {
        if (!p.ok) throw p.error;
        const tx = p.tx;
        const at = (field: string) => `transactions.${i}.${field}`;
        if (seen.has(tx.transaction_id)) {
          throw new TransactionImportError('duplicate_transaction_ids', `transaction_id '${tx.transaction_id}' appears more than once in this request.`, at('transaction_id'), echo(tx));
        }
        seen.add(tx.transaction_id);
        if (tx.transaction_date > today) {
          throw new TransactionImportError('date_in_future', `transaction_date ${tx.transaction_date} is in the future.`, at('transaction_date'), echo(tx));
        }
        if (existing.has(tx.transaction_id)) {
          if (!opts.check_previously_added) {
            throw new TransactionImportError('duplicate_transaction_id', `transaction_id '${tx.transaction_id}' was already added to this account.`, at('transaction_id'), echo(tx));
          }
          results.push({ status: 'TRANSACTION_ALREADY_EXISTS', transaction_data: echo(tx) });
          continue;
        }
        let date = tx.transaction_date;
        let original: string | null = null;
        if (date < start && !ctx.fromAccount) {
          if (!opts.force_add_to_current_statement || start > today) {
            throw new TransactionImportError(
              'transaction_outside_open_statement_period',
              start > today
                ? `The account's open statement period starts ${start}, after today; no transaction can be added to it yet.`
                : `transaction_date ${date} is not within the open statement period (${start} to ${today}).`,
              at('transaction_date'),
              echo(tx),
            );
          }
          original = date;
          date = start;
        }
        toInsert.push({ tx, date, original, index: i });
        results.push({ status: 'TRANSACTION_ADDED_TO_ACCOUNT', transaction_data: echo(tx, date, original) });
      }
      w.insert(
        transactionRows,
        toInsert.map((t) => ({ accountId: account.id, ...t, checkedPreviouslyAdded: opts.check_previously_added })),
      );
      const moved = toInsert.filter((t) => t.original !== null);
      if (moved.length > 0) {
        w.insert(noteRows, [
          {
            account_id: account.id,
            body: `Transactions moved into the current statement period (from ${start}) on import: ${moved.map((m) => `${m.tx.transaction_id} (originally ${m.original})`).join(', ')}.`,
            created_at: deps.clock.now(),
            is_pinned: true,
            origin: 'TRANSACTIONS_MOVED',
          },
        ]);
      }
      return results;
    };
  }

  /**
   * Every transaction's field problems (no account, no lookups), each at `transactions.N…`: what an
   * account's own transactions are checked with at validate time. The caller refreshes the reference lists.
   */
  function checkTransactions(transactions: readonly unknown[]): ErrorItem[] {
    const items: ErrorItem[] = [];
    if (transactions.length > MAX_TRANSACTIONS_PER_REQUEST) {
      items.push({ code: 'too_many_items', detail: `At most ${String(MAX_TRANSACTIONS_PER_REQUEST)} transactions.`, attr: 'transactions' });
    }
    transactions.forEach((raw, i) => {
      const r = transactionSchema.safeParse(raw, { reportInput: true });
      if (!r.success) items.push(...issuesToItems(r.error.issues).map((e) => ({ ...e, attr: e.attr === null ? `transactions.${String(i)}` : `transactions.${String(i)}.${e.attr}` })));
    });
    return items;
  }

  return { importTransactions, prepareTransactions, checkTransactions };
}

export type TransactionService = ReturnType<typeof createTransactionService>;

function parseOne(schema: ReturnType<typeof makeTransactionSchema>, raw: unknown, i: number): Parsed {
  const r = schema.safeParse(raw, { reportInput: true });
  if (r.success) return { ok: true, tx: r.data };
  const first = issuesToItems(r.error.issues)[0]!;
  const attr = first.attr === null ? `transactions.${i}` : `transactions.${i}.${first.attr}`;
  return { ok: false, error: new TransactionImportError(first.code, first.detail, attr, raw) };
}

/** The transaction as stored: the normalised input, with the date it was given on the account. */
function echo(tx: TransactionInput, date?: string, original?: string | null): Record<string, unknown> {
  const data: Record<string, unknown> = { ...tx };
  if (date !== undefined && original) {
    data.transaction_date = date;
    data.original_transaction_date = original;
    data.description = movedDescription(original);
  }
  return data;
}

interface TransactionRow {
  accountId: string;
  tx: TransactionInput;
  date: string;
  original: string | null;
  index: number;
  checkedPreviouslyAdded: boolean;
}

/** Transactions of every account of a set, with their line and tax items: one insert per table (or per chunk). */
const transactionRows: SetInsert<TransactionRow> = {
  async insert(trx, items) {
    const rows = items.map(({ accountId, tx, date, original }) => ({
      account_id: accountId,
      transaction_id: tx.transaction_id,
      type: tx.type,
      reason: tx.reason ?? null,
      amount: tx.amount,
      transaction_date: date,
      original_transaction_date: original,
      description: original ? movedDescription(original) : null,
      reference: tx.reference ?? null,
      payment_type: tx.payment_type ?? null,
      display_note: tx.display_note ?? null,
      note: tx.note ?? null,
      product_code: tx.product_code ?? null,
      billing_document_identifier: tx.billing_document_identifier ?? null,
      to_prepay_meter_serial_number: tx.to_prepay_meter_serial_number ?? null,
      supply_point_identifier: tx.supply_point_identifier ?? null,
    }));
    const inserted: Array<{ id: string; account_id: string; transaction_id: string }> = [];
    for (const chunk of chunkRows(rows)) {
      inserted.push(
        ...(await trx
          .insertInto('account_transactions')
          .values(chunk)
          // The unique key is the last line against a second row (a concurrent request racing this one).
          .onConflict((oc) => oc.columns(['account_id', 'transaction_id']).doNothing())
          .returning(['id', 'account_id', 'transaction_id'])
          .execute()),
      );
    }
    // Matched by (account, transaction id): PostgreSQL does not promise RETURNING in VALUES order.
    const rowKey = (accountId: string, transactionId: string) => `${accountId}\u0000${transactionId}`;
    const rowId = new Map(inserted.map((r) => [rowKey(r.account_id, r.transaction_id), r.id]));
    if (inserted.length !== items.length) {
      const repeat = items.find((t) => !rowId.has(rowKey(t.accountId, t.tx.transaction_id)))!;
      throw new TransactionImportError(
        'duplicate_transaction_id',
        repeat.checkedPreviouslyAdded
          ? `transaction_id '${repeat.tx.transaction_id}' was added concurrently by another request.`
          : `transaction_id '${repeat.tx.transaction_id}' was already added to this account.`,
        `transactions.${repeat.index}.transaction_id`,
        echo(repeat.tx),
      );
    }
    const idOf = (t: TransactionRow) => rowId.get(rowKey(t.accountId, t.tx.transaction_id))!;
    const lineItems = items.flatMap((t) =>
      (t.tx.line_items ?? []).map((li, position) => ({
        transaction_row_id: idOf(t),
        position,
        rate_band: li.rate_band ?? null,
        start_date: li.start_date,
        end_date: li.end_date,
        number_of_units: li.number_of_units,
        net_amount: li.net_amount,
        price_per_unit: li.price_per_unit ?? null,
        units: li.units ?? null,
        external_rate_identifier: li.external_rate_identifier ?? null,
        rate_specification_code: li.rate_specification_code ?? null,
        time_series_specification_code: li.time_series_specification_code ?? null,
        params: li.params === undefined ? null : JSON.stringify(li.params),
      })),
    );
    for (const chunk of chunkRows(lineItems)) await trx.insertInto('transaction_line_items').values(chunk).execute();
    const taxItems = items.flatMap((t) =>
      (t.tx.tax_items ?? []).map((tax, position) => ({
        transaction_row_id: idOf(t),
        position,
        amount: tax.amount,
        tax_type: tax.tax_type,
        value_taxed: tax.value_taxed,
        rate: tax.rate,
        unit_type: tax.unit_type,
        params: tax.params === undefined ? null : JSON.stringify(tax.params),
      })),
    );
    for (const chunk of chunkRows(taxItems)) await trx.insertInto('transaction_tax_items').values(chunk).execute();
  },
};
