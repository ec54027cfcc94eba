import { describe, expect, it } from 'vitest';
import { accountErrors, published } from './harness.js';

// The document's rules on payment schedules, plans, instructions, preferences, adequacy reviews,
// deposits, debts, FiT and contribution agreements. Every case starts from the published example
// account (whose two payment schedules have no trigger and stay valid) and changes one thing;
// TODAY is 2026-01-15.

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests reach into the example freely
type Account = any;

/** The problems of the published example after `change`. */
function errorsAfter(change: (account: Account) => void): string[] {
  const account = published('account');
  change(account);
  return accountErrors(account);
}

/** The published example's second schedule (index 1): not a debt repayment plan, open-ended. */
const regular = (a: Account) => a.payment_schedules[1];

const adequacyChange = (): Record<string, unknown> => ({
  average_monthly_charge: 10000,
  average_monthly_elec_charge: 6000,
  average_monthly_gas_charge: 4000,
  // (0 - -12000) / 12: the gap to the target balance spread over the year.
  balance_adjustment: 1000,
  created_at: '2025-06-01T10:00:00Z',
  applied_at: '2025-06-02T10:00:00Z',
  current_balance: -12000,
  target_balance: 0,
  existing_direct_debit_payment: 9000,
  new_direct_debit: 11000,
});

/** The published example with one adequacy review instead of a last review date. */
function withAdequacyChange(change: (c: Record<string, unknown>) => void): string[] {
  return errorsAfter((a) => {
    delete a.last_payment_review_date;
    const c = adequacyChange();
    change(c);
    a.payment_adequacy_changes = [c];
  });
}

const contributionAgreement = () => ({
  scheme: 'COMMUNITY_FUND',
  amount: '5.00',
  interval: 'MONTHLY',
  active_period_start_date: '2024-01-01',
  active_period_end_date: '2024-12-31',
  periods: [
    { start_date: '2024-01-01', end_date: '2024-07-01', fulfilled_at: '2024-01-01T09:00:00Z' },
    { start_date: '2024-07-01', end_date: '2024-12-31' },
  ],
});

const paymentPlan = () => ({
  accepted_at: '2025-01-10T12:00:00Z',
  schedule_means: 'DD',
  strategy_name: 'DEBT_PLAN',
  payments: [
    { payment_date: '2025-02-01', total_amount: 1500, amount_components: [{ amount: 1000, component_type: 'DEBT' }, { amount: 500, component_type: 'CHARGES' }] },
    { payment_date: '2025-03-01', total_amount: 1000, amount_components: [] },
  ],
});

/** The published example with one payment plan; its schedules are left out, as a plan makes its own. */
function withPaymentPlan(change: (plan: ReturnType<typeof paymentPlan>) => void): string[] {
  return errorsAfter((a) => {
    delete a.payment_schedules;
    const plan = paymentPlan();
    change(plan);
    a.payment_plans = [plan];
  });
}

const fit = () => ({
  installations: [{ fit_id: 'FIT-00001' }],
  meters: [
    {
      extensions: ['EXT-1'],
      last_billed_to_date: '2025-01-01',
      serial_number: 'GEN-1',
      transfer_reading: { reading_date: '2025-01-01', reading_value: '1234.5' },
      type: 'GENERATION',
    },
  ],
  payment_method: 'BACS',
  vendor_name: 'STRIPE',
  instruction_reference: 'MANDATE-1',
});

describe('the published example', () => {
  it('stays valid, with its two trigger-less schedules on one ledger (one a debt repayment plan)', () => {
    expect(errorsAfter(() => undefined)).toEqual([]);
  });
});

