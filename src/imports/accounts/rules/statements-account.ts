import { Decimal } from 'decimal.js';
import type { CrossRuleSpec } from '../../../contract/rules.js';
import type { CrossFieldContext } from '../../shared/fields.js';
import { isRecord } from '../../shared/fields.js';
import { entryKey, parsedString, shown, uniqueInList } from './helpers.js';
import {
  closingOf,
  countsInBalance,
  given,
  scopesOf,
  signedSum,
  statementData,
  type Scope,
  type StatementData,
  type Transaction,
} from './statements-scopes.js';

// The document's account-level rules about transactions, balances, statement dates and ledgers.
// Each runs on the account's own fields and again on every ledger of `ledgers`, with that ledger's
// own transactions, balances and dates (see statements-scopes.ts).

type Check = (data: StatementData, ctx: CrossFieldContext, account: Record<string, unknown>) => void;

function accountRule(code: string, check: Check): CrossRuleSpec {
  return {
    at: 'EnergyAccount',
    codes: [code],
    cross: (account, ctx) => {
      const data = statementData(account, ctx);
      if (data && isRecord(account)) check(data, ctx, account);
    },
  };
}

const where = (scope: Scope) => (scope.isLedger ? `ledger ${String(scope.prefix[1])}` : 'the account');
const dateOf = (t: Transaction): PropertyKey[] => [...t.path, 'transaction_date'];
const allTransactions = (scope: Scope) => [...scope.current.transactions, ...scope.historical.transactions];

/**
 * A scope's historical statement may not end after today. It ends on the closing date, or without
 * one on its latest transaction; but a transaction dated after today is already refused at its own
 * date (transaction_in_future), and a refused transaction never reaches the account's rules, so only
 * the closing date is left to check here.
 */
function periodEndInFuture(today: () => string): Check {
  return (data, ctx) => {
    const t = today();
    for (const scope of scopesOf(data)) {
      if (scope.closing !== undefined && scope.closing > t) {
        ctx.addIssue('historical_statement_period_end_in_future', `The last statement closes on ${scope.closing}, after today (${t}).`, [...scope.prefix, 'last_statement_closing_date']);
      }
    }
  };
}

/** A billing document identifier belongs to historical transactions only. */
const noBillingDocumentOnCurrent: Check = (data, ctx) => {
  for (const scope of scopesOf(data)) {
    for (const t of scope.current.transactions) {
      if (given(t.billingDocument)) {
        ctx.addIssue('billing_document_identifier_not_allowed_for_current_statement_transactions', 'Only historical statement transactions may carry a billing_document_identifier.', [...t.path, 'billing_document_identifier']);
      }
    }
  }
};

/**
 * The historical transactions of a scope form one archived billing document, so those that name one
 * must all name the same. Whether they must name one at all is a platform setting (not applied here).
 */
const oneBillingDocument: Check = (data, ctx) => {
  for (const scope of scopesOf(data)) {
    let first: string | undefined;
    for (const t of scope.historical.transactions) {
      if (!given(t.billingDocument)) continue;
      if (first === undefined) first = t.billingDocument;
      else if (t.billingDocument !== first) {
        ctx.addIssue('historical_statement_billing_document_identifier_mismatch', `${shown(t.billingDocument)} differs from ${shown(first)}, given on an earlier historical transaction of ${where(scope)}.`, [...t.path, 'billing_document_identifier']);
      }
    }
  }
};

/** The ledgers' balances (those given) add up to the account's transfer balance. */
const ledgersAddUp: Check = (data, ctx, account) => {
  const transfer = data.account.balance;
  if (transfer === undefined || !Array.isArray(account.ledgers)) return;
  // A ledger that could not be read, or whose balance failed, leaves the sum unknown.
  if (data.ledgers.length !== account.ledgers.length || data.ledgers.some((l) => !l.balanceOk)) return;
  const balances = data.ledgers.flatMap((l) => (l.balance === undefined ? [] : [l.balance]));
  if (balances.length === 0) return;
  const sum = balances.reduce((a, b) => a.plus(b), new Decimal(0));
  if (!sum.equals(transfer)) {
    ctx.addIssue('ledger_balances_not_equal_to_transfer_balance', `The ledgers' balances add up to ${sum.toString()}, not the transfer_balance ${new Decimal(transfer).toString()}.`, ['transfer_balance']);
  }
};

