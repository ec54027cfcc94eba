import type { CrossFieldContext } from '../../shared/fields.js';
import { isRecord } from '../../shared/fields.js';
import type { CrossRuleSpec, RuleSpec } from '../../../contract/rules.js';
import { parsedString, uniqueInList } from './helpers.js';
import { dayAfter, dec, fieldsOf, type Fields } from './payments-fields.js';

// Payment schedules: each schedule on its own (PaymentSchedule), its instalments, and the account's
// list of schedules taken together (EnergyAccount.payment_schedules).
//
// The document says a schedule without a trigger is a fixed REGULAR one, but the published example's
// schedules carry no trigger, so the rules that depend on a trigger value apply only when that
// trigger is given. The one exception is the delay: a delay belongs to a BILL trigger, and a schedule
// with no trigger has none.

/** A rule on one payment schedule, reading its fields; `report` puts a problem at one of them. */
function scheduleRule(code: string | string[], check: (s: Fields, report: (code: string, message: string, ...path: PropertyKey[]) => void) => void): CrossRuleSpec {
  return {
    at: 'PaymentSchedule',
    codes: Array.isArray(code) ? code : [code],
    cross: (value, ctx) => {
      const s = fieldsOf(value, ctx);
      if (!s.record) return;
      check(s, (c, message, ...path) => ctx.addIssue(c, message, path));
    },
  };
}

/** The schedule's trigger, when one was given and parsed. */
const triggerOf = (s: Fields) => s.str('trigger');

const scheduleRules: RuleSpec[] = [
  scheduleRule('zero_payment_schedule_amount', (s, report) => {
    const trigger = triggerOf(s);
    if (trigger === undefined || trigger === 'BILL') return;
    // An absent amount stands for the document's default of 0.00.
    if (!s.absent('amount') && s.str('amount') === undefined) return;
    const amount = s.str('amount') ?? '0';
    if (dec(amount).isZero()) report('zero_payment_schedule_amount', `A ${trigger} schedule collects a fixed amount: give an amount other than zero.`, 'amount');
  }),
  scheduleRule('fixed_payment_schedule_missing_frequency', (s, report) => {
    if (triggerOf(s) === 'REGULAR' && s.absent('frequency')) report('fixed_payment_schedule_missing_frequency', 'A REGULAR schedule needs a frequency.', 'frequency');
  }),
  scheduleRule('fixed_payment_schedule_missing_day_of_month', (s, report) => {
    if (triggerOf(s) === 'REGULAR' && s.absent('day_of_month')) report('fixed_payment_schedule_missing_day_of_month', 'A REGULAR schedule needs the day of the month it collects on.', 'day_of_month');
  }),
  scheduleRule('balance_triggered_schedule_missing_threshold', (s, report) => {
    if (triggerOf(s) === 'BALANCE' && s.absent('balance_threshold')) {
      report('balance_triggered_schedule_missing_threshold', 'A BALANCE schedule needs the balance_threshold below which it collects.', 'balance_threshold');
    }
  }),
  scheduleRule('invalid_payment_schedule_to_exempt_from_payment_adequacy', (s, report) => {
    const trigger = triggerOf(s);
    if (s.bool('exempt_from_payment_adequacy') === true && trigger !== undefined && trigger !== 'REGULAR') {
      report('invalid_payment_schedule_to_exempt_from_payment_adequacy', `Only a REGULAR schedule may be exempt from payment adequacy, not a ${trigger} one.`, 'exempt_from_payment_adequacy');
    }
  }),
  scheduleRule('payment_instalments_not_provided', (s, report) => {
    if (triggerOf(s) !== 'PLAN') return;
    const instalments = s.record?.instalments;
    if (s.absent('instalments') || (Array.isArray(instalments) && instalments.length === 0)) {
      report('payment_instalments_not_provided', 'A PLAN schedule needs its instalments.', 'instalments');
    }
  }),
  scheduleRule('debt_repayment_missing_end_date', (s, report) => {
    // A zero element adds nothing to the amount, so there is no repayment to end.
    const element = s.str('debt_repayment_element');
    if (element !== undefined && !dec(element).isZero() && s.absent('debt_repayment_end_date')) {
      report('debt_repayment_missing_end_date', 'A schedule with a debt_repayment_element needs the debt_repayment_end_date when the repayment stops.', 'debt_repayment_end_date');
    }
  }),
  scheduleRule('debt_repayment_end_date_after_schedule_end_date', (s, report) => {
    const repaymentEnd = s.str('debt_repayment_end_date');
    const end = s.str('end_date');
    if (repaymentEnd !== undefined && end !== undefined && repaymentEnd > end) {
      report('debt_repayment_end_date_after_schedule_end_date', `The debt repayment (ending ${repaymentEnd}) cannot outlast the schedule (ending ${end}).`, 'debt_repayment_end_date');
    }
  }),
  scheduleRule(['payment_schedule_delay_must_have_bill_trigger', 'payment_schedule_delay_strategy_missing_delay_days'], (s, report) => {
    const strategy = s.str('delay_strategy');
    const days = s.int('delay_days');
    if (strategy === undefined && days === undefined) return;
    const trigger = triggerOf(s);
    if (trigger !== 'BILL' && s.parsedOrAbsent('trigger')) {
      report(
        'payment_schedule_delay_must_have_bill_trigger',
        `A payment delay applies only to a BILL schedule; this one's trigger is ${trigger ?? 'not given (REGULAR)'}.`,
        strategy !== undefined ? 'delay_strategy' : 'delay_days',
      );
    }
    if (strategy !== undefined && s.absent('delay_days')) {
      report('payment_schedule_delay_strategy_missing_delay_days', `A ${strategy} delay needs its delay_days.`, 'delay_days');
    }
  }),
  {
    at: 'PaymentSchedule',
    codes: ['payment_instalments_do_not_sum_to_total', 'payment_instalments_date_outside_of_payment_schedule_active_period'],
    cross: (value, ctx) => {
      const s = fieldsOf(value, ctx);
      const instalments = s.record?.instalments;
      if (!Array.isArray(instalments) || instalments.length === 0) return;
      checkInstalmentTotal(s, instalments, ctx);
      checkInstalmentDates(s, instalments, ctx);
    },
  },
  uniqueInList(
    'PaymentSchedule.instalments',
    'children_with_duplicate_values',
    (entry, i, ctx) => {
      const date = parsedString(entry, 'payment_date', ctx, [i]);
      if (date === undefined || !isRecord(entry)) return undefined;
      // An instalment without a payment_type has the only type there is, the empty one.
      const type = entry.payment_type === undefined ? '' : parsedString(entry, 'payment_type', ctx, [i]);
      return type === undefined ? undefined : JSON.stringify([date, type]);
    },
    (key) => {
      const [date] = JSON.parse(key) as [string, string];
      return `Another instalment of this schedule has the same payment_date (${date}) and payment_type.`;
    },
    (i) => [i, 'payment_date'],
  ),
];

