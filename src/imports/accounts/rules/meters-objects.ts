import type { CrossRuleSpec, RuleSpec } from '../../../contract/rules.js';
import { isRecord, isValidMpanCore, isValidMprn } from '../../shared/fields.js';
import { entryKey, shown, stringRule, uniqueInList } from './helpers.js';
import { isActive, isHalfHourly, plusDays, Reader, UNKNOWN, type Node } from './meters-model.js';

// Rules on one object of a meter point at a time: the meter point itself, its meters, registers,
// agreements and their bespoke rates, and the supply address around it.

/** A rule on one object, read through a Reader. */
export function objectRule(at: string, codes: string[], check: (n: Node, r: Reader) => void, attach?: string): CrossRuleSpec {
  return {
    at,
    codes,
    ...(attach ? { attach } : {}),
    cross: (value, ctx) => {
      const r = new Reader(ctx);
      const n = r.root(value);
      if (n) check(n, r);
    },
  };
}

/** A rule on a list, each entry an object with its path ([i]) relative to the list. */
export function listRule(at: string, codes: string[], check: (entries: Node[], r: Reader) => void): CrossRuleSpec {
  return {
    at,
    codes,
    cross: (value, ctx) => {
      if (!Array.isArray(value)) return;
      const entries: Node[] = [];
      value.forEach((v: unknown, i) => {
        if (isRecord(v)) entries.push({ v, path: [i] });
      });
      check(entries, new Reader(ctx));
    },
  };
}

const METERS = ['ElectricityMeter', 'GasMeter'] as const;
const METER_POINTS = ['ElectricityMeterPoint', 'GasMeterPoint'] as const;

/** Smart fields belong to smart meters: smart_type given and not NONE. */
const smartDetails = (at: string) =>
  objectRule(at, ['smart_details_provided_for_non_smart_meter'], (meter, r) => {
    const type = r.text(meter, 'smart_type');
    if (type === UNKNOWN || (type !== undefined && type !== 'NONE')) return;
    for (const key of ['smart_commissioned_on', 'smart_device_id']) {
      if (r.given(meter, key) === true) r.report('smart_details_provided_for_non_smart_meter', `${key} is only for smart meters; this meter's smart_type is ${type ?? 'NONE'}.`, [key]);
    }
  });

/** Prepay fields belong to meters marked is_prepay. */
const prepayDetails = (at: string) =>
  objectRule(at, ['prepay_details_on_non_prepay_meter'], (meter, r) => {
    const prepay = r.flag(meter, 'is_prepay');
    if (prepay === UNKNOWN || prepay === true) return;
    for (const key of ['prepay_details', 'prepay_customer_reference_number']) {
      if (r.given(meter, key) === true) r.report('prepay_details_on_non_prepay_meter', `${key} is only for prepay meters; this meter is not marked is_prepay.`, [key]);
    }
  });

/** Whitespace aside, an integer as a plain decimal numeral, optionally signed. */
const INTEGER = /^[+-]?\d+$/;
/** A smart device ID is a 64-bit EUI: 16 hex digits, in hyphen-separated pairs as in the document's example, or run together. */
const DEVICE_ID = /^(?:[0-9A-F]{2}(?:-[0-9A-F]{2}){7}|[0-9A-F]{16})$/i;

/** A register's TPR may repeat (once) only for the odd TPRs 01201 to 01229. */
function timesAllowed(tpr: string): number {
  if (!/^\d{5}$/.test(tpr)) return 1;
  const n = Number(tpr);
  return n >= 1201 && n <= 1229 && n % 2 === 1 ? 2 : 1;
}

/** Register IDs of a meter's registers, or UNKNOWN when one did not parse. */
function registerIds(meter: Node, r: Reader): Set<string> | typeof UNKNOWN {
  const ids = new Set<string>();
  for (const register of r.list(meter, 'registers')) {
    const id = r.text(register, 'register_id');
    if (id === UNKNOWN) return UNKNOWN;
    if (id !== undefined) ids.add(id);
  }
  return ids;
}