/** Historical transactions need a date for the statement they close: a closing date or a last billed to date. */
const historicalNeedsClosing: Check = (data, ctx) => {
  for (const scope of scopesOf(data)) {
    if (!scope.historical.given) continue;
    // A date that is present but failed still counts as given: its own error says what is wrong.
    if (scope.closingGiven || (scope.isLedger && data.account.closingGiven) || data.billedToGiven) continue;
    ctx.addIssue(
      'historical_statement_transactions_without_last_statement_closing_date_or_last_billed_to_date',
      'Historical statement transactions need a last_statement_closing_date or a last_billed_to_date.',
      scope.historical.path,
    );
  }
};

/** Transaction ids are unique across the whole account; an empty one identifies nothing. */
const uniqueTransactionIds: Check = (data, ctx) => {
  const seen = new Set<string>();
  for (const scope of scopesOf(data)) {
    for (const t of allTransactions(scope)) {
      if (t.id === undefined) continue;
      const at = [...t.path, 'transaction_id'];
      if (t.id.trim() === '') ctx.addIssue('missing_transaction_id', 'A transaction needs a transaction_id.', at);
      else if (seen.has(t.id)) ctx.addIssue('duplicate_transaction_ids', `Transaction id ${shown(t.id)} is used by another transaction of this account.`, at);
      seen.add(t.id);
    }
  }
};

/** Every current transaction comes after every historical one of the same scope (never the same day). */
const historicalBeforeCurrent: Check = (data, ctx) => {
  for (const scope of scopesOf(data)) {
    const firstCurrent = scope.current.transactions.reduce<string | undefined>((a, t) => (t.date !== undefined && (a === undefined || t.date < a) ? t.date : a), undefined);
    if (firstCurrent === undefined) continue;
    for (const t of scope.historical.transactions) {
      if (t.date !== undefined && t.date >= firstCurrent) {
        ctx.addIssue('historical_statement_transaction_after_current_statement_transaction', `This historical transaction (${t.date}) is not before the first current transaction of ${where(scope)} (${firstCurrent}).`, dateOf(t));
      }
    }
  }
};

/** Historical transactions lie on or before the closing date of the statement they belong to. */
const historicalWithinClosing: Check = (data, ctx) => {
  for (const scope of scopesOf(data)) {
    const closing = closingOf(scope, data);
    if (!closing) continue;
    for (const t of scope.historical.transactions) {
      if (t.date !== undefined && t.date > closing.date) {
        ctx.addIssue('historical_statement_transaction_after_last_statement_closing_date', `This historical transaction (${t.date}) is after the last statement's closing date (${closing.date}${closing.inferred ? ', the earliest last_billed_to_date' : ''}).`, dateOf(t));
      }
    }
  }
};

/** A statement is issued on or after it closes. */
const issuedAfterClosing: Check = (data, ctx) => {
  for (const scope of scopesOf(data)) {
    const closing = closingOf(scope, data);
    if (scope.issue === undefined || !closing) continue;
    if (scope.issue < closing.date) {
      ctx.addIssue('last_statement_issued_before_closing_date', `The last statement is issued on ${scope.issue}, before it closes (${closing.date}${closing.inferred ? ', the earliest last_billed_to_date' : ''}).`, [...scope.prefix, 'last_statement_issue_date']);
    }
  }
};

/**
 * Current transactions fall in the open statement: strictly after a given closing date; when the
 * closing date is inferred from the last billed to date, on that date is tolerated (the document
 * lets either side sit on it). Prepay transactions are left out as the document says; a transaction
 * naming a prepay meter is how the payload marks a vend.
 */
const currentInOpenStatement: Check = (data, ctx) => {
  for (const scope of scopesOf(data)) {
    const closing = closingOf(scope, data);
    if (!closing) continue;
    for (const t of scope.current.transactions) {
      if (t.date === undefined || !countsInBalance(t)) continue;
      if (closing.inferred ? t.date < closing.date : t.date <= closing.date) {
        ctx.addIssue(
          'current_statement_transaction_before_current_statement_opening_date',
          closing.inferred
            ? `This current transaction (${t.date}) is before the last billed to date (${closing.date}), where the open statement starts.`
            : `This current transaction (${t.date}) is not after the last statement's closing date (${closing.date}).`,
          dateOf(t),
        );
      }
    }
  }
};

