import { Decimal } from 'decimal.js';
import { because, compareMoments, type NotImplemented, type RuleSpec } from '../../../contract/rules.js';
import { parsedString } from './helpers.js';
import { objectRule, paymentAccountRules } from './payments-account.js';
import { dec, fieldsOf, listOf, provided } from './payments-fields.js';
import { ledgerCodeUniformity, paymentScheduleRules } from './payments-schedules.js';

// Payment schedules (payments-schedules.ts), the account-level payment rules, debts, deposits,
// contribution agreements and FiT (payments-account.ts), and here payment adequacy reviews, payment
// plans and payment instructions. Amounts are summed and compared as decimals, never as floats.

const adequacyRules: RuleSpec[] = [
  objectRule('PaymentAdequacyChange', ['payment_adequacy_invalid_dates'], (change, report) => {
    const created = change.str('created_at');
    const applied = change.str('applied_at');
    if (created !== undefined && applied !== undefined && compareMoments(applied, created) <= 0) {
      report('payment_adequacy_invalid_dates', `The change was applied (${applied}) before it was created (${created}): it must be created first.`, 'applied_at');
    }
  }),
  objectRule('PaymentAdequacyChange', ['payment_adequacy_missing_reason', 'payment_adequacy_should_not_have_been_applied'], (change, report) => {
    // A review either changed the payment (applied_at) or records why it did not; never both.
    const applied = !change.absent('applied_at');
    const reason = provided(change.record, 'should_not_be_applied_reason');
    if (!applied && !reason) report('payment_adequacy_missing_reason', 'A change that was not applied needs the should_not_be_applied_reason.', 'should_not_be_applied_reason');
    if (applied && reason) report('payment_adequacy_should_not_have_been_applied', 'A change with a reason not to apply it cannot have been applied: give applied_at or the reason, not both.', 'applied_at');
  }),
  objectRule('PaymentAdequacyChange', ['payment_adequacy_monthly_charges_unequal'], (change, report) => {
    const total = change.int('average_monthly_charge');
    const elec = change.int('average_monthly_elec_charge');
    const gas = change.int('average_monthly_gas_charge');
    if (total === undefined || elec === undefined || gas === undefined) return;
    const sum = dec(elec).plus(gas);
    if (!sum.equals(total)) {
      report('payment_adequacy_monthly_charges_unequal', `The average monthly charge (${String(total)}) is not the electricity and gas charges together (${sum.toString()}).`, 'average_monthly_charge');
    }
  }),
  objectRule('PaymentAdequacyChange', ['payment_adequacy_balance_adjustment_mismatch'], (change, report) => {
    // The adjustment spreads the way to the target balance over the 12 months of the review. The
    // amounts are whole pence and the document does not say how a twelfth is rounded, so any whole
    // amount less than a penny away from it is accepted.
    const adjustment = change.int('balance_adjustment');
    const target = change.int('target_balance');
    const current = change.int('current_balance');
    if (adjustment === undefined || target === undefined || current === undefined || adjustment === 0) return;
    const monthly = dec(target).minus(current).div(12);
    if (dec(adjustment).minus(monthly).abs().greaterThanOrEqualTo(1)) {
      report(
        'payment_adequacy_balance_adjustment_mismatch',
        `A balance adjustment of ${String(adjustment)} does not close the gap from ${String(current)} to ${String(target)} over 12 months (${monthly.toDecimalPlaces(2).toString()} a month).`,
        'balance_adjustment',
      );
    }
  }),
  objectRule('PaymentAdequacyChange', ['payment_adequacy_new_direct_debit_amount_mismatch'], (change, report) => {
    // The new payment lies between the old one and the most the review can ask for (the average
    // charge plus the adjustment), whichever of the two is higher.
    const next = change.int('new_direct_debit');
    const existing = change.int('existing_direct_debit_payment');
    const average = change.int('average_monthly_charge');
    const adjustment = change.int('balance_adjustment');
    if (next === undefined || existing === undefined || average === undefined || adjustment === undefined) return;
    const most = dec(average).plus(adjustment);
    const low = Decimal.min(most, existing);
    const high = Decimal.max(most, existing);
    if (dec(next).lessThan(low) || dec(next).greaterThan(high)) {
      report('payment_adequacy_new_direct_debit_amount_mismatch', `The new direct debit (${String(next)}) must lie between the existing payment (${String(existing)}) and the average charge plus the adjustment (${most.toString()}).`, 'new_direct_debit');
    }
  }),
];

