import { Decimal } from 'decimal.js';
import { describe, expect, it } from 'vitest';
import { statementRules } from '../../src/imports/accounts/rules/statements.js';
import { accountErrors, published, TODAY } from './harness.js';

// The document's rules on the account's transactions, ledgers, balances, statement dates, line
// items, notes and statements. Every case starts from the published example account and changes one
// thing (TODAY is 2026-01-15). The example keeps its statement data in one ledger:
//   ledger_balance 30.00 = transfer_balance 30.00
//   last_statement_balance 20.00 + PAYMENT 20.00 - REPAYMENT 10.00 = 30.00 (current, 2019-08-04/05)
//   PAYMENT 10.00 + CREDIT 10.00 = 20.00 = last_statement_balance (historical, 2018)
//   closed 2019-07-31, issued 2019-08-01; the account is billed to 2019-08-01;
//   the gas meter 54BV has prepay_details, the electricity meter Z16N389556 does not.

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests reach into the example freely
type Account = any;

/** The problems of the published example after `change`, sorted (their order is not the point). */
function errorsAfter(change: (account: Account) => void): string[] {
  const account = published('account');
  change(account);
  return accountErrors(account).sort();
}

/**
 * The same, keeping only the codes of this file's rules: for the cases that move a last billed to
 * date, which the meter rules also read (transfer readings, agreements), and whose problems there
 * are theirs to test.
 */
function statementErrorsAfter(change: (account: Account) => void): string[] {
  return errorsAfter(change).filter((item) => STATEMENT_CODES.has(item.slice(0, item.indexOf('@'))));
}
const STATEMENT_CODES = new Set(statementRules(() => TODAY).flatMap((r) => r.codes));

const ledger = (a: Account) => a.ledgers[0];
const current = (a: Account) => ledger(a).current_statement_transactions;
const historical = (a: Account) => ledger(a).historical_statement_transactions;
const L = 'ledgers.0';
const CUR = `${L}.current_statement_transactions`;
const HIS = `${L}.historical_statement_transactions`;

/** Moves the ledger's statement data to the account's own (deprecated) fields. */
function toAccountFields(a: Account): void {
  const l = ledger(a);
  delete a.ledgers;
  for (const key of ['current_statement_transactions', 'historical_statement_transactions', 'last_statement_balance', 'last_statement_closing_date', 'last_statement_issue_date']) a[key] = l[key];
}

/** The published transactions example's supply charge: 4 units at 11 = 44, plus 9.24 VAT = 53.24. */
function supplyCharge(): Account {
  return published('transactions').transactions.find((t: Account) => t.type === 'SUPPLY_CHARGE');
}

/** Adds a transaction to the ledger's current statement and moves both balances by its signed amount. */
function addCurrent(a: Account, t: Account): void {
  const sign = t.type === 'PAYMENT' || t.type === 'CREDIT' ? 1 : -1;
  current(a).push(t);
  const moved = new Decimal(ledger(a).ledger_balance).plus(new Decimal(t.amount).times(sign)).toString();
  ledger(a).ledger_balance = moved;
  a.transfer_balance = moved;
}

/** A supply charge whose one line item is changed by `change`, with its amount and the balances made to agree. */
function withLineItem(change: (item: Account) => void, extra: (charge: Account) => void = () => undefined): string[] {
  return errorsAfter((a) => {
    const charge = supplyCharge();
    change(charge.line_items[0]);
    charge.tax_items = [];
    charge.amount = String(charge.line_items[0].net_amount);
    extra(charge);
    addCurrent(a, charge);
  });
}

describe('the published example account', () => {
  it('is valid with its statement data in a ledger, and with the same data in the account-level fields', () => {
    expect(errorsAfter(() => undefined)).toEqual([]);
    expect(errorsAfter(toAccountFields)).toEqual([]);
  });

  it('stays valid with the published transactions example added to its current statement (the prepay charge on the prepay meter)', () => {
    expect(
      errorsAfter((a) => {
        for (const t of published('transactions').transactions) {
          if (t.to_prepay_meter_serial_number) t.to_prepay_meter_serial_number = '54BV';
          t.transaction_id = `T-${String(t.transaction_id)}`;
          // Prepay transactions stay out of the balance.
          if (t.to_prepay_meter_serial_number) current(a).push(t);
          else addCurrent(a, t);
        }
      }),
    ).toEqual([]);
  });
});

