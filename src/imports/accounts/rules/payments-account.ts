import type { CrossFieldContext } from '../../shared/fields.js';
import { dayOf } from '../../../contract/rules.js';
import type { CrossRuleSpec, RuleSpec } from '../../../contract/rules.js';
import { parsedString, shown } from './helpers.js';
import { fieldsOf, listOf, provided, type Fields } from './payments-fields.js';

// Rules that relate several payment-related parts of the account to each other, and the rules on
// debts, deposits, contribution agreements and FiT payment details.

/** A rule on one object of `schema`, reading its fields; `report` puts a problem at one of them. */
export function objectRule(schema: string, codes: string[], check: (f: Fields, report: (code: string, message: string, ...path: PropertyKey[]) => void, ctx: CrossFieldContext) => void): CrossRuleSpec {
  return {
    at: schema,
    codes,
    cross: (value, ctx) => {
      const f = fieldsOf(value, ctx);
      if (!f.record) return;
      check(f, (code, message, ...path) => ctx.addIssue(code, message, path), ctx);
    },
  };
}

const OCCUPIER_ACCOUNT_TYPES = new Set(['DOMESTIC_OCCUPIER', 'BUSINESS_OCCUPIER']);

const accountLevel: RuleSpec[] = [
  objectRule('EnergyAccount', ['active_new_payment_preference_invalid_instruction_identifier'], (account, report, ctx) => {
    const preferences = listOf(account.record, 'payment_preferences');
    if (preferences.length === 0) return;
    const instructions = account.record?.payment_instructions;
    if (instructions !== undefined && !Array.isArray(instructions)) return;
    // The identifiers the payload's own instructions declare. If one of them did not parse, what it
    // was meant to be is unknown, and no reference to it can be judged.
    const known = new Set<string>();
    for (const [j, entry] of listOf(account.record, 'payment_instructions').entries()) {
      const f = fieldsOf(entry, ctx, ['payment_instructions', j]);
      if (!f.record || f.absent('instruction_identifier')) continue;
      const id = f.str('instruction_identifier');
      if (id === undefined) return;
      known.add(id);
    }
    preferences.forEach((pref, i) => {
      const f = fieldsOf(pref, ctx, ['payment_preferences', i]);
      if (f.str('type') !== 'ACTIVE_NEW') return;
      const id = parsedString(f.record?.instruction_reference_params, 'instruction_identifier', ctx, ['payment_preferences', i, 'instruction_reference_params']);
      if (id === undefined || known.has(id)) return;
      report(
        'active_new_payment_preference_invalid_instruction_identifier',
        `No payment instruction of this account has the instruction_identifier ${shown(id)}.`,
        'payment_preferences',
        i,
        'instruction_reference_params',
        'instruction_identifier',
      );
    });
  }),
  objectRule('EnergyAccount', ['payment_adequacy_changes_and_last_payment_review_date_provided'], (account, report) => {
    // The reviews' own dates say when the last one was: a separate review date could contradict them.
    if (provided(account.record, 'payment_adequacy_changes') && provided(account.record, 'last_payment_review_date')) {
      report('payment_adequacy_changes_and_last_payment_review_date_provided', 'Give either payment_adequacy_changes or last_payment_review_date, not both.', 'last_payment_review_date');
    }
  }),
  objectRule('EnergyAccount', ['dd_reference_for_occupier_account'], (account, report) => {
    // An occupier account (by its type, or an unknown occupier) has no known payer to hold a mandate.
    const type = account.str('account_type');
    const occupier = account.bool('unknown_occupier') === true || (type !== undefined && OCCUPIER_ACCOUNT_TYPES.has(type));
    if (occupier && provided(account.record, 'dd_reference')) {
      report('dd_reference_for_occupier_account', `An occupier account (${type ?? 'unknown occupier'}) cannot have a direct debit reference.`, 'dd_reference');
    }
  }),
  objectRule('EnergyAccount', ['debt_and_debts_are_defined'], (account, report) => {
    if (provided(account.record, 'debt') && provided(account.record, 'debts')) {
      report('debt_and_debts_are_defined', 'Give the debts list or the older single debt, not both.', 'debt');
    }
  }),
  {
    // Two agreements to the same scheme may not cover the same day; both periods include their ends,
    // and an agreement without an end date runs on.
    at: 'EnergyAccount.contribution_agreements',
    codes: ['overlapping_contribution_agreements'],
    cross: (list, ctx) => {
      if (!Array.isArray(list)) return;
      const seen: { i: number; scheme: string; start: string; end: string | undefined }[] = [];
      list.forEach((entry, i) => {
        const f = fieldsOf(entry, ctx, [i]);
        const scheme = f.str('scheme');
        const start = f.str('active_period_start_date');
        if (scheme === undefined || start === undefined || !f.parsedOrAbsent('active_period_end_date')) return;
        const end = f.str('active_period_end_date');
        if (end !== undefined && end < start) return;
        const other = seen.find((a) => a.scheme === scheme && (a.end === undefined || start <= a.end) && (end === undefined || a.start <= end));
        if (other) {
          ctx.addIssue('overlapping_contribution_agreements', `Agreement ${String(other.i)} to the scheme ${shown(scheme)} covers some of the same days.`, [i, 'active_period_start_date']);
        }
        seen.push({ i, scheme, start, end });
      });
    },
  },
  {
    // The platform takes at most one deposit agreement per account.
    at: 'EnergyAccount.deposit_agreements',
    codes: ['multiple_active_deposits_not_allowed'],
    cross: (list, ctx) => {
      if (!Array.isArray(list)) return;
      for (let i = 1; i < list.length; i++) {
        ctx.addIssue('multiple_active_deposits_not_allowed', `An account may have only one deposit agreement; this is number ${String(i + 1)}.`, [i]);
      }
    },
  },
];

