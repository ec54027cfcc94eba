import { Decimal } from 'decimal.js';
import { sql } from 'kysely';
import type { Executor } from '../../db/database.js';
import { listSucceededBundles } from '../../pipeline/items.repository.js';
import { accountTransactions } from '../accounts/embedded-extras.js';
import { groupBy } from '../shared/write-set.js';
import type { BatchRow } from './batch.repository.js';

/**
 * A batch's reconciliation (issue 13, docs/operators.md): what its file carried for the items that
 * succeeded, against what the database holds for their accounts, matched by identity (a note by its
 * external id or its text, a transaction by its id, a statement by its id, a payment instruction by
 * vendor and reference), with counts and exact decimal sums, and every difference listed by account.
 * Both the bundle's own extras and the extras inside its account payload count (decisions §1).
 * Amounts are decimal.js sums of decimal strings: never a float.
 */

export type ReconciledKind = 'account' | 'note' | 'transaction' | 'statement' | 'payment_instruction';

export interface Difference {
  line: number;
  external_account_number: string | null;
  service_account_number: string | null;
  kind: ReconciledKind;
  /** The thing's identity in the file: a transaction id, a statement id, `vendor/reference`, a note's external id or text. */
  identifier: string;
  problem: 'missing' | 'type_differs' | 'amount_differs' | 'gross_amount_differs';
  file: string | null;
  database: string | null;
}

interface CountSum {
  count: number;
  amount: string;
}

export interface ReconciliationTotals {
  items_succeeded: number;
  accounts: { file: number; database: number };
  notes: { file: number; database: number };
  statements: { file: number; database: number; gross_amount: { file: string; database: string } };
  payment_instructions: { file: number; database: number };
  /** One entry per transaction type the file carried, by type. */
  transactions: Array<{ type: string; file: CountSum; database: CountSum }>;
}

export interface ReconciliationReport {
  batch_id: string;
  import_supplier: string;
  state: string;
  /** True when there is no difference: everything the file carried for its succeeded items is held as it was sent. */
  balanced: boolean;
  totals: ReconciliationTotals;
  /** The differences, by line; at most `limit` of them (`differences_total` says how many there are). */
  differences: Difference[];
  differences_total: number;
}

/** What the file carried for one account, normalised for matching. */
interface Carried {
  notes: Array<{ identifier: string; externalId: string | null; body: string | null; paths: string[]; createdAt: number | null }>;
  transactions: Array<{ id: string; type: string; amount: Decimal }>;
  statements: Array<{ id: string; gross: Decimal | null }>;
  instructions: Array<{ vendor: string; reference: string }>;
}

const PAGE = 500;

const record = (v: unknown): Record<string, unknown> => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const text = (v: unknown): string | null => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : null);
/** A decimal as the file gave it: a JSON number is its literal (the upload's exact parser keeps only those a double holds), or a string. */
const decimal = (v: unknown): Decimal | null => {
  const t = text(v);
  if (t === null) return null;
  try {
    return new Decimal(t.trim());
  } catch {
    return null;
  }
};

/** Everything an item's bundle carried, from the bundle and from inside its account. */
export function carriedBy(bundle: unknown): Carried {
  const b = record(bundle);
  const account = record(b.account);
  const notes = [...list(b.notes), ...list(account.notes)].map((raw) => {
    const n = record(raw);
    const paths = list(n.document_paths).flatMap((d) => {
      const p = text(record(d).document_path);
      return p === null ? [] : [p];
    });
    const body = text(n.body);
    const externalId = text(n.external_id);
    const created = text(n.created_at);
    const createdAt = created === null ? null : Date.parse(created);
    return {
      identifier: externalId ?? (body !== null && body !== '' ? body : `documents: ${paths.join(', ')}`),
      externalId,
      body: body === '' ? null : body,
      paths,
      createdAt: createdAt === null || Number.isNaN(createdAt) ? null : createdAt,
    };
  });
  // A succeeded item's account passed validation: its transaction lists are lists.
  const txs = [...list(b.transactions), ...accountTransactions(account as Parameters<typeof accountTransactions>[0]).transactions].map((raw) => {
    const t = record(raw);
    return { id: text(t.transaction_id) ?? '', type: text(t.type) ?? '', amount: decimal(t.amount) ?? new Decimal(0) };
  });
  const statements = [...list(b.statements), ...list(account.statements)].map((raw) => {
    const s = record(raw);
    return { id: text(s.statement_id) ?? '', gross: decimal(s.gross_amount) };
  });
  const instructions = [...(b.payment_instruction === undefined ? [] : [b.payment_instruction]), ...list(account.payment_instructions)].map((raw) => {
    const p = record(raw);
    return { vendor: text(p.vendor) ?? '', reference: text(p.reference) ?? text(p.instruction_reference) ?? '' };
  });
  return { notes, transactions: txs, statements, instructions };
}