describe('transaction dates', () => {
  const zeroTransaction = (type: string, date: string): Account => ({
    transaction_id: `Z-${type}`,
    transaction_date: date,
    amount: '0',
    type,
    ...(type === 'CHARGE' ? { reason: 'IMPORTED_CHARGE' } : type === 'CREDIT' ? { reason: 'IMPORTED_CREDIT' } : {}),
    ...(type === 'SUPPLY_CHARGE' ? { product_code: 'E-1R-VAR-22-11-01-C', line_items: [] } : {}),
  });
  /** A zero-amount transaction of `type` on 2026-01-16 (after today) and on today: it moves no balance, so only its date is at stake. */
  const futureAndToday = (type: string) => [
    errorsAfter((a) => current(a).push(zeroTransaction(type, '2026-01-16'))),
    errorsAfter((a) => current(a).push(zeroTransaction(type, '2026-01-15'))),
  ];
  const refusedThenAccepted = [[`transaction_in_future@${CUR}.2.transaction_date`], []];

  it('EnergyCharge.transaction_date transaction_in_future: a CHARGE is not dated after today', () => {
    expect(futureAndToday('CHARGE')).toEqual(refusedThenAccepted);
  });

  it('EnergyCredit.transaction_date transaction_in_future: a CREDIT is not dated after today', () => {
    expect(futureAndToday('CREDIT')).toEqual(refusedThenAccepted);
  });

  it('EnergyPayment.transaction_date transaction_in_future: a PAYMENT is not dated after today', () => {
    expect(futureAndToday('PAYMENT')).toEqual(refusedThenAccepted);
  });

  it('EnergyRepayment.transaction_date transaction_in_future: a REPAYMENT is not dated after today', () => {
    expect(futureAndToday('REPAYMENT')).toEqual(refusedThenAccepted);
  });

  it('EnergySupplyCharge.transaction_date transaction_in_future: a SUPPLY_CHARGE is not dated after today', () => {
    expect(futureAndToday('SUPPLY_CHARGE')).toEqual(refusedThenAccepted);
  });

  it('transaction_in_future also applies to historical transactions and to the account-level lists', () => {
    expect(
      errorsAfter((a) => {
        toAccountFields(a);
        a.current_statement_transactions.push(zeroTransaction('CHARGE', '2026-02-01'));
      }),
    ).toEqual(['transaction_in_future@current_statement_transactions.2.transaction_date']);
  });
});