describe('a payment schedule on its own', () => {
  it('judges only what parsed: a broken field gets its own problem and no rule guesses at it', () => {
    expect(errorsAfter((a) => Object.assign(regular(a), { trigger: 'MONTHLY', amount: '0.00', delay_days: 3 }))).toEqual(['invalid_choice@payment_schedules.1.trigger']);
    expect(
      errorsAfter((a) =>
        Object.assign(regular(a), {
          instalments: [
            { amount: '30.00', payment_date: '2018-02-01' },
            { amount: 'thirty', payment_date: '2018-02-01' },
          ],
        }),
      ),
    ).toEqual(['invalid_decimal@payment_schedules.1.instalments.1.amount', 'children_with_duplicate_values@payment_schedules.1.instalments.1.payment_date']);
    expect(errorsAfter((a) => a.payment_schedules.push({ means: 'DD', start_date: '2019-02-30' }))).toEqual(['invalid_date@payment_schedules.2.start_date']);
  });

  it('PaymentSchedule start_date_later_than_end_date: a schedule may not end before it starts', () => {
    expect(errorsAfter((a) => (regular(a).end_date = '2017-12-31'))).toEqual(['start_date_later_than_end_date@payment_schedules.1.end_date']);
    expect(errorsAfter((a) => (regular(a).end_date = '2018-01-01'))).toEqual([]);
  });

  it('PaymentSchedule zero_payment_schedule_amount: a schedule with a trigger other than BILL collects a non-zero amount', () => {
    expect(errorsAfter((a) => Object.assign(regular(a), { trigger: 'REGULAR', amount: '0.00' }))).toEqual(['zero_payment_schedule_amount@payment_schedules.1.amount']);
    // An absent amount is the default 0.00.
    expect(
      errorsAfter((a) => {
        Object.assign(regular(a), { trigger: 'BALANCE', balance_threshold: '-20.00' });
        delete regular(a).amount;
      }),
    ).toEqual(['zero_payment_schedule_amount@payment_schedules.1.amount']);
    expect(errorsAfter((a) => Object.assign(regular(a), { trigger: 'BILL', amount: '0.00' }))).toEqual([]);
    expect(errorsAfter((a) => (regular(a).amount = '0'))).toEqual([]);
    expect(errorsAfter((a) => Object.assign(regular(a), { trigger: 'REGULAR', amount: '0.01' }))).toEqual([]);
  });

  it('PaymentSchedule fixed_payment_schedule_missing_frequency: a REGULAR schedule gives its frequency', () => {
    expect(
      errorsAfter((a) => {
        regular(a).trigger = 'REGULAR';
        delete regular(a).frequency;
      }),
    ).toEqual(['fixed_payment_schedule_missing_frequency@payment_schedules.1.frequency']);
    expect(errorsAfter((a) => delete regular(a).frequency)).toEqual([]);
    expect(errorsAfter((a) => (regular(a).trigger = 'REGULAR'))).toEqual([]);
  });

  it('PaymentSchedule fixed_payment_schedule_missing_day_of_month: a REGULAR schedule gives its payment day', () => {
    expect(errorsAfter((a) => Object.assign(regular(a), { trigger: 'REGULAR', day_of_month: null }))).toEqual(['fixed_payment_schedule_missing_day_of_month@payment_schedules.1.day_of_month']);
    expect(errorsAfter((a) => (regular(a).day_of_month = null))).toEqual([]);
    expect(errorsAfter((a) => Object.assign(regular(a), { trigger: 'BALANCE', balance_threshold: '0.00', day_of_month: null }))).toEqual([]);
  });

  it('PaymentSchedule balance_triggered_schedule_missing_threshold: a BALANCE schedule gives the balance that triggers it', () => {
    expect(errorsAfter((a) => (regular(a).trigger = 'BALANCE'))).toEqual(['balance_triggered_schedule_missing_threshold@payment_schedules.1.balance_threshold']);
    expect(errorsAfter((a) => Object.assign(regular(a), { trigger: 'BALANCE', balance_threshold: '-20.00' }))).toEqual([]);
  });

  it('PaymentSchedule debt_repayment_missing_end_date: a debt repayment element comes with the date it stops', () => {
    expect(errorsAfter((a) => delete a.payment_schedules[0].debt_repayment_end_date)).toEqual(['debt_repayment_missing_end_date@payment_schedules.0.debt_repayment_end_date']);
    expect(
      errorsAfter((a) => {
        a.payment_schedules[0].debt_repayment_element = '0.00';
        delete a.payment_schedules[0].debt_repayment_end_date;
      }),
    ).toEqual([]);
  });

  it('PaymentSchedule debt_repayment_end_date_after_schedule_end_date: the debt repayment ends with the schedule at the latest', () => {
    expect(errorsAfter((a) => (a.payment_schedules[0].end_date = '2020-03-25'))).toEqual(['debt_repayment_end_date_after_schedule_end_date@payment_schedules.0.debt_repayment_end_date']);
    expect(errorsAfter((a) => (a.payment_schedules[0].end_date = '2020-03-26'))).toEqual([]);
  });

  it('PaymentSchedule invalid_payment_schedule_to_exempt_from_payment_adequacy: only a REGULAR schedule is exempt from payment adequacy', () => {
    expect(errorsAfter((a) => Object.assign(regular(a), { trigger: 'BALANCE', balance_threshold: '0.00', exempt_from_payment_adequacy: true }))).toEqual([
      'invalid_payment_schedule_to_exempt_from_payment_adequacy@payment_schedules.1.exempt_from_payment_adequacy',
    ]);
    expect(errorsAfter((a) => Object.assign(regular(a), { trigger: 'REGULAR', exempt_from_payment_adequacy: true }))).toEqual([]);
    expect(errorsAfter((a) => (regular(a).exempt_from_payment_adequacy = true))).toEqual([]);
    expect(errorsAfter((a) => Object.assign(regular(a), { trigger: 'BILL', exempt_from_payment_adequacy: false }))).toEqual([]);
  });

  it('PaymentSchedule payment_instalments_not_provided: a PLAN schedule lists its instalments', () => {
    expect(errorsAfter((a) => (regular(a).trigger = 'PLAN'))).toEqual(['payment_instalments_not_provided@payment_schedules.1.instalments']);
    expect(errorsAfter((a) => Object.assign(regular(a), { trigger: 'PLAN', instalments: [] }))).toEqual(['payment_instalments_not_provided@payment_schedules.1.instalments']);
    expect(
      errorsAfter((a) =>
        Object.assign(regular(a), {
          trigger: 'PLAN',
          instalments: [
            { amount: '30.00', payment_date: '2018-02-01' },
            { amount: '30.00', payment_date: '2018-03-01' },
          ],
        }),
      ),
    ).toEqual([]);
  });

  it('PaymentSchedule payment_instalments_do_not_sum_to_total: the instalments add up to the amount, to the penny', () => {
    expect(
      errorsAfter((a) =>
        Object.assign(regular(a), {
          instalments: [
            { amount: '30.00', payment_date: '2018-02-01' },
            { amount: '29.99', payment_date: '2018-03-01' },
          ],
        }),
      ),
    ).toEqual(['payment_instalments_do_not_sum_to_total@payment_schedules.1.amount']);
    // 0.1 + 0.2 is 0.3 in decimals, not in floats.
    expect(
      errorsAfter((a) =>
        Object.assign(regular(a), {
          amount: '0.30',
          instalments: [
            { amount: '0.1', payment_date: '2018-02-01' },
            { amount: 0.2, payment_date: '2018-03-01' },
          ],
        }),
      ),
    ).toEqual([]);
    // Without an amount the total is the default 0.00.
    expect(
      errorsAfter((a) => {
        delete regular(a).amount;
        regular(a).instalments = [{ amount: '10.00', payment_date: '2018-02-01' }];
      }),
    ).toEqual(['payment_instalments_do_not_sum_to_total@payment_schedules.1.amount']);
  });

  it('PaymentSchedule payment_instalments_date_outside_of_payment_schedule_active_period: instalments fall within the schedule', () => {
    const instalments = (first: string, second: string) => [
      { amount: '30.00', payment_date: first },
      { amount: '30.00', payment_date: second },
    ];
    expect(errorsAfter((a) => Object.assign(regular(a), { end_date: '2018-12-31', instalments: instalments('2017-12-31', '2019-01-01') }))).toEqual([
      'payment_instalments_date_outside_of_payment_schedule_active_period@payment_schedules.1.instalments.0.payment_date',
      'payment_instalments_date_outside_of_payment_schedule_active_period@payment_schedules.1.instalments.1.payment_date',
    ]);
    expect(errorsAfter((a) => Object.assign(regular(a), { end_date: '2018-12-31', instalments: instalments('2018-01-01', '2018-12-31') }))).toEqual([]);
    expect(errorsAfter((a) => Object.assign(regular(a), { instalments: instalments('2018-01-01', '2030-01-01') }))).toEqual([]);
  });

  it('PaymentSchedule payment_schedule_delay_must_have_bill_trigger: a payment delay belongs to a BILL schedule', () => {
    expect(errorsAfter((a) => Object.assign(regular(a), { trigger: 'REGULAR', delay_strategy: 'FIXED', delay_days: 3 }))).toEqual([
      'payment_schedule_delay_must_have_bill_trigger@payment_schedules.1.delay_strategy',
    ]);
    // A schedule without a trigger is a REGULAR one, with no bill to delay after.
    expect(errorsAfter((a) => (regular(a).delay_days = 3))).toEqual(['payment_schedule_delay_must_have_bill_trigger@payment_schedules.1.delay_days']);
    expect(errorsAfter((a) => Object.assign(regular(a), { trigger: 'BILL', delay_strategy: 'WORKING_DAYS', delay_days: 3 }))).toEqual([]);
  });

  it('PaymentSchedule payment_schedule_delay_strategy_missing_delay_days: a delay strategy comes with its number of days', () => {
    expect(errorsAfter((a) => Object.assign(regular(a), { trigger: 'BILL', delay_strategy: 'FIXED' }))).toEqual(['payment_schedule_delay_strategy_missing_delay_days@payment_schedules.1.delay_days']);
    expect(errorsAfter((a) => Object.assign(regular(a), { trigger: 'BILL', delay_days: 2 }))).toEqual([]);
  });

  it('PaymentSchedule.instalments children_with_duplicate_values: no two instalments share a payment date and type', () => {
    // An absent payment_type is the empty one.
    expect(
      errorsAfter((a) =>
        Object.assign(regular(a), {
          instalments: [
            { amount: '30.00', payment_date: '2018-02-01', payment_type: '' },
            { amount: '30.00', payment_date: '2018-02-01' },
          ],
        }),
      ),
    ).toEqual(['children_with_duplicate_values@payment_schedules.1.instalments.1.payment_date']);
    expect(
      errorsAfter((a) =>
        Object.assign(regular(a), {
          instalments: [
            { amount: '30.00', payment_date: '2018-02-01', payment_type: '' },
            { amount: '30.00', payment_date: '2018-02-02' },
          ],
        }),
      ),
    ).toEqual([]);
  });
});