/** The instalments add up to the schedule's amount (an absent amount is the default 0.00). */
function checkInstalmentTotal(s: Fields, instalments: unknown[], ctx: CrossFieldContext): void {
  if (!s.absent('amount') && s.str('amount') === undefined) return;
  let sum = dec(0);
  for (let i = 0; i < instalments.length; i++) {
    const amount = parsedString(instalments[i], 'amount', ctx, ['instalments', i]);
    if (amount === undefined) return;
    sum = sum.plus(dec(amount));
  }
  const total = dec(s.str('amount') ?? '0');
  if (!sum.equals(total)) {
    ctx.addIssue('payment_instalments_do_not_sum_to_total', `The instalments add up to ${sum.toFixed(2)}, not the schedule's amount of ${total.toFixed(2)}.`, ['amount']);
  }
}

/** Every instalment falls on or between the schedule's start_date and end_date (when it has one). */
function checkInstalmentDates(s: Fields, instalments: unknown[], ctx: CrossFieldContext): void {
  const start = s.str('start_date');
  if (start === undefined || !s.parsedOrAbsent('end_date')) return;
  const end = s.str('end_date');
  instalments.forEach((entry, i) => {
    const date = parsedString(entry, 'payment_date', ctx, ['instalments', i]);
    if (date === undefined) return;
    if (date < start || (end !== undefined && date > end)) {
      ctx.addIssue(
        'payment_instalments_date_outside_of_payment_schedule_active_period',
        `An instalment on ${date} falls outside the schedule's period (${start} to ${end ?? 'open-ended'}).`,
        ['instalments', i, 'payment_date'],
      );
    }
  });
}

/* ------------------------------------------------------------------------------------------ */
/* The account's schedules taken together                                                      */
/* ------------------------------------------------------------------------------------------ */

/** One schedule that is not a debt repayment plan: its index, start and end (undefined: open-ended). */
interface Span {
  i: number;
  start: string;
  end: string | undefined;
}

/**
 * The account's schedules that are not debt repayment plans, grouped by ledger_code (schedules
 * without one form one group), each group sorted by start date. A schedule whose dates, ledger or
 * kind did not parse, or whose end comes before its start (refused on its own), is left out.
 */