describe('statement periods and dates', () => {
  it('EnergyAccount historical_statement_period_end_in_future: the last statement did not close after today', () => {
    // A closing date in the future also puts the current transactions and the issue date before it.
    expect(errorsAfter((a) => (ledger(a).last_statement_closing_date = '2026-01-16'))).toEqual([
      `current_statement_transaction_before_current_statement_opening_date@${CUR}.0.transaction_date`,
      `current_statement_transaction_before_current_statement_opening_date@${CUR}.1.transaction_date`,
      `historical_statement_period_end_in_future@${L}.last_statement_closing_date`,
      `last_statement_issued_before_closing_date@${L}.last_statement_issue_date`,
    ]);
    // Without a closing date the period ends with the latest historical transaction; one dated after
    // today is refused at its own date, and a refused transaction is left out of the account's rules.
    expect(
      errorsAfter((a) => {
        delete ledger(a).last_statement_closing_date;
        delete ledger(a).last_statement_issue_date;
        historical(a)[0].transaction_date = '2026-01-16';
      }),
    ).toEqual([`transaction_in_future@${HIS}.0.transaction_date`]);
    expect(errorsAfter((a) => (ledger(a).last_statement_closing_date = '2019-08-01'))).toEqual([]);
  });

  it('EnergyAccount last_statement_issued_before_closing_date: a statement is issued on or after it closes', () => {
    expect(errorsAfter((a) => (ledger(a).last_statement_issue_date = '2019-07-30'))).toEqual([`last_statement_issued_before_closing_date@${L}.last_statement_issue_date`]);
    expect(errorsAfter((a) => (ledger(a).last_statement_issue_date = '2019-07-31'))).toEqual([]);
    // Without a closing date, the earliest last billed to date (2019-08-01) stands in for it.
    expect(
      errorsAfter((a) => {
        delete ledger(a).last_statement_closing_date;
        ledger(a).last_statement_issue_date = '2019-07-31';
      }),
    ).toEqual([`last_statement_issued_before_closing_date@${L}.last_statement_issue_date`]);
    // The account-level fields are held to the same rule.
    expect(
      errorsAfter((a) => {
        toAccountFields(a);
        a.last_statement_issue_date = '2019-07-30';
      }),
    ).toEqual(['last_statement_issued_before_closing_date@last_statement_issue_date']);
  });

  it('EnergyAccount historical_statement_transactions_without_last_statement_closing_date_or_last_billed_to_date: historical transactions need a date to close on', () => {
    expect(
      statementErrorsAfter((a) => {
        delete ledger(a).last_statement_closing_date;
        delete a.last_billed_to_date;
      }),
    ).toEqual([`historical_statement_transactions_without_last_statement_closing_date_or_last_billed_to_date@${HIS}`]);
    // A last billed to date on a supply point is enough.
    expect(
      statementErrorsAfter((a) => {
        delete ledger(a).last_statement_closing_date;
        delete a.last_billed_to_date;
        a.supply_addresses[0].meter_points[0].last_billed_to_date = '2019-08-01';
      }),
    ).toEqual([]);
  });

  it('EnergyAccount historical_statement_transaction_after_last_statement_closing_date: historical transactions lie on or before the closing date', () => {
    expect(errorsAfter((a) => (historical(a)[0].transaction_date = '2019-08-01'))).toEqual([`historical_statement_transaction_after_last_statement_closing_date@${HIS}.0.transaction_date`]);
    expect(errorsAfter((a) => (historical(a)[0].transaction_date = '2019-07-31'))).toEqual([]);
    // Without a closing date, the earliest last billed to date of the account and its supply points
    // (here the gas meter point's, 2018-08-01) stands in: the PAYMENT of 2018-08-05 is after it.
    expect(
      statementErrorsAfter((a) => {
        delete ledger(a).last_statement_closing_date;
        a.supply_addresses[0].meter_points[1].last_billed_to_date = '2018-08-01';
      }),
    ).toEqual([
      `historical_statement_transaction_after_last_statement_closing_date@${HIS}.0.transaction_date`,
    ]);
  });

  it('EnergyAccount historical_statement_transaction_after_current_statement_transaction: the historical statement ends before the current one starts', () => {
    // With the closing date inferred from the last billed to date (2019-08-01), either side may sit
    // on that date, but not both.
    const onBilledTo = (h: boolean, c: boolean) =>
      errorsAfter((a) => {
        delete ledger(a).last_statement_closing_date;
        if (h) historical(a)[0].transaction_date = '2019-08-01';
        if (c) current(a)[0].transaction_date = '2019-08-01';
      });
    expect(onBilledTo(true, true)).toEqual([`historical_statement_transaction_after_current_statement_transaction@${HIS}.0.transaction_date`]);
    expect(onBilledTo(true, false)).toEqual([]);
    expect(onBilledTo(false, true)).toEqual([]);
  });

  it('EnergyAccount current_statement_transaction_before_current_statement_opening_date: current transactions are after the closing date', () => {
    // Closed on 2019-07-31: the open statement starts on 2019-08-01 (which is also the billed-to date).
    const dated = (date: string, prepay = false) =>
      errorsAfter((a) => {
        current(a)[0].transaction_date = date;
        if (prepay) {
          // Out of the balance with its amount.
          current(a)[0].to_prepay_meter_serial_number = '54BV';
          ledger(a).ledger_balance = '40.00';
          a.transfer_balance = '40.00';
        }
      });
    expect(dated('2019-07-31')).toEqual([
      `current_statement_transaction_before_current_statement_opening_date@${CUR}.0.transaction_date`,
      `current_statement_transaction_before_last_billed_to_date@${CUR}.0.transaction_date`,
    ]);
    expect(dated('2019-08-01')).toEqual([]);
    // Prepay vends are left out of this rule (not out of the billed-to one).
    expect(dated('2019-07-31', true)).toEqual([`current_statement_transaction_before_last_billed_to_date@${CUR}.0.transaction_date`]);
    // With the closing date inferred from the billed-to date, a transaction on that date is tolerated.
    expect(
      errorsAfter((a) => {
        delete ledger(a).last_statement_closing_date;
        current(a)[0].transaction_date = '2019-08-01';
      }),
    ).toEqual([]);
  });

  it('EnergyAccount current_statement_transaction_before_last_billed_to_date: no current transaction before the account was billed to', () => {
    // Closed on 2019-07-01 but billed to 2019-08-01: a transaction of 2019-07-15 is in the open statement, yet before the billed-to date.
    const billedTo = (date: string) =>
      errorsAfter((a) => {
        ledger(a).last_statement_closing_date = '2019-07-01';
        current(a)[0].transaction_date = date;
      });
    expect(billedTo('2019-07-15')).toEqual([`current_statement_transaction_before_last_billed_to_date@${CUR}.0.transaction_date`]);
    expect(billedTo('2019-08-01')).toEqual([]);
    // Dates at the meter point, meter and register levels count too; the earliest of them all decides
    // (a transaction before it is before every one of them, whichever one the document means).
    const billedToOnly = (date: string, change: (a: Account) => void) =>
      statementErrorsAfter((a) => {
        ledger(a).last_statement_closing_date = '2019-07-01';
        current(a)[0].transaction_date = date;
        change(a);
      });
    expect(billedToOnly('2019-07-15', (a) => (a.last_billed_to_date = '2019-07-01'))).toEqual([]);
    expect(
      billedToOnly('2019-07-15', (a) => {
        a.last_billed_to_date = '2019-07-01';
        a.supply_addresses[0].meter_points[0].meters[0].registers[0].last_billed_to_date = '2019-07-10';
      }),
    ).toEqual([]);
    expect(
      billedToOnly('2019-07-05', (a) => {
        delete a.last_billed_to_date;
        a.supply_addresses[0].meter_points[0].meters[0].registers[0].last_billed_to_date = '2019-07-10';
      }),
    ).toEqual([`current_statement_transaction_before_last_billed_to_date@${CUR}.0.transaction_date`]);
  });
});

