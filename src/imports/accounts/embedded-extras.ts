import type { Executor, ImportSupplier } from '../../db/database.js';
import { AppError, type ErrorItem } from '../../errors.js';
import type { NoteService } from '../notes/note.service.js';
import type { PaymentInstructionService } from '../payment-instructions/payment-instruction.service.js';
import type { ExtrasContext, ImportedAccount, LockedWrite } from '../shared/imported-account.js';
import type { StatementService } from '../statements/statement.service.js';
import { TransactionImportError, type TransactionService } from '../transactions/transaction.service.js';
import type { AccountData } from './account.schemas.js';

// The account's own history (decisions §1): the notes, statements, transactions and payment
// instructions the published account carries are imported when the account is created, in its
// transaction, through the extras endpoints' own services and rules. A problem with any of them
// fails the whole account (nothing is created), reported at its place in the account payload.

export interface EmbeddedExtrasServices {
  notes: NoteService;
  transactions: TransactionService;
  statements: StatementService;
  paymentInstructions: PaymentInstructionService;
}

export interface EmbeddedCounts {
  notes: number;
  transactions: number;
  statements: number;
  payment_instructions: number;
}

export interface EmbeddedExtras {
  /**
   * The account's own extras' field problems under the extras endpoints' rules, at their places in
   * the account: validate and stage report them, so an account they accept is not refused at process
   * for a field. (Documents and the payment vendor are checked at process.)
   */
  check(data: AccountData, supplierCode: string): ErrorItem[];
  /** Checks the account's own extras (documents, the payment vendor) and returns the writes to run once the account exists; null when it carries none. */
  prepare(data: AccountData, supplier: ImportSupplier, db: Executor): Promise<LockedWrite<EmbeddedCounts> | null>;
}

const FAILED = 'Account data failed validation.';

/** Rewrites an extras request's attrs (`transactions.3.reason`) to their places in the account payload. */
function relocated(err: unknown, relocate: (attr: string) => string): unknown {
  if (!(err instanceof AppError) || err.status >= 500) return err;
  const items: ErrorItem[] = err.errors.map((e) => ({ ...e, attr: e.attr === null ? null : relocate(e.attr) }));
  if (err instanceof TransactionImportError || items.length === 0) {
    const attr = err.errors[0]?.attr ?? null;
    return new AppError(400, 'account_failed_validation', FAILED, [{ code: err.code, detail: err.detail, attr: attr === null ? null : relocate(attr) }]);
  }
  return new AppError(400, 'account_failed_validation', FAILED, items);
}

async function guard<T>(fn: () => Promise<T>, relocate: (attr: string) => string): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw relocated(err, relocate);
  }
}

/** Where an account payload holds transactions: at its top and in each of its ledgers. */
interface TransactionHolder {
  historical_statement_transactions?: readonly unknown[] | null;
  current_statement_transactions?: readonly unknown[] | null;
}

/** Every transaction of the account, wherever it sits, with its place in the account payload. */
export function accountTransactions(data: TransactionHolder & { ledgers?: readonly TransactionHolder[] | null }): { transactions: unknown[]; places: string[] } {
  const places: string[] = [];
  const transactions: unknown[] = [];
  const take = (list: readonly unknown[] | null | undefined, at: string) =>
    (list ?? []).forEach((t, i) => {
      transactions.push(t);
      places.push(`${at}.${String(i)}`);
    });
  take(data.historical_statement_transactions, 'historical_statement_transactions');
  take(data.current_statement_transactions, 'current_statement_transactions');
  (data.ledgers ?? []).forEach((ledger, l) => {
    take(ledger.historical_statement_transactions, `ledgers.${String(l)}.historical_statement_transactions`);
    take(ledger.current_statement_transactions, `ledgers.${String(l)}.current_statement_transactions`);
  });
  return { transactions, places };
}

/** `transactions.3.reason` → its place in the account (`ledgers.0.current_statement_transactions.1.reason`). */
const transactionPlace = (places: readonly string[]) => (attr: string) =>
  attr.replace(/^transactions\.(\d+)/, (_, i: string) => places[Number(i)] ?? 'transactions').replace(/^transactions$/, 'current_statement_transactions');

export function makeEmbeddedExtras(s: EmbeddedExtrasServices): EmbeddedExtras {
  const check: EmbeddedExtras['check'] = (data, supplierCode) => {
    const pair = { import_supplier: supplierCode, external_account_number: data.external_account_number };
    const at = (items: ErrorItem[], relocate: (attr: string) => string) => items.map((e) => ({ ...e, attr: e.attr === null ? null : relocate(e.attr) }));
    const items: ErrorItem[] = [];
    if (data.notes?.length) items.push(...s.notes.checkNotes({ ...pair, notes: data.notes }));
    if (data.statements?.length) items.push(...s.statements.checkStatements({ ...pair, statements: data.statements }));
    const { transactions, places } = accountTransactions(data);
    if (transactions.length > 0) items.push(...at(s.transactions.checkTransactions(transactions), transactionPlace(places)));
    (data.payment_instructions ?? []).forEach((instruction, i) => {
      items.push(...at(s.paymentInstructions.checkPaymentInstruction({ ...pair, ...instruction }), (attr) => `payment_instructions.${String(i)}.${attr}`));
    });
    return items;
  };

  const prepare: EmbeddedExtras['prepare'] = async (data, supplier, db) => {
    const pair = { import_supplier: supplier.code, external_account_number: data.external_account_number };
    const ctx: ExtrasContext = { db, supplier };
    const writes: Array<{ write: LockedWrite<unknown>; relocate: (attr: string) => string }> = [];
    const counts: EmbeddedCounts = { notes: 0, transactions: 0, statements: 0, payment_instructions: 0 };
    const same = (attr: string) => attr;

    if (data.notes?.length) {
      writes.push({ write: await guard(() => s.notes.prepareNotes({ ...pair, notes: data.notes }, ctx), same), relocate: same });
      counts.notes = data.notes.length;
    }
    // Statements before transactions, as the statement history is what the transactions follow.
    if (data.statements?.length) {
      writes.push({ write: await guard(() => s.statements.prepareStatements({ ...pair, statements: data.statements }, ctx), same), relocate: same });
      counts.statements = data.statements.length;
    }

    // Every transaction of the account, wherever it sits, as one request; each keeps its place.
    const { transactions, places } = accountTransactions(data);
    if (transactions.length > 0) {
      const relocate = transactionPlace(places);
      // The account's own statement rules have placed them in their periods already (historical ones
      // before the last closing, current ones after): no move into the open period, no refusal of it.
      const write = await guard(() => s.transactions.prepareTransactions({ ...pair, transactions }, {}, { ...ctx, fromAccount: true }), relocate);
      writes.push({ write, relocate });
      counts.transactions = transactions.length;
    }

    for (const [i, instruction] of (data.payment_instructions ?? []).entries()) {
      const relocate = (attr: string) => `payment_instructions.${String(i)}.${attr}`;
      writes.push({ write: await guard(() => s.paymentInstructions.preparePaymentInstruction({ ...pair, ...instruction }, ctx), relocate), relocate });
      counts.payment_instructions += 1;
    }

    if (writes.length === 0) return null;
    return async (trx, account: ImportedAccount) => {
      for (const { write, relocate } of writes) await guard(() => write(trx, account), relocate);
      return counts;
    };
  };
  return { check, prepare };
}