describe("the account's payment schedules together", () => {
  const schedule = (fields: Record<string, unknown>) => ({ amount: '60.00', day_of_month: 2, frequency: 'MONTHLY', means: 'DD', ...fields });

  it('EnergyAccount.payment_schedules payment_schedules_ledger_code_uniformity_failed: all schedules give a ledger code, or none', () => {
    expect(errorsAfter((a) => (regular(a).ledger_code = 'MAIN'))).toEqual(['payment_schedules_ledger_code_uniformity_failed@payment_schedules']);
    expect(
      errorsAfter((a) => {
        a.payment_schedules[0].ledger_code = 'MAIN';
        regular(a).ledger_code = 'MAIN';
      }),
    ).toEqual([]);
  });

  it('EnergyAccount.payment_schedules multiple_open_ended_payment_schedules: one open-ended schedule per ledger, debt repayment plans aside', () => {
    expect(errorsAfter((a) => a.payment_schedules.push(schedule({ start_date: '2019-01-01' })))).toEqual([
      'multiple_open_ended_payment_schedules@payment_schedules.2',
      'payment_schedule_date_overlaps@payment_schedules.2.start_date',
    ]);
    // On another ledger, it is another group.
    expect(
      errorsAfter((a) => {
        a.payment_schedules[0].ledger_code = 'MAIN';
        regular(a).ledger_code = 'MAIN';
        a.payment_schedules.push(schedule({ start_date: '2019-01-01', ledger_code: 'SECONDARY' }));
      }),
    ).toEqual([]);
    // A second open-ended debt repayment plan is not counted.
    expect(errorsAfter((a) => a.payment_schedules.push(schedule({ start_date: '2019-01-01', is_debt_repayment_plan: true })))).toEqual([]);
  });

  it('EnergyAccount.payment_schedules payment_schedule_date_overlaps: schedules of one ledger neither start on the same day nor overlap', () => {
    // The same start date.
    expect(errorsAfter((a) => a.payment_schedules.push(schedule({ start_date: '2018-01-01', end_date: '2018-06-30' })))).toEqual([
      'payment_schedule_date_overlaps@payment_schedules.2.start_date',
    ]);
    // Starting while an earlier one still runs.
    expect(
      errorsAfter((a) => {
        regular(a).end_date = '2019-01-01';
        a.payment_schedules.push(schedule({ start_date: '2018-06-01' }));
      }),
    ).toEqual(['payment_schedule_date_overlaps@payment_schedules.2.start_date']);
    // Following on, whichever way the end date is read.
    for (const start of ['2019-01-01', '2019-01-02']) {
      expect(
        errorsAfter((a) => {
          regular(a).end_date = '2019-01-01';
          a.payment_schedules.push(schedule({ start_date: start }));
        }),
      ).toEqual([]);
    }
  });

  it('EnergyAccount.payment_schedules payment_schedule_date_gaps: a schedule starting after today follows on from the ones before it', () => {
    expect(
      errorsAfter((a) => {
        regular(a).end_date = '2026-01-31';
        a.payment_schedules.push(schedule({ start_date: '2026-03-01' }));
      }),
    ).toEqual(['payment_schedule_date_gaps@payment_schedules.2.start_date']);
    for (const start of ['2026-01-31', '2026-02-01']) {
      expect(
        errorsAfter((a) => {
          regular(a).end_date = '2026-01-31';
          a.payment_schedules.push(schedule({ start_date: start }));
        }),
      ).toEqual([]);
    }
    // A gap in the past changes nothing going forward.
    expect(
      errorsAfter((a) => {
        regular(a).end_date = '2018-12-31';
        a.payment_schedules.push(schedule({ start_date: '2019-06-01' }));
      }),
    ).toEqual([]);
    // Debt repayment plans are left out: the open-ended one does not bridge the gap.
    expect(
      errorsAfter((a) => {
        regular(a).end_date = '2025-12-31';
        a.payment_schedules.push(schedule({ start_date: '2026-06-01' }));
      }),
    ).toEqual(['payment_schedule_date_gaps@payment_schedules.2.start_date']);
  });
});