describe('balances', () => {
  it('EnergyAccount balance_mismatch_on_transfer_balance: the last statement balance moved by the current transactions gives the balance', () => {
    expect(errorsAfter((a) => (current(a)[1].amount = '21.00'))).toEqual([`balance_mismatch_on_transfer_balance@${L}.ledger_balance`]);
    // Signs: a PAYMENT read as a CHARGE moves the balance the other way.
    expect(
      errorsAfter((a) => {
        Object.assign(current(a)[1], { type: 'CHARGE', reason: 'IMPORTED_CHARGE' });
      }),
    ).toEqual([`balance_mismatch_on_transfer_balance@${L}.ledger_balance`]);
    // The account-level fields reconcile with transfer_balance.
    expect(
      errorsAfter((a) => {
        toAccountFields(a);
        a.transfer_balance = '30.01';
      }),
    ).toEqual(['balance_mismatch_on_transfer_balance@transfer_balance']);
    // A prepay transaction stays out of the sum.
    expect(errorsAfter((a) => current(a).push({ transaction_id: '5', transaction_date: '2019-08-06', amount: '7.50', type: 'PAYMENT', to_prepay_meter_serial_number: '54BV' }))).toEqual([]);
    // Amounts add up exactly, in decimals: 0.1 + 0.2 is 0.3.
    expect(
      errorsAfter((a) => {
        current(a).push({ transaction_id: '5', transaction_date: '2019-08-06', amount: '0.1', type: 'CREDIT', reason: 'IMPORTED_CREDIT' }, { transaction_id: '6', transaction_date: '2019-08-06', amount: '0.2', type: 'CREDIT', reason: 'IMPORTED_CREDIT' });
        ledger(a).ledger_balance = '30.3';
        a.transfer_balance = '30.30';
      }),
    ).toEqual([]);
  });

  it('an account sending only a transfer_balance has nothing to reconcile (its transactions come through the transactions import)', () => {
    expect(errorsAfter((a) => delete a.ledgers)).toEqual([]);
  });

  it('EnergyAccount historical_statement_transactions_balance_mismatch: the historical transactions add up to the last statement balance', () => {
    expect(errorsAfter((a) => (historical(a)[1].amount = '10.01'))).toEqual([`historical_statement_transactions_balance_mismatch@${L}.last_statement_balance`]);
    // Without a last statement balance they must add up to zero (which moves the current balance too).
    expect(errorsAfter((a) => delete ledger(a).last_statement_balance)).toEqual([
      `balance_mismatch_on_transfer_balance@${L}.ledger_balance`,
      `historical_statement_transactions_balance_mismatch@${HIS}`,
    ]);
    // A prepay transaction stays out of the sum.
    expect(errorsAfter((a) => historical(a).push({ transaction_id: '5', transaction_date: '2018-08-06', amount: '3.00', type: 'CREDIT', reason: 'IMPORTED_CREDIT', to_prepay_meter_serial_number: '54BV' }))).toEqual([]);
  });

  it('EnergyAccount ledger_balances_not_equal_to_transfer_balance: the ledgers add up to the transfer balance', () => {
    expect(errorsAfter((a) => (a.transfer_balance = '30.5'))).toEqual(['ledger_balances_not_equal_to_transfer_balance@transfer_balance']);
    expect(
      errorsAfter((a) => {
        a.ledgers.push({ ledger_code: 'SUPPLEMENTARY', ledger_balance: '-5' });
        a.transfer_balance = '25';
      }),
    ).toEqual([]);
  });
});