/** What the database holds for a page of accounts, by account id. */
async function holdings(db: Executor, accountIds: readonly string[]) {
  const ids = [...new Set(accountIds)];
  const any = sql<boolean>`account_id = any(${ids}::bigint[])`;
  const [notes, transactions, statements, instructions] = await Promise.all([
    db.selectFrom('account_notes').select(['account_id', 'body', 'document_paths', 'created_at', 'external_id']).where(any).where('origin', '=', 'IMPORTED').execute(),
    db.selectFrom('account_transactions').select(['account_id', 'transaction_id', 'type', 'amount']).where(any).execute(),
    db.selectFrom('historical_statements').select(['account_id', 'statement_id', 'gross_amount']).where(any).execute(),
    db.selectFrom('payment_instructions').select(['account_id', 'vendor', 'reference']).where(any).execute(),
  ]);
  return {
    notes: groupBy(notes, (n) => n.account_id),
    transactions: groupBy(transactions, (t) => t.account_id),
    statements: groupBy(statements, (s) => s.account_id),
    instructions: groupBy(instructions, (p) => p.account_id),
  };
}

const sameSet = (a: readonly string[], b: readonly string[]) => a.length === b.length && [...a].sort().every((v, i) => v === [...b].sort()[i]);

/**
 * Builds the report, reading the batch's succeeded items a page at a time (a batch of 100,000
 * lines is never held whole). `onDifference` sees every difference (the CSV streams them);
 * the report keeps the first `limit`.
 */
