import type { CrossRuleSpec } from '../../../contract/rules.js';
import { shown } from './helpers.js';
import { accountMeterPoints, Reader, readingDates, Supply, UNKNOWN, type MeterPointNode, type Node } from './meters-model.js';

// Account-level rules about supply: which meter points are on supply, their meters, agreements and
// annual quantities, and which accounts may have supply addresses at all. A meter point is billable
// when it has no supply end date or one after today.

export interface AccountView {
  r: Reader;
  account: Node;
  addresses: Node[];
  meterPoints: MeterPointNode[];
  supply: Supply;
  today: string;
}

/**
 * A rule on the whole account. A rule the document lists on EnergyAccount.supply_addresses that
 * needs the account's last billed to date runs on the account too: paths stay relative to it.
 */
export function accountRule(at: 'EnergyAccount' | 'EnergyAccount.supply_addresses', codes: string[], today: () => string, check: (a: AccountView) => void): CrossRuleSpec {
  return {
    at,
    codes,
    ...(at === 'EnergyAccount' ? {} : { attach: 'EnergyAccount' }),
    cross: (value, ctx) => {
      const r = new Reader(ctx);
      const account = r.root(value);
      if (!account) return;
      const t = today();
      const billedTo = r.text(account, 'last_billed_to_date');
      check({ r, account, ...accountMeterPoints(r, account), supply: new Supply(r, t, billedTo), today: t });
    },
  };
}

interface Period {
  node: Node;
  from: string;
  to: string | undefined;
}

/** A meter point's agreements (effective_to is the first day not covered), by start; undefined when a date cannot be trusted. */
export function agreementsOf(r: Reader, mp: Node): Period[] | undefined {
  const out: Period[] = [];
  for (const node of r.list(mp, 'agreements')) {
    const from = r.text(node, 'effective_from');
    const to = r.text(node, 'effective_to');
    if (from === UNKNOWN || from === undefined || to === UNKNOWN) return undefined;
    out.push({ node, from, to });
  }
  return out.sort((a, b) => a.from.localeCompare(b.from));
}

const covers = (p: Period, day: string) => p.from <= day && (p.to === undefined || p.to > day);

const DOMESTIC = (type: string) => type.startsWith('DOMESTIC');
/** Measurement classes of unmetered supplies (non-half-hourly and half-hourly). */
const UNMETERED = new Set(['B', 'D']);