describe('transactions', () => {
  it('EnergyAccount duplicate_transaction_ids: no two transactions of the account share an id', () => {
    expect(errorsAfter((a) => (historical(a)[0].transaction_id = '1'))).toEqual([`duplicate_transaction_ids@${HIS}.0.transaction_id`]);
    // Across ledgers too.
    expect(errorsAfter((a) => a.ledgers.push({ ledger_code: 'SUPPLEMENTARY', current_statement_transactions: [{ transaction_id: '2', transaction_date: '2019-08-06', amount: '0', type: 'CREDIT', reason: 'IMPORTED_CREDIT' }] }))).toEqual([
      'duplicate_transaction_ids@ledgers.1.current_statement_transactions.0.transaction_id',
    ]);
  });

  it('EnergyAccount missing_transaction_id: a transaction id may not be empty', () => {
    expect(errorsAfter((a) => (current(a)[0].transaction_id = ''))).toEqual([`missing_transaction_id@${CUR}.0.transaction_id`]);
    // An absent one is the structure's `required`.
    expect(errorsAfter((a) => delete current(a)[0].transaction_id)).toEqual([`required@${CUR}.0.transaction_id`]);
  });

  it('EnergyAccount billing_document_identifier_not_allowed_for_current_statement_transactions: only historical transactions name a billing document', () => {
    expect(errorsAfter((a) => (current(a)[0].billing_document_identifier = 'BD-1'))).toEqual([`billing_document_identifier_not_allowed_for_current_statement_transactions@${CUR}.0.billing_document_identifier`]);
    expect(errorsAfter((a) => (historical(a)[0].billing_document_identifier = 'BD-1'))).toEqual([]);
  });

  it('EnergyAccount historical_statement_billing_document_identifier_mismatch: the historical transactions name one billing document', () => {
    const named = (first: string, second: string) =>
      errorsAfter((a) => {
        historical(a)[0].billing_document_identifier = first;
        historical(a)[1].billing_document_identifier = second;
      });
    expect(named('BD-1', 'BD-2')).toEqual([`historical_statement_billing_document_identifier_mismatch@${HIS}.1.billing_document_identifier`]);
    expect(named('BD-1', 'BD-1')).toEqual([]);
  });

  it('EnergyAccount transactions_target_non_initialised_prepay_meter: a prepay transaction names a meter with prepay_details', () => {
    const sentTo = (serial: string) => errorsAfter((a) => current(a).push({ transaction_id: '5', transaction_date: '2019-08-06', amount: '7.50', type: 'PAYMENT', to_prepay_meter_serial_number: serial }));
    expect(sentTo('Z16N389556')).toEqual([`transactions_target_non_initialised_prepay_meter@${CUR}.2.to_prepay_meter_serial_number`]);
    expect(sentTo('54BV')).toEqual([]);
  });
});