/**
 * No current transaction before the last billed to date. The document names dates at several
 * levels without saying which one a transaction is held to; a transaction before the earliest of
 * them is before every one, which is wrong under any reading, so that is what is refused.
 */
const currentAfterBilledTo: Check = (data, ctx) => {
  const billedTo = data.earliestBilledToAnyLevel;
  if (billedTo === undefined) return;
  for (const scope of scopesOf(data)) {
    for (const t of scope.current.transactions) {
      if (t.date !== undefined && t.date < billedTo) {
        ctx.addIssue('current_statement_transaction_before_last_billed_to_date', `This current transaction (${t.date}) is before the last billed to date (${billedTo}).`, dateOf(t));
      }
    }
  }
};

/**
 * The last statement's balance moved by the current transactions gives the balance transferred (for
 * a ledger, its ledger_balance). Applied when the scope carries something to reconcile: an account
 * sending only a transfer_balance (its transactions come later, through the transactions import)
 * has nothing to add up.
 */
const balanceAddsUp: Check = (data, ctx) => {
  for (const scope of scopesOf(data)) {
    if (scope.balance === undefined || !scope.lastBalanceOk) continue;
    if (!scope.current.given && scope.lastBalance === undefined) continue;
    const moved = signedSum(scope.current);
    if (moved === undefined) continue;
    const expected = moved.plus(scope.lastBalance ?? 0);
    if (!expected.equals(scope.balance)) {
      ctx.addIssue(
        'balance_mismatch_on_transfer_balance',
        `last_statement_balance (${new Decimal(scope.lastBalance ?? 0).toString()}) and the current transactions make ${expected.toString()}, not ${scope.balanceField} ${new Decimal(scope.balance).toString()}.`,
        [...scope.prefix, scope.balanceField],
      );
    }
  }
};

/** The historical transactions add up to the last statement's balance (zero when none is given). */
const historicalAddsUp: Check = (data, ctx) => {
  for (const scope of scopesOf(data)) {
    if (!scope.historical.given || !scope.lastBalanceOk) continue;
    const sum = signedSum(scope.historical);
    if (sum === undefined) continue;
    const last = new Decimal(scope.lastBalance ?? 0);
    if (!sum.equals(last)) {
      ctx.addIssue(
        'historical_statement_transactions_balance_mismatch',
        `The historical transactions add up to ${sum.toString()}, not the last_statement_balance ${last.toString()}${scope.lastBalance === undefined ? ' (none given)' : ''}.`,
        scope.lastBalance === undefined ? scope.historical.path : [...scope.prefix, 'last_statement_balance'],
      );
    }
  }
};

/** A transaction sent to a prepay meter names a meter of this account that has prepay_details. */
const prepayMeterKnown: Check = (data, ctx) => {
  for (const scope of scopesOf(data)) {
    for (const t of allTransactions(scope)) {
      if (given(t.prepayMeter) && !data.prepayMeters.has(t.prepayMeter as string)) {
        ctx.addIssue('transactions_target_non_initialised_prepay_meter', `No meter of this account with serial number ${shown(t.prepayMeter)} has prepay_details.`, [...t.path, 'to_prepay_meter_serial_number']);
      }
    }
  }
};

/** A ledger_identifier names one of the account's supply points (meter points). */
const ledgerIdentifierKnown: Check = (data, ctx, account) => {
  if (!Array.isArray(account.ledgers)) return;
  account.ledgers.forEach((ledger: unknown, i) => {
    const id = parsedString(ledger, 'ledger_identifier', ctx, ['ledgers', i]);
    if (id === undefined || data.supplyPoints.has(id)) return;
    ctx.addIssue('unknown_ledger_identifiers', `${shown(id)} is not the identifier of a meter point of this account.`, ['ledgers', i, 'ledger_identifier']);
  });
};

/** Payment preferences name ledgers of `ledgers`, each at most once. */
function preferenceLedgers(account: Record<string, unknown>, ctx: CrossFieldContext): { id: string; at: PropertyKey[] }[] {
  if (!Array.isArray(account.payment_preferences)) return [];
  return account.payment_preferences.flatMap((p: unknown, i) => {
    if (!ctx.parsed(['payment_preferences', i, 'type'])) return [];
    const id = parsedString(p, 'ledger_identifier', ctx, ['payment_preferences', i]);
    return id === undefined ? [] : [{ id, at: ['payment_preferences', i, 'ledger_identifier'] }];
  });
}