const planRules: RuleSpec[] = [
  {
    // A component type is paid at most once on any one date of the plan, even across payments.
    at: 'PaymentPlan.payments',
    codes: ['duplicate_payment_component_combinations'],
    cross: (list, ctx) => {
      if (!Array.isArray(list)) return;
      const seen = new Set<string>();
      list.forEach((payment, i) => {
        const date = parsedString(payment, 'payment_date', ctx, [i]);
        if (date === undefined) return;
        listOf(payment, 'amount_components').forEach((component, j) => {
          const type = parsedString(component, 'component_type', ctx, [i, 'amount_components', j]);
          if (type === undefined) return;
          const key = JSON.stringify([date, type]);
          if (seen.has(key)) ctx.addIssue('duplicate_payment_component_combinations', `The component ${JSON.stringify(type)} is already paid on ${date}.`, [i, 'amount_components', j, 'component_type']);
          seen.add(key);
        });
      });
    },
  },
  objectRule('PaymentPlanPayment', ['payment_plan_payment_components_do_not_sum_to_total'], (payment, report, ctx) => {
    // A payment not broken into components has an empty list, which has nothing to add up.
    const total = payment.int('total_amount');
    const components = listOf(payment.record, 'amount_components');
    if (total === undefined || components.length === 0) return;
    let sum = dec(0);
    for (const [j, component] of components.entries()) {
      const amount = fieldsOf(component, ctx, ['amount_components', j]).int('amount');
      if (amount === undefined) return;
      sum = sum.plus(amount);
    }
    if (!sum.equals(total)) report('payment_plan_payment_components_do_not_sum_to_total', `The components add up to ${sum.toString()}, not the payment's total of ${String(total)}.`, 'total_amount');
  }),
];

/** Rules of the document for this part of the account (see index.ts). */
export function paymentRules(today: () => string): RuleSpec[] {
  return [
    ...paymentScheduleRules(today),
    ledgerCodeUniformity('EnergyAccount.payment_instructions', 'payment_instructions_ledger_code_uniformity_failed', 'payment instructions'),
    ...adequacyRules,
    ...planRules,
    ...paymentAccountRules,
  ];
}

/** Rules of the document for this part of the account that are not applied, each with its reason. */
export const paymentRulesNotImplemented: NotImplemented[] = [
  { at: 'ContributionSchemeAgreement.scheme', codes: ['invalid_contribution_scheme'], reason: because.referenceData('contribution schemes') },
  { at: 'Debt', codes: ['debt_collection_agency_does_not_exist'], reason: because.referenceData('debt collection agencies') },
  { at: 'Debt.cais_reference', codes: ['cais_reference_already_in_use_on_another_account'], reason: because.referenceData('CAIS references of its other accounts') },
  { at: 'Debt.cais_reference', codes: ['cais_references_not_supported'], reason: because.configuration('CAIS references supported') },
  {
    at: 'DunningPath.start_date',
    codes: ['date_in_past'],
    reason: because.unpublished('which past start dates it refuses: the published example starts its dunning path years before today'),
  },
  { at: 'EnergyAccount.dunning_path', codes: ['dunning_path_not_found'], reason: because.configuration('available dunning paths') },
  { at: 'PaymentInstruction', codes: ['incomplete_payments_not_enabled'], reason: because.unpublished('what this rule checks: it has a code but no name or description') },
  { at: 'PaymentInstruction.ledger_code', codes: ['ledger_code_does_not_exist'], reason: because.referenceData('ledger types') },
  { at: 'PaymentPlan.strategy_name', codes: ['payment_plan_strategy_does_not_exist'], reason: because.referenceData('payment plan strategies') },
  { at: 'PaymentSchedule', codes: ['fixed_payment_schedule_amount_out_of_range'], reason: because.configuration('fixed payment schedule amount limits') },
  {
    at: 'PaymentSchedule',
    codes: ['standalone_payment_request_method_code_unexpected', 'standalone_payment_request_method_code_invalid'],
    reason: because.cannotArise('the document gives a payment schedule no standalone_payment_request_method_code field, so a schedule that sends one is refused as unknown_field'),
  },
  { at: 'PaymentSchedule.day_of_month', codes: ['invalid_payment_day_for_payment_schedule'], reason: because.configuration('minimum and maximum payment days') },
  { at: 'PaymentSchedule.ledger_code', codes: ['ledger_code_does_not_exist'], reason: because.referenceData('ledger types') },
];
