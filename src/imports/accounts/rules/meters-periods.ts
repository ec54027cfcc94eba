import type { RuleSpec } from '../../../contract/rules.js';
import { entryKey, shown, uniqueInList } from './helpers.js';
import { listRule } from './meters-objects.js';
import { plusDays, UNKNOWN, type Node, type Reader } from './meters-model.js';

// Lists of dated entries on a meter point: capacity values and configuration periods (a chain where
// each period ends on the date the next starts), tax exemptions (no overlaps, one open end), the gas
// AQ history (each entry starting the day after the previous one ends) and the EAC history.

interface Dated {
  node: Node;
  from: string;
  /** undefined: open-ended. */
  to: string | undefined;
}

/** The entries' periods, in order of start; undefined when a date of one of them cannot be trusted. */
function periods(entries: Node[], r: Reader, fromKey: string, toKey: string): Dated[] | undefined {
  const out: Dated[] = [];
  for (const node of entries) {
    const from = r.text(node, fromKey);
    const to = r.text(node, toKey);
    if (from === UNKNOWN || from === undefined || to === UNKNOWN) return undefined;
    out.push({ node, from, to });
  }
  return out.sort((a, b) => a.from.localeCompare(b.from));
}

/** Periods that follow one another without gaps: each ends on the date the next one starts. */
const chained = (at: string) =>
  listRule(at, ['gaps_or_overlaps_in_periods', 'zero_length_periods'], (entries, r) => {
    const sorted = periods(entries, r, 'effective_from_date', 'effective_to_date');
    if (!sorted) return;
    for (const p of sorted) {
      if (p.to === p.from) r.report('zero_length_periods', `The period starts and ends on ${p.from}: it covers no time.`, [...p.node.path, 'effective_to_date']);
    }
    for (let k = 1; k < sorted.length; k++) {
      const before = sorted[k - 1]!;
      const after = sorted[k]!;
      if (before.to === after.from) continue;
      const why =
        before.to === undefined || before.to > after.from
          ? `overlaps the one from ${before.from}${before.to === undefined ? ', which is open-ended' : ` to ${before.to}`}`
          : `leaves a gap after the one ending ${before.to}`;
      r.report('gaps_or_overlaps_in_periods', `The period from ${after.from} ${why}; each period must start on the date the previous one ends.`, [...after.node.path, 'effective_from_date']);
    }
  });

/** Tax exemptions of one kind: at most one open-ended, and none overlapping (an end date is the first day not covered). */
const exemptions = (at: string): RuleSpec[] => [
  listRule(at, ['multiple_open_ended_tax_exemptions'], (entries, r) => {
    let open = 0;
    for (const e of entries) {
      if (r.given(e, 'effective_to') !== false) continue;
      if (++open > 1) r.report('multiple_open_ended_tax_exemptions', 'Another exemption of this kind is already open-ended: only one may be.', [...e.path, 'effective_to']);
    }
  }),
  listRule(at, ['overlapping_effective_dates_for_tax_exemptions'], (entries, r) => {
    const sorted = periods(entries, r, 'effective_from', 'effective_to');
    if (!sorted) return;
    let reach: Dated | undefined;
    for (const p of sorted) {
      if (reach && (reach.to === undefined || reach.to > p.from)) {
        r.report('overlapping_effective_dates_for_tax_exemptions', `The exemption from ${p.from} overlaps the one from ${reach.from}.`, [...p.node.path, 'effective_from']);
      }
      if (!reach || (reach.to !== undefined && (p.to === undefined || p.to > reach.to))) reach = p;
    }
  }),
];

export function periodRules(today: () => string): RuleSpec[] {
  return [
    chained('ElectricityMeterPoint.capacity_values'),
    chained('ElectricityMeterPoint.configuration_periods'),
    listRule('ElectricityMeterPoint.configuration_periods', ['configuration_period_starts_in_future', 'latest_configuration_period_not_open_ended'], (entries, r) => {
      const t = today();
      let latest: Node | undefined;
      let latestFrom = '';
      for (const e of entries) {
        const from = r.text(e, 'effective_from_date');
        if (from === UNKNOWN || from === undefined) return;
        if (from > t) r.report('configuration_period_starts_in_future', `The period starts on ${from}, after today (${t}).`, [...e.path, 'effective_from_date']);
        if (from >= latestFrom) [latest, latestFrom] = [e, from];
      }
      if (latest && r.given(latest, 'effective_to_date') === true) {
        r.report('latest_configuration_period_not_open_ended', 'The latest configuration period is the current one: it has no end date.', [...latest.path, 'effective_to_date']);
      }
    }),
    ...['ElectricityMeterPoint', 'GasMeterPoint'].flatMap((mp) => [...exemptions(`${mp}.ccl_exemptions`), ...exemptions(`${mp}.vat_exemptions`)]),
    listRule('GasMeterPoint.aq_history', ['multiple_open_ended_aqs_in_meterpoint_aq_history'], (entries, r) => {
      let open = 0;
      for (const e of entries) {
        if (r.given(e, 'effective_to') !== false) continue;
        if (++open > 1) r.report('multiple_open_ended_aqs_in_meterpoint_aq_history', 'Another AQ entry is already open-ended: only the current one may be.', [...e.path, 'effective_to']);
      }
    }),
    listRule('GasMeterPoint.aq_history', ['gaps_or_overlaps_in_aq_history'], (entries, r) => {
      // An AQ entry's end date is its last day: the next entry starts the day after.
      const sorted = periods(entries, r, 'effective_from', 'effective_to');
      if (!sorted) return;
      for (let k = 1; k < sorted.length; k++) {
        const before = sorted[k - 1]!;
        const after = sorted[k]!;
        const expected = before.to === undefined ? undefined : plusDays(before.to, 1);
        if (expected === after.from) continue;
        const why = expected === undefined || expected > after.from ? 'overlaps the entry before it' : 'leaves a gap after the entry before it';
        r.report('gaps_or_overlaps_in_aq_history', `The AQ entry from ${after.from} ${why} (from ${before.from}${before.to ? ` to ${before.to}` : ', open-ended'}).`, [...after.node.path, 'effective_from']);
      }
    }),
    uniqueInList(
      'ElectricityMeterPoint.eac_history',
      'repeated_eac_for_tpr',
      (entry, i, ctx) => {
        const from = entryKey('effective_from')(entry, i, ctx);
        const tpr = entryKey('tpr')(entry, i, ctx);
        return from === undefined || tpr === undefined ? undefined : JSON.stringify([from, tpr]);
      },
      (key) => {
        const [from, tpr] = JSON.parse(key) as [string, string];
        return `An EAC for TPR ${shown(tpr)} from ${from} is already given.`;
      },
      (i) => [i, 'effective_from'],
    ),
  ];
}