function scheduleGroups(list: unknown[], ctx: CrossFieldContext): Span[][] {
  const groups = new Map<string, Span[]>();
  list.forEach((entry, i) => {
    const s = fieldsOf(entry, ctx, [i]);
    if (!s.record) return;
    const isDebtPlan = s.absent('is_debt_repayment_plan') ? false : s.bool('is_debt_repayment_plan');
    if (isDebtPlan !== false) return;
    const start = s.str('start_date');
    if (start === undefined || !s.parsedOrAbsent('end_date') || !s.parsedOrAbsent('ledger_code')) return;
    const end = s.str('end_date');
    if (end !== undefined && end < start) return;
    const key = JSON.stringify(s.str('ledger_code') ?? null);
    groups.set(key, [...(groups.get(key) ?? []), { i, start, end }]);
  });
  return [...groups.values()].map((g) => [...g].sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : a.i - b.i)));
}

/** Either every entry of a list gives a ledger_code or none does; one problem at the list. */
export function ledgerCodeUniformity(at: string, code: string, what: string): CrossRuleSpec {
  return {
    at,
    codes: [code],
    cross: (list, ctx) => {
      if (!Array.isArray(list)) return;
      const entries = list.filter(isRecord);
      const withCode = entries.filter((e) => e.ledger_code !== undefined && e.ledger_code !== null).length;
      if (withCode > 0 && withCode < entries.length) {
        ctx.addIssue(code, `${String(withCode)} of the ${String(entries.length)} ${what} give a ledger_code: give one on all of them or on none.`, []);
      }
    },
  };
}

function scheduleListRules(today: () => string): RuleSpec[] {
  const at = 'EnergyAccount.payment_schedules';
  return [
    ledgerCodeUniformity(at, 'payment_schedules_ledger_code_uniformity_failed', 'payment schedules'),
    {
      at,
      codes: ['multiple_open_ended_payment_schedules'],
      cross: (list, ctx) => {
        if (!Array.isArray(list)) return;
        for (const group of scheduleGroups(list, ctx)) {
          const open = group.filter((s) => s.end === undefined).sort((a, b) => a.i - b.i);
          for (const s of open.slice(1)) {
            ctx.addIssue('multiple_open_ended_payment_schedules', `Schedule ${String(open[0]?.i)} on this ledger is already open-ended: only one schedule (other than a debt repayment plan) may have no end_date.`, [s.i]);
          }
        }
      },
    },
    {
      // Both of the document's rules with this code: schedules of one ledger may not start on the
      // same day, nor overlap. Whether an end_date is the last day or the day after is not said, so
      // a schedule may start on the day the one before it ends.
      at,
      codes: ['payment_schedule_date_overlaps'],
      cross: (list, ctx) => {
        if (!Array.isArray(list)) return;
        for (const group of scheduleGroups(list, ctx)) {
          group.forEach((b, k) => {
            const earlier = group.slice(0, k);
            const same = earlier.find((a) => a.start === b.start);
            const overlapping = earlier.find((a) => a.end === undefined || b.start < a.end);
            if (same) ctx.addIssue('payment_schedule_date_overlaps', `Schedule ${String(same.i)} on this ledger also starts on ${b.start}.`, [b.i, 'start_date']);
            else if (overlapping) {
              ctx.addIssue('payment_schedule_date_overlaps', `This schedule starts on ${b.start}, while schedule ${String(overlapping.i)} on this ledger (to ${overlapping.end ?? 'no end date'}) still runs.`, [b.i, 'start_date']);
            }
          });
        }
      },
    },
    {
      // A schedule starting after today must follow on from the schedules before it: a day without
      // a schedule between them would stop collections going forward. Gaps in the past do no harm.
      // Either reading of end_date (last day, or the day after) counts as following on.
      at,
      codes: ['payment_schedule_date_gaps'],
      cross: (list, ctx) => {
        if (!Array.isArray(list)) return;
        const t = today();
        for (const group of scheduleGroups(list, ctx)) {
          group.forEach((b, k) => {
            if (k === 0 || b.start <= t) return;
            const earlier = group.slice(0, k);
            if (earlier.some((a) => a.end === undefined)) return;
            const lastEnd = earlier.map((a) => a.end as string).reduce((x, y) => (y > x ? y : x));
            if (b.start > dayAfter(lastEnd)) {
              ctx.addIssue('payment_schedule_date_gaps', `This schedule starts on ${b.start}, but the schedules before it on this ledger end on ${lastEnd}: no schedule covers the days between.`, [b.i, 'start_date']);
            }
          });
        }
      },
    },
  ];
}

/** The rules on payment schedules, one by one and as the account's list. */
export function paymentScheduleRules(today: () => string): RuleSpec[] {
  return [...scheduleRules, ...scheduleListRules(today)];
}