describe('payment instructions and preferences', () => {
  const instruction = (fields: Record<string, unknown> = {}) => ({ instruction_identifier: 'PI-1', reference: 'DD-0001', type: 'DIRECT_DEBIT', vendor: 'STRIPE', ...fields });

  it('EnergyAccount.payment_instructions payment_instructions_ledger_code_uniformity_failed: all instructions give a ledger code, or none', () => {
    expect(errorsAfter((a) => (a.payment_instructions = [instruction({ ledger_code: 'MAIN' }), instruction({ instruction_identifier: 'PI-2' })]))).toEqual([
      'payment_instructions_ledger_code_uniformity_failed@payment_instructions',
    ]);
    expect(errorsAfter((a) => (a.payment_instructions = [instruction({ ledger_code: 'MAIN' }), instruction({ instruction_identifier: 'PI-2', ledger_code: 'MAIN' })]))).toEqual([]);
    expect(errorsAfter((a) => (a.payment_instructions = [instruction(), instruction({ instruction_identifier: 'PI-2' })]))).toEqual([]);
  });

  it('EnergyAccount active_new_payment_preference_invalid_instruction_identifier: an ACTIVE_NEW preference names an instruction of the payload', () => {
    const withPreference = (type: string, id: string, instructions: unknown[] | undefined) =>
      errorsAfter((a) => {
        // A ledger is identified by one of the account's supply points.
        const ledger: string = a.supply_addresses[0].meter_points[0].identifier;
        a.ledgers[0].ledger_identifier = ledger;
        if (instructions) a.payment_instructions = instructions;
        a.payment_preferences = [
          type === 'ACTIVE_NEW'
            ? { type, ledger_identifier: ledger, instruction_reference_params: { instruction_identifier: id } }
            : { type, ledger_identifier: ledger, instruction_reference_params: { vendor_name: 'STRIPE', vendor_reference: id } },
        ];
      });
    expect(withPreference('ACTIVE_NEW', 'PI-9', [instruction()])).toEqual([
      'active_new_payment_preference_invalid_instruction_identifier@payment_preferences.0.instruction_reference_params.instruction_identifier',
    ]);
    expect(withPreference('ACTIVE_NEW', 'PI-1', undefined)).toEqual([
      'active_new_payment_preference_invalid_instruction_identifier@payment_preferences.0.instruction_reference_params.instruction_identifier',
    ]);
    expect(withPreference('ACTIVE_NEW', 'PI-1', [instruction()])).toEqual([]);
    // An existing instruction is already on the platform, not in the payload.
    expect(withPreference('ACTIVE_EXISTING', 'MANDATE-9', undefined)).toEqual([]);
  });
});