/** Each reading of `list` names one of the meter's registers. */
const readingRegisters = (list: string, missing: string, unknown: string) =>
  objectRule('ElectricityMeter', [unknown, missing], (meter, r) => {
    const ids = registerIds(meter, r);
    if (ids === UNKNOWN) return;
    for (const reading of r.list(meter, list)) {
      const id = r.filled(reading, 'register_id');
      if (id === UNKNOWN) continue;
      if (id === undefined) r.report(missing, 'An electricity reading must name the register it was read from.', [...reading.path, 'register_id']);
      else if (!ids.has(id)) r.report(unknown, `The meter has no register ${shown(id)}.`, [...reading.path, 'register_id']);
    }
  });

const meterRules: RuleSpec[] = [
  ...METERS.flatMap((m) => [
    smartDetails(m),
    prepayDetails(m),
    stringRule(`${m}.meter_serial_number`, 'blank', () => 'This field may not be blank.', (s) => s.trim() !== ''),
    stringRule(`${m}.smart_device_id`, 'invalid_smart_device_id', (s) => `${shown(s)} is not a smart device ID: 16 hex digits, such as 01-23-45-67-89-AB-CD-EF.`, (s) => DEVICE_ID.test(s)),
  ]),
  objectRule('ElectricityMeter', ['electricity_prepay_meter_without_customer_reference_number'], (meter, r) => {
    const prepay = r.flag(meter, 'is_prepay');
    const removed = r.given(meter, 'removed_on');
    const reference = r.filled(meter, 'prepay_customer_reference_number');
    if (prepay === true && removed === false && reference === undefined) {
      r.report('electricity_prepay_meter_without_customer_reference_number', 'An active electricity prepay meter needs its prepay_customer_reference_number.', ['prepay_customer_reference_number']);
    }
  }),
  stringRule(
    'ElectricityMeter.prepay_customer_reference_number',
    'invalid_prepay_customer_reference_number',
    (s) => `${shown(s)} is not a whole number.`,
    (s) => INTEGER.test(s.replace(/\s+/g, '')),
  ),
  readingRegisters('transfer_readings', 'reading_without_register_id', 'reading_register_id_not_recognised'),
  readingRegisters('reading_history', 'no_register_id_for_reading', 'historical_reading_register_id_not_recognised'),
  listRule('ElectricityMeter.registers', ['registers_have_duplicate_tprs'], (registers, r) => {
    const seen = new Map<string, number>();
    for (const register of registers) {
      const tpr = r.filled(register, 'tpr');
      if (tpr === UNKNOWN || tpr === undefined) continue;
      const times = (seen.get(tpr) ?? 0) + 1;
      seen.set(tpr, times);
      if (times > timesAllowed(tpr)) {
        const why = timesAllowed(tpr) === 2 ? 'it may appear at most twice' : 'only the odd TPRs 01201 to 01229 may appear twice';
        r.report('registers_have_duplicate_tprs', `TPR ${shown(tpr)} is already on another register of this meter; ${why}.`, [...register.path, 'tpr']);
      }
    }
  }),
  listRule('ElectricityMeterPoint.meters', ['meter_with_duplicate_register_ids'], (meters, r) => {
    for (const meter of meters) {
      const seen = new Set<string>();
      for (const register of r.list(meter, 'registers')) {
        const id = r.text(register, 'register_id');
        if (id === UNKNOWN || id === undefined) continue;
        if (seen.has(id)) r.report('meter_with_duplicate_register_ids', `The meter already has a register ${shown(id)}.`, [...register.path, 'register_id']);
        seen.add(id);
      }
    }
  }),
];

/**
 * Meters sharing a serial number are one physical meter recorded again after a dummy exchange: each
 * later record must start (installed_on) the day after the one before it was removed.
 */
