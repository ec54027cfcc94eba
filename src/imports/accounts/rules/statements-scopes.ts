import { Decimal } from 'decimal.js';
import type { CrossFieldContext } from '../../shared/fields.js';
import { isCalendarDate, isRecord } from '../../shared/fields.js';

// One reading of the account's statement data, shared by the account-level statement rules.
//
// The account carries statement data in two shapes: the account-level fields the document lists
// (deprecated there in favour of ledgers) and the `ledgers` list its own example sends, where each
// ledger has its own transactions, balances and dates. Each is a "scope" and the balance and date
// rules run once per scope with that scope's own figures.
//
// The reading is taken once per account, on the first statement rule that runs, and cached by the
// account object: the rules report at transaction fields, and a later rule asking ctx.parsed() about
// a field an earlier rule reported on would otherwise skip it and hide its own problem.

export const TRANSACTION_TYPES = ['CHARGE', 'CREDIT', 'PAYMENT', 'REPAYMENT', 'SUPPLY_CHARGE'] as const;
type TransactionType = (typeof TRANSACTION_TYPES)[number];

/** PAYMENT and CREDIT raise the balance; CHARGE, REPAYMENT and SUPPLY_CHARGE lower it. */
const SIGN: Record<TransactionType, 1 | -1> = { PAYMENT: 1, CREDIT: 1, CHARGE: -1, REPAYMENT: -1, SUPPLY_CHARGE: -1 };

export interface Transaction {
  /** Path of the transaction, relative to the account. */
  path: PropertyKey[];
  type: TransactionType;
  /** Parsed values; undefined when absent or when the field failed. */
  date?: string;
  amount?: string;
  id?: string;
  billingDocument?: string;
  prepayMeter?: string;
  /** Whether the fields a balance sum needs (amount, prepay serial) parsed. */
  summable: boolean;
}

export interface TransactionList {
  /** Path of the list, relative to the account. */
  path: PropertyKey[];
  /** The entries whose type parsed; the others are left to the structure's own errors. */
  transactions: Transaction[];
  /** True when the list holds at least one entry. */
  given: boolean;
  /** True when every entry could be read (needed before summing it). */
  complete: boolean;
}

export interface Scope {
  /** [] for the account's own fields, ['ledgers', i] for a ledger. */
  prefix: PropertyKey[];
  isLedger: boolean;
  /** 'transfer_balance' or 'ledger_balance'. */
  balanceField: string;
  balance?: string;
  /** False when the balance is present but failed. */
  balanceOk: boolean;
  lastBalance?: string;
  /** False when last_statement_balance is present but failed. */
  lastBalanceOk: boolean;
  closing?: string;
  /** Whether last_statement_closing_date is present at all (parsed or not). */
  closingGiven: boolean;
  issue?: string;
  current: TransactionList;
  historical: TransactionList;
}

export interface StatementData {
  account: Scope;
  ledgers: Scope[];
  /** Earliest last_billed_to_date of the account and its meter points; undefined when none or one failed. */
  earliestBilledTo?: string;
  /** Whether the account or a meter point gives a last_billed_to_date at all (parsed or not). */
  billedToGiven: boolean;
  /** Earliest last_billed_to_date at any level (account, meter point, meter, register); undefined as above. */
  earliestBilledToAnyLevel?: string;
  /** Serial numbers of the meters that carry prepay_details. */
  prepayMeters: Set<string>;
  /** Identifiers of the account's meter points (supply points), as sent. */
  supplyPoints: Set<string>;
}

/** A value the payload gives: present and not the empty string. */
export function given(v: unknown): boolean {
  return v !== undefined && v !== null && v !== '';
}

function parsedAt(obj: Record<string, unknown>, key: string, ctx: CrossFieldContext, prefix: PropertyKey[]): { ok: boolean; value?: string } {
  const v = obj[key];
  if (v === undefined) return { ok: true };
  if (!ctx.parsed([...prefix, key]) || typeof v !== 'string') return { ok: false };
  return { ok: true, value: v };
}

/**
 * A date is taken as sent whenever it is a real calendar date: the structure passes such a date
 * through unchanged, so a problem at its path can only be another rule's (a date in the future),
 * and that must not hide it from these rules.
 */