export async function reconcileBatch(db: Executor, batch: BatchRow, opts: { limit?: number; onDifference?: (d: Difference) => void | Promise<void> } = {}): Promise<ReconciliationReport> {
  const limit = opts.limit ?? 10_000;
  const totals: ReconciliationTotals = {
    items_succeeded: 0,
    accounts: { file: 0, database: 0 },
    notes: { file: 0, database: 0 },
    statements: { file: 0, database: 0, gross_amount: { file: '0', database: '0' } },
    payment_instructions: { file: 0, database: 0 },
    transactions: [],
  };
  let grossFile = new Decimal(0);
  let grossDb = new Decimal(0);
  const byType = new Map<string, { file: { count: number; amount: Decimal }; database: { count: number; amount: Decimal } }>();
  const typeOf = (type: string) => {
    let t = byType.get(type);
    if (!t) byType.set(type, (t = { file: { count: 0, amount: new Decimal(0) }, database: { count: 0, amount: new Decimal(0) } }));
    return t;
  };
  const differences: Difference[] = [];
  let differencesTotal = 0;

  let after = 0;
  for (;;) {
    const page = await listSucceededBundles(db, batch.id, after, PAGE);
    if (page.length === 0) break;
    after = page.at(-1)!.line;
    const held = await holdings(db, page.flatMap((i) => (i.account_id === null ? [] : [i.account_id])));
    for (const item of page) {
      totals.items_succeeded += 1;
      const diff = async (d: Omit<Difference, 'line' | 'external_account_number' | 'service_account_number'>) => {
        const full = { line: item.line, external_account_number: item.external_account_number, service_account_number: item.service_account_number, ...d };
        differencesTotal += 1;
        if (differences.length < limit) differences.push(full);
        await opts.onDifference?.(full);
      };
      const carried = carriedBy(item.bundle);
      totals.accounts.file += 1;
      if (item.account_id === null) {
        await diff({ kind: 'account', identifier: item.external_account_number ?? '', problem: 'missing', file: item.service_account_number, database: null });
      } else {
        totals.accounts.database += 1;
      }
      const id = item.account_id ?? '';

      const notes = held.notes.get(id) ?? [];
      for (const n of carried.notes) {
        totals.notes.file += 1;
        const found = notes.some((h) =>
          n.externalId !== null
            ? h.external_id === n.externalId
            : (n.body !== null ? h.body === n.body : h.body === null && sameSet(h.document_paths, n.paths)) && (n.createdAt === null || h.created_at.getTime() === n.createdAt),
        );
        if (found) totals.notes.database += 1;
        else await diff({ kind: 'note', identifier: n.identifier, problem: 'missing', file: n.identifier, database: null });
      }

      const txs = new Map((held.transactions.get(id) ?? []).map((t) => [t.transaction_id, t]));
      for (const t of carried.transactions) {
        const byFile = typeOf(t.type);
        byFile.file.count += 1;
        byFile.file.amount = byFile.file.amount.plus(t.amount);
        const h = txs.get(t.id);
        if (!h) {
          await diff({ kind: 'transaction', identifier: t.id, problem: 'missing', file: `${t.type} ${t.amount.toFixed()}`, database: null });
          continue;
        }
        const amount = new Decimal(h.amount);
        const byDb = typeOf(h.type);
        byDb.database.count += 1;
        byDb.database.amount = byDb.database.amount.plus(amount);
        if (h.type !== t.type) await diff({ kind: 'transaction', identifier: t.id, problem: 'type_differs', file: t.type, database: h.type });
        if (!amount.equals(t.amount)) await diff({ kind: 'transaction', identifier: t.id, problem: 'amount_differs', file: t.amount.toFixed(), database: amount.toFixed() });
      }

      const statements = new Map((held.statements.get(id) ?? []).map((s) => [s.statement_id, s]));
      for (const s of carried.statements) {
        totals.statements.file += 1;
        if (s.gross) grossFile = grossFile.plus(s.gross);
        const h = statements.get(s.id);
        if (!h) {
          await diff({ kind: 'statement', identifier: s.id, problem: 'missing', file: s.gross?.toFixed() ?? null, database: null });
          continue;
        }
        totals.statements.database += 1;
        const gross = h.gross_amount === null ? null : new Decimal(h.gross_amount);
        if (gross) grossDb = grossDb.plus(gross);
        if ((gross === null) !== (s.gross === null) || (gross && s.gross && !gross.equals(s.gross))) {
          await diff({ kind: 'statement', identifier: s.id, problem: 'gross_amount_differs', file: s.gross?.toFixed() ?? null, database: gross?.toFixed() ?? null });
        }
      }

      const instructions = held.instructions.get(id) ?? [];
      for (const p of carried.instructions) {
        totals.payment_instructions.file += 1;
        if (instructions.some((h) => h.vendor === p.vendor && h.reference === p.reference)) totals.payment_instructions.database += 1;
        else await diff({ kind: 'payment_instruction', identifier: `${p.vendor}/${p.reference}`, problem: 'missing', file: `${p.vendor}/${p.reference}`, database: null });
      }
    }
    if (page.length < PAGE) break;
  }

  totals.statements.gross_amount = { file: grossFile.toFixed(), database: grossDb.toFixed() };
  totals.transactions = [...byType.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([type, t]) => ({
      type,
      file: { count: t.file.count, amount: t.file.amount.toFixed() },
      database: { count: t.database.count, amount: t.database.amount.toFixed() },
    }));
  return {
    batch_id: batch.id,
    import_supplier: batch.supplier_code,
    state: batch.state,
    balanced: differencesTotal === 0,
    totals,
    differences,
    differences_total: differencesTotal,
  };
}