const dummyExchanges = (at: string) =>
  objectRule(at, ['multiple_non_dmex_meters_with_serial_number'], (mp, r) => {
    const bySerial = new Map<string, { meter: Node; installed: string | undefined; removed: string | undefined }[]>();
    for (const meter of r.list(mp, 'meters')) {
      const serial = r.text(meter, 'meter_serial_number');
      const installed = r.text(meter, 'installed_on');
      const removed = r.text(meter, 'removed_on');
      if (serial === UNKNOWN || serial === undefined || installed === UNKNOWN || removed === UNKNOWN) continue;
      bySerial.set(serial, [...(bySerial.get(serial) ?? []), { meter, installed, removed }]);
    }
    for (const [serial, records] of bySerial) {
      if (records.length < 2) continue;
      // Undated records sort last, so they are the ones reported.
      const sorted = [...records].sort((a, b) => (a.installed ?? '9999-99-99').localeCompare(b.installed ?? '9999-99-99'));
      for (let k = 1; k < sorted.length; k++) {
        const before = sorted[k - 1]!;
        const after = sorted[k]!;
        if (before.removed !== undefined && after.installed !== undefined && after.installed === plusDays(before.removed, 1)) continue;
        r.report(
          'multiple_non_dmex_meters_with_serial_number',
          `Meter ${shown(serial)} appears more than once: a repeat must be a dummy exchange, installed the day after the earlier one was removed.`,
          [...after.meter.path, 'meter_serial_number'],
        );
      }
    }
  });

const meterPointRules: RuleSpec[] = [
  ...METER_POINTS.flatMap((at) => [
    objectRule(at, ['agreement_start_date_before_supply_start_date'], (mp, r) => {
      const start = r.text(mp, 'supply_start_date');
      if (start === UNKNOWN || start === undefined) return;
      for (const agreement of r.list(mp, 'agreements')) {
        const from = r.text(agreement, 'effective_from');
        if (from !== UNKNOWN && from !== undefined && from < start) {
          r.report('agreement_start_date_before_supply_start_date', `The agreement starts (${from}) before the supply does (${start}).`, [...agreement.path, 'effective_from']);
        }
      }
    }),
    dummyExchanges(at),
    flagRule(`${at}.dr_in_progress`, 'disputed_read_in_progress', 'A disputed read is in progress on this meter point: resolve it before importing.'),
    flagRule(`${at}.et_in_progress`, 'erroneous_transfer_not_in_progress', 'An erroneous transfer is in progress on this meter point: resolve it before importing.'),
  ]),
  supplyPointIdentifier('ElectricityMeterPoint.identifier', 'an MPAN core', isValidMpanCore),
  supplyPointIdentifier('GasMeterPoint.identifier', 'an MPRN', isValidMprn),
  objectRule('ElectricityMeterPoint', ['registers_missing_for_active_electricity_meter'], (mp, r) => {
    // Registers of a non-half-hourly meter point are settled by TPR, so each needs one.
    const halfHourly = isHalfHourly(r, mp);
    if (halfHourly !== false) return;
    for (const meter of r.list(mp, 'meters')) {
      for (const register of r.list(meter, 'registers')) {
        if (r.filled(register, 'tpr') === undefined) {
          r.report('registers_missing_for_active_electricity_meter', 'A register of a non-half-hourly meter point needs its TPR.', [...register.path, 'tpr']);
        }
      }
    }
  }),
  objectRule('ElectricityMeterPoint', ['agents_and_mpids_to_appoint_provided'], (mp, r) => {
    const agents = r.given(mp, 'agents');
    const appoint = ['dc_to_appoint', 'mop_to_appoint'].filter((key) => r.filled(mp, key) !== undefined && r.filled(mp, key) !== UNKNOWN);
    if (agents === true && appoint.length > 0) {
      r.report('agents_and_mpids_to_appoint_provided', `Give the agents or ${appoint.join(' and ')}, not both.`, ['agents']);
    }
  }),
];

/** The meter-point rule that every active electricity meter has a register: see meters.ts. */
export const activeMeterRegisters = objectRule('ElectricityMeterPoint', ['registers_missing_for_active_electricity_meter'], (mp, r) => {
  for (const meter of r.list(mp, 'meters')) {
    if (isActive(r, meter) === true && r.count(meter, 'registers') === 0) {
      r.report('registers_missing_for_active_electricity_meter', 'An active electricity meter needs at least one register.', [...meter.path, 'registers']);
    }
  }
});