const parts: RuleSpec[] = [
  objectRule(
    'ContributionSchemeAgreement',
    ['invalid_contribution_period_start_date', 'invalid_contribution_period_end_date', 'overlapping_contribution_periods'],
    (agreement, report, ctx) => {
      const activeStart = agreement.str('active_period_start_date');
      const activeEnd = agreement.str('active_period_end_date');
      // A period's end_date is exclusive (the day after its last day).
      const seen: { i: number; start: string; end: string }[] = [];
      listOf(agreement.record, 'periods').forEach((entry, i) => {
        const p = fieldsOf(entry, ctx, ['periods', i]);
        const start = p.str('start_date');
        const end = p.str('end_date');
        if (start !== undefined && activeStart !== undefined && start < activeStart) {
          report('invalid_contribution_period_start_date', `This period starts on ${start}, before the agreement does (${activeStart}).`, 'periods', i, 'start_date');
        }
        // As the document puts it: the period's end date may not pass the agreement's last day.
        if (end !== undefined && activeEnd !== undefined && end > activeEnd) {
          report('invalid_contribution_period_end_date', `This period ends on ${end}, after the agreement does (${activeEnd}).`, 'periods', i, 'end_date');
        }
        if (start === undefined || end === undefined || end < start) return;
        const other = seen.find((a) => start < a.end && a.start < end);
        if (other) report('overlapping_contribution_periods', `This period (${start} to ${end}) overlaps period ${String(other.i)} (${other.start} to ${other.end}).`, 'periods', i, 'start_date');
        seen.push({ i, start, end });
      });
    },
  ),
  objectRule('Debt', ['debt_collection_agency_name_required'], (debt, report) => {
    const start = debt.str('start_date');
    if (start !== undefined && !provided(debt.record, 'agency_name')) {
      report('debt_collection_agency_name_required', `A debt proceeding starting on ${start} needs the name of the collecting agency.`, 'agency_name');
    }
  }),
  objectRule('DepositAgreement', ['last_interest_date_not_allowed', 'fulfilled_at_greater_than_last_interest_date'], (deposit, report) => {
    if (deposit.absent('last_interest_date')) return;
    if (deposit.absent('fulfilled_at')) {
      report('last_interest_date_not_allowed', 'Interest is paid only on a fulfilled deposit: give fulfilled_at, or no last_interest_date.', 'last_interest_date');
      return;
    }
    const last = deposit.str('last_interest_date');
    const fulfilled = deposit.str('fulfilled_at');
    // Interest may be calculated on the day the deposit was paid: compare calendar days.
    if (last !== undefined && fulfilled !== undefined && dayOf(fulfilled) > last) {
      report('fulfilled_at_greater_than_last_interest_date', `The deposit was fulfilled on ${dayOf(fulfilled)}, after its last interest date (${last}).`, 'fulfilled_at');
    }
  }),
  objectRule('EnergyFit', ['payment_instruction_details_incomplete'], (fit, report) => {
    if (fit.str('payment_method') !== 'BACS') return;
    for (const key of ['vendor_name', 'instruction_reference']) {
      if (!provided(fit.record, key)) report('payment_instruction_details_incomplete', `FiT payments by BACS need the ${key} of the mandate.`, key);
    }
  }),
];

export const paymentAccountRules: RuleSpec[] = [...accountLevel, ...parts];