describe('payment adequacy reviews', () => {
  it('the review used below is valid', () => {
    expect(withAdequacyChange(() => undefined)).toEqual([]);
  });

  it('EnergyAccount payment_adequacy_changes_and_last_payment_review_date_provided: reviews or a last review date, not both', () => {
    expect(errorsAfter((a) => (a.payment_adequacy_changes = [adequacyChange()]))).toEqual(['payment_adequacy_changes_and_last_payment_review_date_provided@last_payment_review_date']);
    expect(errorsAfter((a) => (a.payment_adequacy_changes = []))).toEqual([]);
  });

  it('EnergyAccount.last_payment_review_date last_payment_review_date_is_future_dated: the last review is not after today', () => {
    expect(errorsAfter((a) => (a.last_payment_review_date = '2026-01-16'))).toEqual(['last_payment_review_date_is_future_dated@last_payment_review_date']);
    expect(errorsAfter((a) => (a.last_payment_review_date = '2026-01-15'))).toEqual([]);
  });

  it('PaymentAdequacyChange payment_adequacy_invalid_dates: a change is created before it is applied', () => {
    expect(withAdequacyChange((c) => (c.applied_at = '2025-05-31T10:00:00Z'))).toEqual(['payment_adequacy_invalid_dates@payment_adequacy_changes.0.applied_at']);
    // The same instant, written in another zone.
    expect(withAdequacyChange((c) => (c.applied_at = '2025-06-01T11:00:00+01:00'))).toEqual(['payment_adequacy_invalid_dates@payment_adequacy_changes.0.applied_at']);
    expect(withAdequacyChange((c) => (c.applied_at = '2025-06-01T10:00:01Z'))).toEqual([]);
  });

  it('PaymentAdequacyChange.applied_at payment_adequacy_invalid_dates: a change is not applied in the future', () => {
    expect(withAdequacyChange((c) => (c.applied_at = '2026-01-16T00:00:00Z'))).toEqual(['payment_adequacy_invalid_dates@payment_adequacy_changes.0.applied_at']);
  });

  it('PaymentAdequacyChange.created_at payment_adequacy_invalid_dates: a change is not created in the future', () => {
    expect(
      withAdequacyChange((c) => {
        c.created_at = '2026-01-16T00:00:00Z';
        c.applied_at = null;
        c.should_not_be_applied_reason = 'Customer in vulnerable circumstances';
      }),
    ).toEqual(['payment_adequacy_invalid_dates@payment_adequacy_changes.0.created_at']);
  });

  it('PaymentAdequacyChange payment_adequacy_missing_reason: a change that was not applied says why', () => {
    expect(withAdequacyChange((c) => (c.applied_at = null))).toEqual(['payment_adequacy_missing_reason@payment_adequacy_changes.0.should_not_be_applied_reason']);
    expect(
      withAdequacyChange((c) => {
        delete c.applied_at;
        c.should_not_be_applied_reason = '';
      }),
    ).toEqual(['payment_adequacy_missing_reason@payment_adequacy_changes.0.should_not_be_applied_reason']);
    expect(
      withAdequacyChange((c) => {
        c.applied_at = null;
        c.should_not_be_applied_reason = 'Customer in vulnerable circumstances';
      }),
    ).toEqual([]);
  });

  it('PaymentAdequacyChange payment_adequacy_should_not_have_been_applied: a change with a reason not to apply it was not applied', () => {
    expect(withAdequacyChange((c) => (c.should_not_be_applied_reason = 'Customer in vulnerable circumstances'))).toEqual([
      'payment_adequacy_should_not_have_been_applied@payment_adequacy_changes.0.applied_at',
    ]);
    expect(withAdequacyChange((c) => (c.should_not_be_applied_reason = null))).toEqual([]);
  });

  it('PaymentAdequacyChange payment_adequacy_monthly_charges_unequal: the average charge is the electricity and gas charges together', () => {
    expect(withAdequacyChange((c) => (c.average_monthly_gas_charge = 3999))).toEqual(['payment_adequacy_monthly_charges_unequal@payment_adequacy_changes.0.average_monthly_charge']);
    expect(
      withAdequacyChange((c) => {
        c.average_monthly_elec_charge = 10000;
        c.average_monthly_gas_charge = 0;
      }),
    ).toEqual([]);
  });

  it('PaymentAdequacyChange payment_adequacy_balance_adjustment_mismatch: a non-zero adjustment is a twelfth of the way to the target balance', () => {
    expect(
      withAdequacyChange((c) => {
        c.balance_adjustment = 900;
        c.new_direct_debit = 10900;
      }),
    ).toEqual(['payment_adequacy_balance_adjustment_mismatch@payment_adequacy_changes.0.balance_adjustment']);
    // A twelfth of 10000 is 833.33...: either whole number next to it will do, nothing further.
    const withGap = (adjustment: number) =>
      withAdequacyChange((c) => {
        c.current_balance = -10000;
        c.balance_adjustment = adjustment;
        c.new_direct_debit = 10000 + adjustment;
      });
    expect(withGap(833)).toEqual([]);
    expect(withGap(834)).toEqual([]);
    expect(withGap(835)).toEqual(['payment_adequacy_balance_adjustment_mismatch@payment_adequacy_changes.0.balance_adjustment']);
    // In credit above the target, the adjustment lowers the payment.
    expect(
      withAdequacyChange((c) => {
        c.current_balance = 6000;
        c.balance_adjustment = -500;
        c.new_direct_debit = 9500;
      }),
    ).toEqual([]);
    // Zero means the gap was too small to act on.
    expect(
      withAdequacyChange((c) => {
        c.balance_adjustment = 0;
        c.new_direct_debit = 10000;
      }),
    ).toEqual([]);
  });

  it('PaymentAdequacyChange payment_adequacy_new_direct_debit_amount_mismatch: the new payment lies between the old one and the charge plus adjustment', () => {
    expect(withAdequacyChange((c) => (c.new_direct_debit = 11001))).toEqual(['payment_adequacy_new_direct_debit_amount_mismatch@payment_adequacy_changes.0.new_direct_debit']);
    expect(withAdequacyChange((c) => (c.new_direct_debit = 8999))).toEqual(['payment_adequacy_new_direct_debit_amount_mismatch@payment_adequacy_changes.0.new_direct_debit']);
    for (const amount of [9000, 10000, 11000]) expect(withAdequacyChange((c) => (c.new_direct_debit = amount))).toEqual([]);
    // When the payment goes down, "between" runs the other way.
    expect(
      withAdequacyChange((c) => {
        c.existing_direct_debit_payment = 12000;
        c.new_direct_debit = 11500;
      }),
    ).toEqual([]);
  });
});

