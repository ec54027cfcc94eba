import type { CrossRuleSpec } from '../../../contract/rules.js';
import { shown } from './helpers.js';
import { isHalfHourly, meterReadingDates, plusDays, UNKNOWN, type Known, type MeterPointNode, type Node } from './meters-model.js';
import { accountRule, type AccountView } from './meters-supply.js';

// Account-level rules about readings and the dates meters were billed to. Active meters (not
// removed) need one transfer reading per settlement register (electricity) or per meter (gas), an
// EAC per settlement register's TPR, and a last billed to date in the right place. A removed meter
// is "fully billed" once billed up to the day it was removed: nothing of it is left for Kraken.

/** The date the reading's meter or register was billed to: the register the reading names, else the meter point's. */
function billedToFor({ r, supply }: AccountView, mp: MeterPointNode, meter: Node, reading: Node): Known<string | undefined> {
  if (mp.gas) return supply.billedTo(mp, meter);
  const id = r.text(reading, 'register_id');
  if (id === UNKNOWN) return UNKNOWN;
  const register = r.list(meter, 'registers').find((reg) => r.text(reg, 'register_id') === id);
  return register ? supply.billedTo(mp, register) : supply.meterPointBilledTo(mp);
}

/**
 * Whether a meter went in after the date its meter point (or register) was billed to: a replacement
 * fitted since the last bill has never been billed, so it has no reading billed up to to transfer.
 */
function installedSinceBilled({ r, supply }: AccountView, mp: MeterPointNode, meter: Node, place: Node): Known<boolean> {
  const installed = r.text(meter, 'installed_on');
  const billed = supply.billedTo(mp, place);
  if (installed === UNKNOWN || billed === UNKNOWN) return UNKNOWN;
  return installed !== undefined && billed !== undefined && installed > billed;
}

/** Every meter of the account with its meter point. */
function* metersOf({ r, meterPoints }: AccountView): Generator<[MeterPointNode, Node]> {
  for (const mp of meterPoints) for (const meter of r.list(mp, 'meters')) yield [mp, meter];
}