describe('ledgers and payment preferences', () => {
  const electricity = (a: Account): string => a.supply_addresses[0].meter_points[0].identifier;
  const gas = (a: Account): string => a.supply_addresses[0].meter_points[1].identifier;

  it('EnergyAccount duplicate_ledger_entries_found: a ledger code appears once in ledgers', () => {
    const codes = (second: string) =>
      errorsAfter((a) => {
        ledger(a).ledger_code = 'MAIN';
        a.ledgers.push({ ledger_code: second });
      });
    expect(codes('MAIN')).toEqual(['duplicate_ledger_entries_found@ledgers.1.ledger_code']);
    expect(codes('SUPPLEMENTARY')).toEqual([]);
  });

  it('EnergyAccount unknown_ledger_identifiers: a ledger identifier names a supply point of the account', () => {
    expect(errorsAfter((a) => (ledger(a).ledger_identifier = '1200060176721'))).toEqual([`unknown_ledger_identifiers@${L}.ledger_identifier`]);
    expect(errorsAfter((a) => (ledger(a).ledger_identifier = gas(a)))).toEqual([]);
  });

  const preferences = (ids: string[]) =>
    errorsAfter((a) => {
      ledger(a).ledger_identifier = electricity(a);
      a.ledgers.push({ ledger_code: 'GAS', ledger_identifier: gas(a) });
      a.payment_preferences = ids.map((id) => ({ type: 'PASSIVE', ledger_identifier: id === 'E' ? electricity(a) : id === 'G' ? gas(a) : id }));
    });

  it('EnergyAccount invalid_payment_preference_ledger_identifier: a payment preference names a ledger of ledgers', () => {
    expect(preferences(['E', 'NOT-A-LEDGER'])).toEqual(['invalid_payment_preference_ledger_identifier@payment_preferences.1.ledger_identifier']);
    expect(preferences(['E', 'G'])).toEqual([]);
  });

  it('EnergyAccount duplicate_ledger_in_payment_preferences: a ledger has at most one payment preference', () => {
    expect(preferences(['G', 'E', 'G'])).toEqual(['duplicate_ledger_in_payment_preferences@payment_preferences.2.ledger_identifier']);
  });

  it('EnergyAccount payment_plan_and_payment_schedule_not_allowed_on_same_ledger: a plan makes its ledger\'s schedule itself', () => {
    const plan = { accepted_at: '2025-01-10T12:00:00Z', schedule_means: 'DD', strategy_name: 'DEBT_PLAN', payments: [{ payment_date: '2025-02-01', total_amount: 1500, amount_components: [{ amount: 1500, component_type: 'DEBT' }] }] };
    // A plan names no ledger, so it is on the main ledger, with the example's schedules (no ledger_code).
    expect(errorsAfter((a) => (a.payment_plans = [plan]))).toEqual([
      'payment_plan_and_payment_schedule_not_allowed_on_same_ledger@payment_schedules.0',
      'payment_plan_and_payment_schedule_not_allowed_on_same_ledger@payment_schedules.1',
    ]);
    expect(
      errorsAfter((a) => {
        a.payment_plans = [plan];
        delete a.payment_schedules;
      }),
    ).toEqual([]);
  });
});