describe('payment plans', () => {
  it('the plan used below is valid', () => {
    expect(withPaymentPlan(() => undefined)).toEqual([]);
  });

  it('PaymentPlan.payments duplicate_payment_component_combinations: a component type is paid once on any date', () => {
    expect(withPaymentPlan((plan) => plan.payments[0]?.amount_components.push({ amount: 0, component_type: 'DEBT' }))).toEqual([
      'duplicate_payment_component_combinations@payment_plans.0.payments.0.amount_components.2.component_type',
    ]);
    // Also across two payments on the same date.
    expect(withPaymentPlan((plan) => plan.payments.push({ payment_date: '2025-02-01', total_amount: 200, amount_components: [{ amount: 200, component_type: 'CHARGES' }] }))).toEqual([
      'duplicate_payment_component_combinations@payment_plans.0.payments.2.amount_components.0.component_type',
    ]);
    expect(withPaymentPlan((plan) => plan.payments.push({ payment_date: '2025-04-01', total_amount: 1500, amount_components: [{ amount: 1500, component_type: 'DEBT' }] }))).toEqual([]);
  });

  it('PaymentPlanPayment payment_plan_payment_components_do_not_sum_to_total: the components add up to the payment', () => {
    expect(withPaymentPlan((plan) => plan.payments[0] && (plan.payments[0].total_amount = 1501))).toEqual(['payment_plan_payment_components_do_not_sum_to_total@payment_plans.0.payments.0.total_amount']);
    expect(withPaymentPlan((plan) => plan.payments[1] && (plan.payments[1].total_amount = 0))).toEqual([]);
  });
});