function dateAt(obj: Record<string, unknown>, key: string): { ok: boolean; value?: string } {
  const v = obj[key];
  if (v === undefined) return { ok: true };
  return typeof v === 'string' && isCalendarDate(v) ? { ok: true, value: v } : { ok: false };
}

function readTransaction(entry: unknown, path: PropertyKey[], ctx: CrossFieldContext): Transaction | undefined {
  // A transaction with any problem of its own (a field, or a rule on one of its fields) is left out of
  // every rule here: its own errors say what is wrong, and figures built from it would mislead.
  if (!isRecord(entry) || !ctx.parsed(path)) return undefined;
  const type = entry.type;
  if (typeof type !== 'string' || !(TRANSACTION_TYPES as readonly string[]).includes(type)) return undefined;
  const date = dateAt(entry, 'transaction_date');
  const amount = parsedAt(entry, 'amount', ctx, path);
  const id = parsedAt(entry, 'transaction_id', ctx, path);
  const bdi = parsedAt(entry, 'billing_document_identifier', ctx, path);
  const prepay = parsedAt(entry, 'to_prepay_meter_serial_number', ctx, path);
  return {
    path,
    type: type as TransactionType,
    ...(date.value !== undefined ? { date: date.value } : {}),
    ...(amount.value !== undefined ? { amount: amount.value } : {}),
    ...(id.value !== undefined ? { id: id.value } : {}),
    ...(bdi.value !== undefined ? { billingDocument: bdi.value } : {}),
    ...(prepay.value !== undefined ? { prepayMeter: prepay.value } : {}),
    summable: amount.value !== undefined && prepay.ok,
  };
}

function readList(owner: Record<string, unknown>, key: string, prefix: PropertyKey[], ctx: CrossFieldContext): TransactionList {
  const path = [...prefix, key];
  const list = owner[key];
  if (!Array.isArray(list)) return { path, transactions: [], given: false, complete: list === undefined };
  const transactions: Transaction[] = [];
  let complete = true;
  list.forEach((entry: unknown, i) => {
    const t = readTransaction(entry, [...path, i], ctx);
    if (t) transactions.push(t);
    if (!t || !t.summable) complete = false;
  });
  return { path, transactions, given: list.length > 0, complete };
}

function readScope(owner: Record<string, unknown>, prefix: PropertyKey[], ctx: CrossFieldContext, isLedger: boolean): Scope {
  const balanceField = isLedger ? 'ledger_balance' : 'transfer_balance';
  const balance = parsedAt(owner, balanceField, ctx, prefix);
  const last = parsedAt(owner, 'last_statement_balance', ctx, prefix);
  const closing = dateAt(owner, 'last_statement_closing_date');
  const issue = dateAt(owner, 'last_statement_issue_date');
  return {
    prefix,
    isLedger,
    balanceField,
    ...(balance.value !== undefined ? { balance: balance.value } : {}),
    balanceOk: balance.ok,
    ...(last.value !== undefined ? { lastBalance: last.value } : {}),
    lastBalanceOk: last.ok,
    ...(closing.value !== undefined ? { closing: closing.value } : {}),
    closingGiven: given(owner.last_statement_closing_date),
    ...(issue.value !== undefined ? { issue: issue.value } : {}),
    current: readList(owner, 'current_statement_transactions', prefix, ctx),
    historical: readList(owner, 'historical_statement_transactions', prefix, ctx),
  };
}

/** Collects the last_billed_to_dates of one object into `into`; false when one is present but failed. */
function collectBilledTo(obj: unknown, into: string[]): boolean {
  if (!isRecord(obj) || obj.last_billed_to_date === undefined || obj.last_billed_to_date === null) return true;
  const r = dateAt(obj, 'last_billed_to_date');
  if (r.value !== undefined) into.push(r.value);
  return r.ok;
}

const earliest = (dates: string[]) => (dates.length === 0 ? undefined : dates.reduce((a, b) => (b < a ? b : a)));