describe('supply charges and line items', () => {
  it('EnergySupplyCharge ledger_transaction_amount_does_not_match_with_line_item_net_amount_and_tax_amount: the amount is net plus tax', () => {
    expect(errorsAfter((a) => addCurrent(a, supplyCharge()))).toEqual([]);
    expect(
      errorsAfter((a) => {
        const charge = supplyCharge();
        charge.tax_items[0].amount = '9.25';
        addCurrent(a, charge);
      }),
    ).toEqual([`ledger_transaction_amount_does_not_match_with_line_item_net_amount_and_tax_amount@${CUR}.2.amount`]);
    // No tax items is no tax: 44 alone is not 53.24.
    expect(
      errorsAfter((a) => {
        const charge = supplyCharge();
        delete charge.tax_items;
        addCurrent(a, charge);
      }),
    ).toEqual([`ledger_transaction_amount_does_not_match_with_line_item_net_amount_and_tax_amount@${CUR}.2.amount`]);
  });

  it('EnergySupplyCharge supply_point_identifier_required_for_rate_specification_code: a rate specification needs its supply point', () => {
    const bySpecification = (extra: (charge: Account) => void) =>
      withLineItem((item) => {
        delete item.rate_band;
        item.rate_specification_code = 'STANDING';
      }, extra);
    expect(bySpecification(() => undefined)).toEqual([`supply_point_identifier_required_for_rate_specification_code@${CUR}.2.supply_point_identifier`]);
    expect(bySpecification((charge) => (charge.supply_point_identifier = '1200060176720'))).toEqual([]);
  });

  it('LineItem incorrect_line_item_net_amount: the net amount is price per unit times units, to within rounding to the penny', () => {
    expect(withLineItem((item) => (item.price_per_unit = '11.5'))).toEqual([`incorrect_line_item_net_amount@${CUR}.2.line_items.0.net_amount`]);
    // 123.4567 units at 0.2475 is 30.55553325: the document does not say how that is rounded, so
    // rounding to the penny either way (or not at all) is accepted, and a penny off is not.
    const pricedAt = (net: string) =>
      withLineItem((item) => {
        item.price_per_unit = '0.2475';
        item.number_of_units = '123.4567';
        item.net_amount = net;
      });
    expect(pricedAt('30.56')).toEqual([]);
    expect(pricedAt('30.55')).toEqual([]);
    expect(pricedAt('30.55553325')).toEqual([]);
    expect(pricedAt('30.54')).toEqual([`incorrect_line_item_net_amount@${CUR}.2.line_items.0.net_amount`]);
    expect(pricedAt('30.57')).toEqual([`incorrect_line_item_net_amount@${CUR}.2.line_items.0.net_amount`]);
    // Without a price per unit the product's own rate applies, which this service does not hold.
    expect(withLineItem((item) => delete item.price_per_unit)).toEqual([]);
  });

  it('LineItem conflicting_rate_band_specification: exactly one of rate band, rate specification and time series specification', () => {
    expect(withLineItem((item) => (item.time_series_specification_code = 'HH'))).toEqual([`conflicting_rate_band_specification@${CUR}.2.line_items.0.time_series_specification_code`]);
    expect(withLineItem((item) => delete item.rate_band)).toEqual([`conflicting_rate_band_specification@${CUR}.2.line_items.0`]);
    expect(
      withLineItem((item) => {
        delete item.rate_band;
        item.time_series_specification_code = 'HH';
      }),
    ).toEqual([]);
  });

  it('LineItem start_date_later_than_end_date: a line item does not end before it starts', () => {
    expect(withLineItem((item) => (item.end_date = '2019-09-30'))).toEqual([`start_date_later_than_end_date@${CUR}.2.line_items.0.end_date`]);
    expect(withLineItem((item) => (item.end_date = '2019-10-01'))).toEqual([]);
  });

  it('LineItem.units line_item_units_must_be_two_values: the readings that open and close the period', () => {
    expect(withLineItem((item) => (item.units = ['4']))).toEqual([`line_item_units_must_be_two_values@${CUR}.2.line_items.0.units`]);
    expect(withLineItem((item) => (item.units = ['4', '8', '12']))).toEqual([`line_item_units_must_be_two_values@${CUR}.2.line_items.0.units`]);
    expect(withLineItem((item) => delete item.units)).toEqual([]);
  });
});

describe('notes and statements', () => {
  it('Note note_body_or_document_path_not_found: a note has a body or documents', () => {
    expect(errorsAfter((a) => (a.notes[0] = { created_at: '2018-10-10T10:20:00Z' }))).toEqual(['note_body_or_document_path_not_found@notes.0']);
    expect(errorsAfter((a) => (a.notes[0] = { body: '', document_paths: [] }))).toEqual(['note_body_or_document_path_not_found@notes.0']);
    expect(errorsAfter((a) => delete a.notes[0].body)).toEqual([]);
    expect(errorsAfter((a) => delete a.notes[0].document_paths)).toEqual([]);
  });

  it('Note note_unpin_at_earlier_than_creation_date: a note is unpinned no earlier than it was created', () => {
    expect(errorsAfter((a) => Object.assign(a.notes[0], { is_pinned: true, unpin_at: '2018-10-10T10:19:59Z' }))).toEqual(['note_unpin_at_earlier_than_creation_date@notes.0.unpin_at']);
    // Compared as instants: the same moment written with an offset is not earlier.
    expect(errorsAfter((a) => Object.assign(a.notes[0], { is_pinned: true, unpin_at: '2018-10-10T11:20:00+01:00' }))).toEqual([]);
  });

  it('a statement without a statement_path is accepted (decisions §3: only the period and statement_id are required)', () => {
    expect(errorsAfter((a) => delete a.statements[1].statement_path)).toEqual([]);
    // The document gives Statement no pdf_context to send instead.
    expect(errorsAfter((a) => (a.statements[1].pdf_context = {}))).toEqual(['unknown_field@statements.1.pdf_context']);
  });
});