const preferenceLedgerKnown: Check = (_data, ctx, account) => {
  const ledgers = new Set((Array.isArray(account.ledgers) ? account.ledgers : []).flatMap((l: unknown) => (isRecord(l) && typeof l.ledger_identifier === 'string' ? [l.ledger_identifier] : [])));
  for (const p of preferenceLedgers(account, ctx)) {
    if (!ledgers.has(p.id)) ctx.addIssue('invalid_payment_preference_ledger_identifier', `No ledger of this account has ledger_identifier ${shown(p.id)}.`, p.at);
  }
};

const preferenceLedgerOnce: Check = (_data, ctx, account) => {
  const seen = new Set<string>();
  for (const p of preferenceLedgers(account, ctx)) {
    if (seen.has(p.id)) ctx.addIssue('duplicate_ledger_in_payment_preferences', `Ledger ${shown(p.id)} already has a payment preference.`, p.at);
    seen.add(p.id);
  }
};

/**
 * A payment plan creates the schedule of its ledger, so that ledger may not also get a schedule from
 * the payload. A plan names no ledger, so it lands on the account's main ledger, as does a schedule
 * without a ledger_code. A schedule with a ledger_code might still name the main ledger's type;
 * telling that needs the platform's ledger types, so only schedules without one are refused.
 */
const planOrScheduleOnLedger: Check = (_data, ctx, account) => {
  if (!Array.isArray(account.payment_plans) || account.payment_plans.length === 0 || !Array.isArray(account.payment_schedules)) return;
  account.payment_schedules.forEach((s: unknown, i) => {
    if (!isRecord(s) || given(s.ledger_code) || !ctx.parsed(['payment_schedules', i, 'ledger_code'])) return;
    ctx.addIssue('payment_plan_and_payment_schedule_not_allowed_on_same_ledger', 'This payment schedule is on the main ledger, which the payment plans already schedule.', ['payment_schedules', i]);
  });
};

export function accountStatementRules(today: () => string): CrossRuleSpec[] {
  return [
    accountRule('historical_statement_period_end_in_future', periodEndInFuture(today)),
    accountRule('billing_document_identifier_not_allowed_for_current_statement_transactions', noBillingDocumentOnCurrent),
    accountRule('historical_statement_billing_document_identifier_mismatch', oneBillingDocument),
    accountRule('ledger_balances_not_equal_to_transfer_balance', ledgersAddUp),
    accountRule('invalid_payment_preference_ledger_identifier', preferenceLedgerKnown),
    accountRule('duplicate_ledger_in_payment_preferences', preferenceLedgerOnce),
    accountRule('historical_statement_transactions_without_last_statement_closing_date_or_last_billed_to_date', historicalNeedsClosing),
    { ...accountRule('duplicate_transaction_ids', uniqueTransactionIds), codes: ['duplicate_transaction_ids', 'missing_transaction_id'] },
    accountRule('historical_statement_transaction_after_current_statement_transaction', historicalBeforeCurrent),
    accountRule('historical_statement_transaction_after_last_statement_closing_date', historicalWithinClosing),
    accountRule('last_statement_issued_before_closing_date', issuedAfterClosing),
    {
      // Ledgers without a ledger_code are the main ledger; only the codes given are compared.
      ...uniqueInList('EnergyAccount', 'duplicate_ledger_entries_found', (l, i, ctx) => entryKey('ledger_code')(l, i, ctx) || undefined, (code) => `Ledger code ${shown(code)} appears more than once in ledgers.`, (i) => [i, 'ledger_code']),
      attach: 'EnergyAccount.ledgers',
    },
    accountRule('unknown_ledger_identifiers', ledgerIdentifierKnown),
    accountRule('payment_plan_and_payment_schedule_not_allowed_on_same_ledger', planOrScheduleOnLedger),
    accountRule('current_statement_transaction_before_current_statement_opening_date', currentInOpenStatement),
    accountRule('balance_mismatch_on_transfer_balance', balanceAddsUp),
    accountRule('historical_statement_transactions_balance_mismatch', historicalAddsUp),
    accountRule('transactions_target_non_initialised_prepay_meter', prepayMeterKnown),
    accountRule('current_statement_transaction_before_last_billed_to_date', currentAfterBilledTo),
  ];
}