describe('debts, deposits and dunning', () => {
  it('EnergyAccount debt_and_debts_are_defined: the older single debt or the list of debts, not both', () => {
    expect(errorsAfter((a) => (a.debt = { agency_name: 'Debt R Us', start_date: '2019-03-26' }))).toEqual(['debt_and_debts_are_defined@debt']);
    expect(
      errorsAfter((a) => {
        a.debt = { agency_name: 'Debt R Us', start_date: '2019-03-26' };
        delete a.debts;
      }),
    ).toEqual([]);
    expect(
      errorsAfter((a) => {
        a.debt = { agency_name: 'Debt R Us' };
        a.debts = [];
      }),
    ).toEqual([]);
  });

  it('Debt debt_collection_agency_name_required: a debt proceeding with a start date names its agency', () => {
    expect(errorsAfter((a) => delete a.debts[0].agency_name)).toEqual(['debt_collection_agency_name_required@debts.0.agency_name']);
    expect(
      errorsAfter((a) => {
        delete a.debts;
        a.debt = { start_date: '2019-03-26', agency_name: '' };
      }),
    ).toEqual(['debt_collection_agency_name_required@debt.agency_name']);
    expect(errorsAfter((a) => delete a.debts[0].start_date)).toEqual([]);
    expect(
      errorsAfter((a) => {
        delete a.debts[0].start_date;
        delete a.debts[0].agency_name;
      }),
    ).toEqual([]);
  });

  const deposit = (fields: Record<string, unknown> = {}) => ({ deposit_amount: '150.00', reason: 'Poor credit history', accepted_at: '2024-01-01T09:00:00Z', ...fields });

  it('DepositAgreement last_interest_date_not_allowed: interest is dated only on a fulfilled deposit', () => {
    expect(errorsAfter((a) => (a.deposit_agreements = [deposit({ last_interest_date: '2025-01-01' })]))).toEqual(['last_interest_date_not_allowed@deposit_agreements.0.last_interest_date']);
    expect(errorsAfter((a) => (a.deposit_agreements = [deposit({ fulfilled_at: null, last_interest_date: '2025-01-01' })]))).toEqual([
      'last_interest_date_not_allowed@deposit_agreements.0.last_interest_date',
    ]);
    expect(errorsAfter((a) => (a.deposit_agreements = [deposit({ fulfilled_at: '2024-02-01T09:00:00Z', last_interest_date: '2025-01-01' })]))).toEqual([]);
    expect(errorsAfter((a) => (a.deposit_agreements = [deposit({ last_interest_date: null })]))).toEqual([]);
  });

  it('DepositAgreement fulfilled_at_greater_than_last_interest_date: a deposit is fulfilled by its last interest date', () => {
    expect(errorsAfter((a) => (a.deposit_agreements = [deposit({ fulfilled_at: '2025-01-02T00:00:00Z', last_interest_date: '2025-01-01' })]))).toEqual([
      'fulfilled_at_greater_than_last_interest_date@deposit_agreements.0.fulfilled_at',
    ]);
    // Fulfilled during the day interest was last worked out.
    expect(errorsAfter((a) => (a.deposit_agreements = [deposit({ fulfilled_at: '2025-01-01T16:30:00Z', last_interest_date: '2025-01-01' })]))).toEqual([]);
  });

  it('EnergyAccount.deposit_agreements multiple_active_deposits_not_allowed: one deposit agreement per account', () => {
    expect(errorsAfter((a) => (a.deposit_agreements = [deposit(), deposit({ reason: 'Second' })]))).toEqual(['multiple_active_deposits_not_allowed@deposit_agreements.1']);
    expect(errorsAfter((a) => (a.deposit_agreements = [deposit()]))).toEqual([]);
  });
});