export function supplyRules(today: () => string) {
  const rule = (codes: string[], check: (a: AccountView) => void) => accountRule('EnergyAccount', codes, today, check);
  const onAddresses = (codes: string[], check: (a: AccountView) => void) => accountRule('EnergyAccount.supply_addresses', codes, today, check);

  const applied: CrossRuleSpec[] = [
    rule(['portfolio_lead_has_a_supply_address'], ({ r, account }) => {
      const lead = r.text(account, 'account_type') === 'PORTFOLIO_LEAD' || r.flag(account, 'is_portfolio_lead') === true;
      const n = r.count(account, 'supply_addresses');
      if (lead && n !== UNKNOWN && n > 0) r.report('portfolio_lead_has_a_supply_address', 'A portfolio lead account holds no supply: it has no supply addresses.', ['supply_addresses']);
    }),
    rule(['system_account_has_a_supply_address'], ({ r, account }) => {
      const n = r.count(account, 'supply_addresses');
      if (r.text(account, 'account_type') === 'SYSTEM' && n !== UNKNOWN && n > 0) r.report('system_account_has_a_supply_address', 'A system account has no supply addresses.', ['supply_addresses']);
    }),
    rule(['occupier_account_with_multiple_supply_addresses'], ({ r, account }) => {
      const n = r.count(account, 'supply_addresses');
      if (r.flag(account, 'unknown_occupier') === true && n !== UNKNOWN && n > 1) {
        r.report('occupier_account_with_multiple_supply_addresses', `An unknown occupier's account covers one supply address, not ${String(n)}.`, ['supply_addresses', 1]);
      }
    }),
    rule(['tax_exemptions_provided_for_domestic_account'], ({ r, account, meterPoints }) => {
      const type = r.text(account, 'account_type');
      if (type === UNKNOWN || !DOMESTIC(type ?? 'DOMESTIC')) return;
      for (const mp of meterPoints) {
        for (const key of ['ccl_exemptions', 'vat_exemptions']) {
          const n = r.count(mp, key);
          if (n !== UNKNOWN && n > 0) r.report('tax_exemptions_provided_for_domestic_account', `Tax exemptions are for business accounts; this one is ${type ?? 'DOMESTIC'}.`, [...mp.path, key]);
        }
      }
    }),
    onAddresses(['duplicate_supply_addresses_found'], ({ r, addresses }) => {
      const norm = (s: string) => s.trim().replace(/\s+/g, ' ').toUpperCase();
      const seen = new Set<string>();
      for (const address of addresses) {
        const parts = ['supply_address1', 'supply_address2', 'supply_postcode'].map((k) => r.text(address, k));
        if (parts.some((p) => p === UNKNOWN)) continue;
        const key = JSON.stringify(parts.map((p) => norm(typeof p === 'string' ? p : '')));
        if (seen.has(key)) r.report('duplicate_supply_addresses_found', 'Another supply address has the same first lines and postcode.', [...address.path, 'supply_address1']);
        seen.add(key);
      }
    }),
    onAddresses(['loss_in_progress'], ({ r, meterPoints, today: t }) => {
      for (const mp of meterPoints) {
        const end = r.text(mp, 'supply_end_date');
        if (typeof end === 'string' && end > t) r.report('loss_in_progress', `Supply at this meter point is being lost: it ends on ${end}, after today.`, mp.path);
      }
    }),
    onAddresses(['import_meter_not_found_for_export_meter'], ({ r, meterPoints }) => {
      // Which meter points (by position) hold a meter of each serial number, and which are IMPORT_EXPORT.
      const holders = new Map<string, Set<MeterPointNode>>();
      for (const mp of meterPoints) {
        for (const meter of r.list(mp, 'meters')) {
          const serial = r.text(meter, 'meter_serial_number');
          if (typeof serial === 'string') holders.set(serial, (holders.get(serial) ?? new Set()).add(mp));
        }
      }
      const importExport = (mp: MeterPointNode) => r.text(mp, 'export_type') === 'IMPORT_EXPORT';
      for (const mp of meterPoints.filter(importExport)) {
        for (const meter of r.list(mp, 'meters')) {
          const serial = r.text(meter, 'meter_serial_number');
          if (typeof serial !== 'string') continue;
          const points = [...(holders.get(serial) ?? [])];
          if (points.some((p) => r.text(p, 'export_type') === UNKNOWN)) continue;
          if (points.length === 2 && points.filter(importExport).length === 1) continue;
          r.report(
            'import_meter_not_found_for_export_meter',
            `An import/export meter is on two meter points: this one (IMPORT_EXPORT) and its import meter point, with no export type. Meter ${shown(serial)} is on ${String(points.length)}.`,
            [...meter.path, 'meter_serial_number'],
          );
        }
      }
    }),
    rule(['gaps_or_overlaps_in_agreement_dates'], ({ r, meterPoints }) => {
      for (const mp of meterPoints) {
        const start = r.text(mp, 'supply_start_date');
        const agreements = agreementsOf(r, mp);
        if (start === UNKNOWN || start === undefined || !agreements) continue;
        for (let k = 1; k < agreements.length; k++) {
          const before = agreements[k - 1]!;
          const after = agreements[k]!;
          if (before.to === after.from) continue;
          const overlap = before.to === undefined || before.to > after.from;
          // A gap that ends before supply starts lies in the meter point's history, which Kraken does not bill.
          if (!overlap && after.from <= start) continue;
          const why = overlap ? `overlaps the agreement from ${before.from}` : `leaves a gap after the agreement ending ${before.to ?? ''}`;
          r.report('gaps_or_overlaps_in_agreement_dates', `The agreement from ${after.from} ${why}: agreements follow one another without gaps or overlaps.`, [...after.node.path, 'effective_from']);
        }
      }
    }),
    rule(['no_agreement_covering_last_billed_to_date'], ({ r, meterPoints, supply }) => {
      for (const mp of meterPoints) {
        const billed = supply.meterPointBilledTo(mp);
        const start = r.text(mp, 'supply_start_date');
        const end = r.text(mp, 'supply_end_date');
        const agreements = agreementsOf(r, mp);
        if (billed === UNKNOWN || billed === undefined || start === UNKNOWN || end === UNKNOWN || !agreements) continue;
        // Only a meter point on supply on that day needs an agreement for it.
        if ((start !== undefined && start > billed) || (end !== undefined && end < billed)) continue;
        if (!agreements.some((a) => covers(a, billed))) {
          r.report('no_agreement_covering_last_billed_to_date', `No agreement of this meter point covers its last billed to date (${billed}).`, [...mp.path, 'agreements']);
        }
      }
    }),
    rule(['meterpoint_with_agreement_not_on_supply'], ({ r, meterPoints, supply }) => {
      for (const mp of meterPoints) {
        const end = r.text(mp, 'supply_end_date');
        const agreements = agreementsOf(r, mp);
        if (supply.billable(mp) !== false || typeof end !== 'string' || !agreements) continue;
        for (const a of agreements) {
          if (a.from > end) r.report('meterpoint_with_agreement_not_on_supply', `The agreement starts (${a.from}) after the meter point's supply ended (${end}).`, [...a.node.path, 'effective_from']);
        }
      }
    }),
    rule(['meter_point_with_no_meters'], ({ r, meterPoints, supply }) => {
      for (const mp of meterPoints) {
        if (supply.billable(mp) !== true) continue;
        const states = r.list(mp, 'meters').map((m) => supply.active(m));
        if (states.includes(UNKNOWN) || states.includes(true)) continue;
        const mc = r.text(mp, 'measurement_class');
        if (mc === UNKNOWN || (!mp.gas && mc !== undefined && UNMETERED.has(mc))) continue;
        r.report('meter_point_with_no_meters', 'A meter point on supply needs an active meter (or, for electricity, an unmetered measurement class).', [...mp.path, 'meters']);
      }
    }),
    rule(['no_supply_point_on_supply'], ({ r, addresses, meterPoints, supply }) => {
      let total = 0;
      for (const address of addresses) {
        const n = r.count(address, 'meter_points');
        if (n === UNKNOWN) return;
        total += n;
      }
      if (total === 0 || total !== meterPoints.length) return;
      if (meterPoints.every((mp) => supply.billable(mp) === false)) {
        r.report('no_supply_point_on_supply', 'None of the account\'s meter points is on supply: at least one must be.', ['supply_addresses']);
      }
    }),
    rule(['unbilled_former_supply_address'], ({ r, addresses, meterPoints, supply, today: t }) => {
      addresses.forEach((address, i) => {
        const left = r.text(address, 'customer_at_supply_address_to_date');
        if (typeof left !== 'string' || left > t) return;
        const unbilled = meterPoints.some((mp) => {
          if (mp.address !== i) return false;
          const end = r.text(mp, 'supply_end_date');
          const billed = supply.meterPointBilledTo(mp) ?? latestMeterBilledTo(supply, mp);
          if (end === UNKNOWN || billed === UNKNOWN) return false;
          const due = end !== undefined && end < left ? end : left;
          return billed === undefined || billed < due;
        });
        if (unbilled) {
          r.report('unbilled_former_supply_address', `The customer left this address on ${left}: it must be billed up to then.`, [...address.path, 'customer_at_supply_address_to_date']);
        }
      });
    }),
    rule(['no_reading_on_supply_end_date'], ({ r, meterPoints, supply }) => {
      for (const mp of meterPoints) {
        const end = r.text(mp, 'supply_end_date');
        if (supply.billable(mp) !== false || typeof end !== 'string' || r.list(mp, 'meters').length === 0) continue;
        const dates = readingDates(r, mp);
        if (dates !== UNKNOWN && !dates.has(end)) {
          r.report('no_reading_on_supply_end_date', `Supply ended on ${end}: a meter of the meter point needs a reading on that day.`, [...mp.path, 'supply_end_date']);
        }
      }
    }),
    rule(['future_supply_start_date'], ({ r, meterPoints, supply, today: t }) => {
      for (const mp of meterPoints) {
        const start = r.text(mp, 'supply_start_date');
        if (supply.billable(mp) === true && typeof start === 'string' && start > t) {
          r.report('future_supply_start_date', `Supply starts on ${start}, after today (${t}).`, [...mp.path, 'supply_start_date']);
        }
      }
    }),
    rule(['future_supply_end_date'], ({ r, meterPoints, today: t }) => {
      for (const mp of meterPoints) {
        const end = r.text(mp, 'supply_end_date');
        if (typeof end === 'string' && end > t) r.report('future_supply_end_date', `Supply ends on ${end}, after today (${t}): import the account once it has ended, or without the end date.`, [...mp.path, 'supply_end_date']);
      }
    }),
  ];

  /** Rules that the project's own example accounts do not satisfy yet: see meters.ts. */
  const awaiting: CrossRuleSpec[] = [
    rule(['meter_point_with_no_agreement'], ({ r, meterPoints, supply }) => {
      for (const mp of meterPoints) {
        if (supply.billable(mp) !== true) continue;
        // Kraken bills from the last billed to date, or from the supply start when never billed.
        const billed = supply.meterPointBilledTo(mp);
        const start = billed === undefined ? r.text(mp, 'supply_start_date') : billed;
        const agreements = agreementsOf(r, mp);
        if (start === UNKNOWN || start === undefined || !agreements) continue;
        if (!agreements.some((a) => a.to === undefined || a.to > start)) {
          r.report('meter_point_with_no_agreement', `The meter point is on supply, so Kraken bills it from ${start}: it needs an agreement for that period.`, [...mp.path, 'agreements']);
        }
      }
    }),
    rule(['no_current_or_future_aq_entry_found'], ({ r, meterPoints, supply, today: t }) => {
      for (const mp of meterPoints) {
        if (!mp.gas || supply.billable(mp) !== true) continue;
        const ends = r.list(mp, 'aq_history').map((e) => r.text(e, 'effective_to'));
        if (ends.includes(UNKNOWN)) continue;
        if (!ends.some((end) => end !== UNKNOWN && (end === undefined || end >= t))) {
          r.report('no_current_or_future_aq_entry_found', `The gas meter point is on supply: it needs an AQ entry in force today (${t}) or later.`, [...mp.path, 'aq_history']);
        }
      }
    }),
  ];

  return { applied, awaiting };
}

/** The latest date any of a meter point's meters has been billed to. */
function latestMeterBilledTo(supply: Supply, mp: MeterPointNode): string | undefined | typeof UNKNOWN {
  let latest: string | undefined;
  for (const meter of supply.r.list(mp, 'meters')) {
    const d = supply.meterBilledTo(mp, meter);
    if (d === UNKNOWN) return UNKNOWN;
    if (d !== undefined && (latest === undefined || d > latest)) latest = d;
  }
  return latest;
}