/**
 * The service imports GB accounts: an electricity supply point is an MPAN core, a gas one an MPRN.
 * The service's own invalid_mpan / invalid_mprn check the same value first; a field stops at its
 * first failing value rule, so this one checks the field as a whole and both codes are reported.
 */
function supplyPointIdentifier(at: string, what: string, ok: (s: string) => boolean): CrossRuleSpec {
  return {
    at,
    codes: ['invalid_supply_point_identifier'],
    cross: (v, ctx) => {
      if (typeof v === 'string' && !ok(v)) ctx.addIssue('invalid_supply_point_identifier', `${shown(v)} is not a GB supply point identifier (${what}).`, []);
    },
  };
}

function flagRule(at: string, code: string, message: string): RuleSpec {
  return {
    at,
    codes: [code],
    value: (v, report) => {
      if (v === true) report(code, message);
      return v;
    },
  };
}

/** What makes two bespoke rates the same: the meter and the payment method they apply to. */
const bespokeKey = (rate: Node, r: Reader): string | undefined => {
  const serial = r.text(rate, 'meter_serial_number');
  const method = r.text(rate, 'payment_method');
  if (serial === UNKNOWN || method === UNKNOWN) return undefined;
  return JSON.stringify([serial ?? '', method ?? '']);
};

const agreementRules: RuleSpec[] = [
  ...['ElectricityAgreement', 'GasAgreement'].flatMap((at) => [
    listRule(`${at}.bespoke_tariff_rates`, ['duplicate_bespoke_rates'], (rates, r) => {
      const seen = new Set<string>();
      for (const rate of rates) {
        const key = bespokeKey(rate, r);
        if (key === undefined) continue;
        if (seen.has(key)) r.report('duplicate_bespoke_rates', 'Another bespoke rate already applies to the same meter and payment method.', rate.path);
        seen.add(key);
      }
    }),
    uniqueInList(`${at}.characteristics`, 'children_with_duplicate_values', entryKey('code'), (code) => `The characteristic ${shown(code)} is given more than once.`, (i) => [i, 'code']),
  ]),
  objectRule('ElectricityAgreement', ['no_register_id_or_rate_type_provided_for_bespoke_elec_rate'], (agreement, r) => {
    for (const rate of r.list(agreement, 'bespoke_tariff_rates')) {
      for (const register of r.list(rate, 'registers')) {
        const id = r.filled(register, 'register_id');
        const type = r.filled(register, 'rate_type');
        if (id === undefined && type === undefined) {
          r.report('no_register_id_or_rate_type_provided_for_bespoke_elec_rate', 'A bespoke register rate needs a register_id or a rate_type.', [...register.path, 'register_id']);
        }
      }
    }
  }),
  stringRule('AgreementIntermediaryDetails.portfolio_number', 'invalid_portfolio_number', (s) => `${shown(s)} is not a portfolio number: P- and 8 capital letters or digits.`, (s) => /^P-[A-Z0-9]{8}$/.test(s)),
];

const addressRules: RuleSpec[] = [
  objectRule('EnergySmartRefusalInterest', ['smart_refusal_reason_given_for_interest'], (interest, r) => {
    if (r.text(interest, 'type') === 'INTERESTED' && r.given(interest, 'refusal_reason') === true) {
      r.report('smart_refusal_reason_given_for_interest', 'A customer interested in a smart meter has no refusal reason.', ['refusal_reason']);
    }
  }),
  objectRule('EnergyLegacySupplyAddress', ['multiple_property_administrators'], (address, r) => {
    const administrators = r.count(address, 'property_administrators');
    if (administrators !== UNKNOWN && administrators > 1) {
      r.report('multiple_property_administrators', `A supply address takes one property administrator, not ${String(administrators)}.`, ['property_administrators', 1]);
    }
  }),
];

export const objectRules: RuleSpec[] = [...meterRules, ...meterPointRules, ...agreementRules, ...addressRules];