describe('contribution agreements', () => {
  it('the agreement used below is valid', () => {
    expect(errorsAfter((a) => (a.contribution_agreements = [contributionAgreement()]))).toEqual([]);
  });

  it('ContributionSchemeAgreement start_date_later_than_end_date: an agreement does not end before it starts', () => {
    expect(errorsAfter((a) => (a.contribution_agreements = [{ ...contributionAgreement(), periods: [], active_period_end_date: '2023-12-31' }]))).toEqual([
      'start_date_later_than_end_date@contribution_agreements.0.active_period_end_date',
    ]);
    expect(errorsAfter((a) => (a.contribution_agreements = [{ ...contributionAgreement(), periods: [], active_period_end_date: '2024-01-01' }]))).toEqual([]);
  });

  it('ContributionSchemePeriod start_date_later_than_end_date: a period does not end before it starts', () => {
    const agreement = contributionAgreement();
    agreement.periods = [{ start_date: '2024-03-01', end_date: '2024-02-01' }];
    expect(errorsAfter((a) => (a.contribution_agreements = [agreement]))).toEqual(['start_date_later_than_end_date@contribution_agreements.0.periods.0.end_date']);
  });

  it('ContributionSchemeAgreement invalid_contribution_period_start_date: periods start within the agreement', () => {
    const agreement = contributionAgreement();
    agreement.periods = [{ start_date: '2023-12-31', end_date: '2024-07-01' }];
    expect(errorsAfter((a) => (a.contribution_agreements = [agreement]))).toEqual(['invalid_contribution_period_start_date@contribution_agreements.0.periods.0.start_date']);
  });

  it('ContributionSchemeAgreement invalid_contribution_period_end_date: periods end within the agreement', () => {
    const agreement = contributionAgreement();
    agreement.periods = [{ start_date: '2024-07-01', end_date: '2025-01-01' }];
    expect(errorsAfter((a) => (a.contribution_agreements = [agreement]))).toEqual(['invalid_contribution_period_end_date@contribution_agreements.0.periods.0.end_date']);
    // An open-ended agreement bounds no period's end.
    expect(errorsAfter((a) => (a.contribution_agreements = [{ ...agreement, active_period_end_date: null }]))).toEqual([]);
  });

  it('ContributionSchemeAgreement overlapping_contribution_periods: the periods of an agreement do not overlap', () => {
    const agreement = contributionAgreement();
    agreement.periods = [
      { start_date: '2024-01-01', end_date: '2024-07-01' },
      { start_date: '2024-06-30', end_date: '2024-12-31' },
    ];
    expect(errorsAfter((a) => (a.contribution_agreements = [agreement]))).toEqual(['overlapping_contribution_periods@contribution_agreements.0.periods.1.start_date']);
  });

  it('EnergyAccount.contribution_agreements overlapping_contribution_agreements: agreements to one scheme do not overlap', () => {
    const second = (fields: Record<string, unknown>) => ({ ...contributionAgreement(), periods: [], ...fields });
    expect(errorsAfter((a) => (a.contribution_agreements = [contributionAgreement(), second({ active_period_start_date: '2024-12-31', active_period_end_date: null })]))).toEqual([
      'overlapping_contribution_agreements@contribution_agreements.1.active_period_start_date',
    ]);
    // An open-ended agreement runs on into any later one.
    expect(
      errorsAfter((a) => (a.contribution_agreements = [{ ...contributionAgreement(), active_period_end_date: null }, second({ active_period_start_date: '2030-01-01', active_period_end_date: null })])),
    ).toEqual(['overlapping_contribution_agreements@contribution_agreements.1.active_period_start_date']);
    expect(errorsAfter((a) => (a.contribution_agreements = [contributionAgreement(), second({ active_period_start_date: '2025-01-01', active_period_end_date: null })]))).toEqual([]);
    expect(errorsAfter((a) => (a.contribution_agreements = [contributionAgreement(), second({ scheme: 'TREE_FUND' })]))).toEqual([]);
  });
});

describe('occupiers and FiT', () => {
  it('EnergyAccount dd_reference_for_occupier_account: an occupier account has no direct debit reference', () => {
    expect(
      errorsAfter((a) => {
        a.account_type = 'DOMESTIC_OCCUPIER';
        a.dd_reference = 'DD-0001';
      }),
    ).toEqual(['dd_reference_for_occupier_account@dd_reference']);
    expect(
      errorsAfter((a) => {
        a.unknown_occupier = true;
        a.customers = [];
        a.dd_reference = 'DD-0001';
      }),
    ).toEqual(['dd_reference_for_occupier_account@dd_reference']);
    expect(errorsAfter((a) => (a.dd_reference = 'DD-0001'))).toEqual([]);
    expect(errorsAfter((a) => (a.account_type = 'DOMESTIC_OCCUPIER'))).toEqual([]);
  });

  it('EnergyFit payment_instruction_details_incomplete: FiT payments by BACS name the vendor and the mandate', () => {
    expect(errorsAfter((a) => (a.fit = fit()))).toEqual([]);
    expect(
      errorsAfter((a) => {
        a.fit = fit();
        delete a.fit.vendor_name;
        delete a.fit.instruction_reference;
      }),
    ).toEqual(['payment_instruction_details_incomplete@fit.vendor_name', 'payment_instruction_details_incomplete@fit.instruction_reference']);
    expect(errorsAfter((a) => (a.fit = { ...fit(), instruction_reference: '' }))).toEqual(['payment_instruction_details_incomplete@fit.instruction_reference']);
    expect(
      errorsAfter((a) => {
        a.fit = { ...fit(), payment_method: 'CHEQUE' };
        delete a.fit.vendor_name;
        delete a.fit.instruction_reference;
      }),
    ).toEqual([]);
  });
});