function read(account: Record<string, unknown>, ctx: CrossFieldContext): StatementData {
  const supplyLevel: string[] = [];
  const lowerLevel: string[] = [];
  let supplyOk = collectBilledTo(account, supplyLevel);
  let lowerOk = true;
  let billedToGiven = given(account.last_billed_to_date);
  const prepayMeters = new Set<string>();
  const supplyPoints = new Set<string>();
  const addresses = Array.isArray(account.supply_addresses) ? account.supply_addresses : [];
  addresses.forEach((sa: unknown) => {
    if (!isRecord(sa) || !Array.isArray(sa.meter_points)) return;
    sa.meter_points.forEach((mp: unknown) => {
      if (!isRecord(mp)) return;
      if (typeof mp.identifier === 'string') supplyPoints.add(mp.identifier);
      if (given(mp.last_billed_to_date)) billedToGiven = true;
      supplyOk = collectBilledTo(mp, supplyLevel) && supplyOk;
      if (!Array.isArray(mp.meters)) return;
      mp.meters.forEach((m: unknown) => {
        if (!isRecord(m)) return;
        // A meter counts as an initialised prepay meter when it carries prepay_details, as the
        // document defines it; the details' own problems are reported where they are.
        if (isRecord(m.prepay_details) && typeof m.meter_serial_number === 'string') prepayMeters.add(m.meter_serial_number);
        lowerOk = collectBilledTo(m, lowerLevel) && lowerOk;
        if (!Array.isArray(m.registers)) return;
        m.registers.forEach((r: unknown) => {
          lowerOk = collectBilledTo(r, lowerLevel) && lowerOk;
        });
      });
    });
  });
  const ledgers = Array.isArray(account.ledgers) ? account.ledgers : [];
  const earliestSupply = supplyOk ? earliest(supplyLevel) : undefined;
  const earliestAny = supplyOk && lowerOk ? earliest([...supplyLevel, ...lowerLevel]) : undefined;
  return {
    account: readScope(account, [], ctx, false),
    ledgers: ledgers.flatMap((l: unknown, i) => (isRecord(l) ? [readScope(l, ['ledgers', i], ctx, true)] : [])),
    ...(earliestSupply !== undefined ? { earliestBilledTo: earliestSupply } : {}),
    billedToGiven,
    ...(earliestAny !== undefined ? { earliestBilledToAnyLevel: earliestAny } : {}),
    prepayMeters,
    supplyPoints,
  };
}

const cache = new WeakMap<object, StatementData>();

/** The account's statement data, read once per account object (see above); undefined if not an object. */
export function statementData(account: unknown, ctx: CrossFieldContext): StatementData | undefined {
  if (!isRecord(account)) return undefined;
  let data = cache.get(account);
  if (!data) {
    data = read(account, ctx);
    cache.set(account, data);
  }
  return data;
}

/** Every scope: the account's own fields first, then each ledger. */
export function scopesOf(data: StatementData): Scope[] {
  return [data.account, ...data.ledgers];
}

/**
 * The last statement's closing date that applies to a scope, and whether it was given or inferred:
 * the scope's own date, else (for a ledger) the account's, else the earliest last_billed_to_date of
 * the account and its supply points, as the document infers it.
 */
export function closingOf(scope: Scope, data: StatementData): { date: string; inferred: boolean } | undefined {
  const own = scope.closing ?? (scope.isLedger ? data.account.closing : undefined);
  if (own !== undefined) return { date: own, inferred: false };
  return data.earliestBilledTo !== undefined ? { date: data.earliestBilledTo, inferred: true } : undefined;
}

/** Prepay transactions are settled separately on import and stay out of the balance sums. */
export function countsInBalance(t: Transaction): boolean {
  return !given(t.prepayMeter);
}

/** The signed sum of a list's non-prepay transactions; undefined if any entry could not be read. */
export function signedSum(list: TransactionList): Decimal | undefined {
  if (!list.complete) return undefined;
  let sum = new Decimal(0);
  for (const t of list.transactions) {
    if (!countsInBalance(t) || t.amount === undefined) continue;
    sum = sum.plus(new Decimal(t.amount).times(SIGN[t.type]));
  }
  return sum;
}