export function readingRules(today: () => string) {
  const rule = (codes: string[], check: (a: AccountView) => void) => accountRule('EnergyAccount', codes, today, check);
  const onAddresses = (codes: string[], check: (a: AccountView) => void) => accountRule('EnergyAccount.supply_addresses', codes, today, check);

  const applied: CrossRuleSpec[] = [
    rule(['missing_transfer_reading_for_register', 'multiple_transfer_readings_for_register'], (a) => {
      const { r, supply } = a;
      for (const [mp, meter] of metersOf(a)) {
        const registers = supply.settlementRegisters(meter);
        if (mp.gas || supply.active(meter) !== true || registers === UNKNOWN) continue;
        const readings = r.list(meter, 'transfer_readings').map((reading) => ({ reading, id: r.text(reading, 'register_id') }));
        if (readings.some((x) => x.id === UNKNOWN)) continue;
        for (const register of registers) {
          const id = r.text(register, 'register_id');
          if (typeof id !== 'string' || installedSinceBilled(a, mp, meter, register) !== false) continue;
          const mine = readings.filter((x) => x.id === id);
          if (mine.length === 0) r.report('missing_transfer_reading_for_register', `Register ${shown(id)} of an active meter needs a transfer reading.`, [...register.path, 'register_id']);
          for (const extra of mine.slice(1)) r.report('multiple_transfer_readings_for_register', `Register ${shown(id)} already has a transfer reading: give one.`, [...extra.reading.path, 'register_id']);
        }
      }
    }),
    rule(['active_gas_meter_with_multiple_transfer_readings', 'reading_meter_fully_billed'], (a) => {
      const { r, supply } = a;
      for (const [mp, meter] of metersOf(a)) {
        if (!mp.gas) continue;
        const readings = r.list(meter, 'transfer_readings');
        const active = supply.active(meter);
        if (active === true) {
          for (const extra of readings.slice(1)) r.report('active_gas_meter_with_multiple_transfer_readings', 'An active gas meter has one transfer reading.', extra.path);
        } else if (active === false && readings.length > 0 && supply.fullyBilled(mp, meter) === true) {
          r.report('reading_meter_fully_billed', 'The meter was removed and is billed past its removal: it takes no transfer reading.', readings[0]!.path);
        }
      }
    }),
    rule(['missing_eacs_for_active_register_tpr'], (a) => {
      const { r, supply } = a;
      for (const [mp, meter] of metersOf(a)) {
        if (mp.gas || supply.active(meter) !== true) continue;
        const tprs = r.list(mp, 'eac_history').map((e) => r.text(e, 'tpr'));
        const registers = supply.settlementRegisters(meter);
        if (tprs.includes(UNKNOWN) || registers === UNKNOWN) continue;
        for (const register of registers) {
          const tpr = r.filled(register, 'tpr');
          if (typeof tpr === 'string' && !tprs.includes(tpr)) {
            r.report('missing_eacs_for_active_register_tpr', `The meter point's eac_history has no EAC for TPR ${shown(tpr)} of an active register.`, [...register.path, 'tpr']);
          }
        }
      }
    }),
    rule(['last_billed_to_date_not_found'], (a) => {
      const { r, account, supply } = a;
      // An account never billed has no statements, and is billed from supply start.
      const statements = r.count(account, 'statements');
      if (statements === UNKNOWN || statements === 0 || r.given(account, 'last_billed_to_date') !== false) return;
      for (const [mp, meter] of metersOf(a)) {
        // A replacement meter is billed from its predecessor's date (see last_billed_to_date_on_new_meter).
        if (supply.billable(mp) !== true || supply.active(meter) !== true || r.given(mp, 'last_billed_to_date') !== false) continue;
        if (isHalfHourly(r, mp) !== false || supply.hasExchangedMeter(mp) !== false) continue;
        const places = mp.gas ? [meter] : supply.settlementRegisters(meter);
        if (places === UNKNOWN) continue;
        for (const place of places) {
          if (r.given(place, 'last_billed_to_date') === false) {
            r.report('last_billed_to_date_not_found', `The account has no last billed to date, so this ${mp.gas ? 'meter' : 'settlement register'} needs one.`, [...place.path, 'last_billed_to_date']);
          }
        }
      }
    }),
    rule(['prepay_details_on_fully_billed_meter', 'transfer_vend_read_date_must_match_last_billed_to_date'], (a) => {
      const { r, supply } = a;
      for (const [mp, meter] of metersOf(a)) {
        const details = r.object(meter, 'prepay_details');
        if (!details || r.flag(meter, 'is_prepay') !== true) continue;
        const fully = supply.fullyBilled(mp, meter);
        if (fully === true) {
          r.report('prepay_details_on_fully_billed_meter', 'The meter was removed and is billed past its removal: it has no prepay balance to carry over.', details.path);
          continue;
        }
        // The vend read is taken the day before the billed-to date, as billing runs from midnight after it.
        const vend = r.text(details, 'transfer_vend_read_date');
        const places = mp.gas ? [meter] : supply.settlementRegisters(meter);
        if (fully === UNKNOWN || typeof vend !== 'string' || places === UNKNOWN) continue;
        const billed = places.length === 0 ? [supply.meterPointBilledTo(mp)] : places.map((p) => supply.billedTo(mp, p));
        const wrong = billed.find((d) => typeof d === 'string' && plusDays(d, -1) !== vend);
        if (typeof wrong === 'string') {
          r.report('transfer_vend_read_date_must_match_last_billed_to_date', `The transfer vend read date must be the day before the last billed to date (${wrong}): ${plusDays(wrong, -1)}.`, [...details.path, 'transfer_vend_read_date']);
        }
      }
    }),
    onAddresses(['no_transfer_reading_on_exchanged_meter'], (a) => {
      const { r, supply } = a;
      for (const [mp, meter] of metersOf(a)) {
        if (supply.active(meter) !== false || supply.fullyBilled(mp, meter) !== false) continue;
        if (r.count(meter, 'transfer_readings') === 0) {
          r.report('no_transfer_reading_on_exchanged_meter', 'An exchanged meter not yet billed up to its removal needs its transfer readings.', [...meter.path, 'transfer_readings']);
        }
      }
    }),
    onAddresses(['last_billed_to_date_on_new_meter', 'no_last_billed_to_date_on_exchanged_meter'], (a) => {
      const { r, supply, meterPoints } = a;
      for (const mp of meterPoints) {
        if (supply.hasExchangedMeter(mp) !== true) continue;
        for (const meter of r.list(mp, 'meters')) {
          const places = mp.gas ? [meter] : supply.settlementRegisters(meter);
          if (places === UNKNOWN) continue;
          const active = supply.active(meter);
          if (active === UNKNOWN) continue;
          const exchanged = !active;
          for (const place of places) {
            const given = r.given(place, 'last_billed_to_date');
            const what = mp.gas ? 'meter' : 'settlement register';
            if (exchanged && given === false) r.report('no_last_billed_to_date_on_exchanged_meter', `An exchanged meter's ${what} needs its own last billed to date.`, [...place.path, 'last_billed_to_date']);
            if (!exchanged && given === true) r.report('last_billed_to_date_on_new_meter', `A replacement meter's ${what} takes no last billed to date: it is billed on from the old meter's.`, [...place.path, 'last_billed_to_date']);
          }
        }
      }
    }),
    onAddresses(['billed_reading_after_last_billed_to_date'], (a) => {
      const { r } = a;
      for (const [mp, meter] of metersOf(a)) {
        for (const reading of r.list(meter, 'reading_history')) {
          const date = r.text(reading, 'reading_date');
          if (r.flag(reading, 'billed') !== true || typeof date !== 'string') continue;
          const billed = billedToFor(a, mp, meter, reading);
          if (typeof billed === 'string' && date > billed) {
            r.report('billed_reading_after_last_billed_to_date', `A reading of ${date} cannot have been billed: billing reached only ${billed}.`, [...reading.path, 'reading_date']);
          }
        }
      }
    }),
    onAddresses(['transfer_reading_dates_must_match_last_billed_to_date'], (a) => {
      const { r } = a;
      for (const [mp, meter] of metersOf(a)) {
        for (const reading of r.list(meter, 'transfer_readings')) {
          const date = r.text(reading, 'reading_date');
          const billed = billedToFor(a, mp, meter, reading);
          if (typeof date === 'string' && typeof billed === 'string' && date !== billed) {
            r.report('transfer_reading_dates_must_match_last_billed_to_date', `A transfer reading is the one billed up to, so it is dated on the last billed to date (${billed}).`, [...reading.path, 'reading_date']);
          }
        }
      }
    }),
    onAddresses(['no_reading_on_removed_on'], (a) => {
      const { r } = a;
      for (const [, meter] of metersOf(a)) {
        const removed = r.text(meter, 'removed_on');
        const dates = meterReadingDates(r, meter);
        if (typeof removed === 'string' && dates !== UNKNOWN && !dates.has(removed)) {
          r.report('no_reading_on_removed_on', `The meter was removed on ${removed}: it needs a reading on that day.`, [...meter.path, 'removed_on']);
        }
      }
    }),
  ];

  /** Rules that the project's own example accounts do not satisfy yet: see meters.ts. */
  const awaiting: CrossRuleSpec[] = [
    rule(['active_gas_meter_without_transfer_reading'], (a) => {
      const { r, supply } = a;
      for (const [mp, meter] of metersOf(a)) {
        if (mp.gas && supply.active(meter) === true && installedSinceBilled(a, mp, meter, meter) === false && r.count(meter, 'transfer_readings') === 0) {
          r.report('active_gas_meter_without_transfer_reading', 'An active gas meter needs its transfer reading.', [...meter.path, 'transfer_readings']);
        }
      }
    }),
  ];

  return { applied, awaiting };
}
