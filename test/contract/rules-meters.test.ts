import { describe, expect, it } from 'vitest';
import { hooksFor, implementedPairs } from '../../src/contract/rules.js';
import { buildContractSchemas } from '../../src/contract/schemas.generated.js';
import { generateCohort } from '../../src/cohort/generate.js';
import { accountRules } from '../../src/imports/accounts/rules/index.js';
import { meterRules, meterRulesAwaitingExamples } from '../../src/imports/accounts/rules/meters.js';
import { seededReferenceData } from '../../src/imports/reference/reference.service.js';
import { issuesToItems } from '../../src/imports/shared/validation.js';
import { validMpan } from '../helpers/fixtures.js';
import { accountErrors, published, TODAY } from './harness.js';

// The document's rules on meter points, meters, registers, readings, agreements, consumption
// histories, tax exemptions and supply addresses. Every case starts from the published example
// account and changes one thing (TODAY is 2026-01-15). In that example the electricity meter point
// (E) has one meter (EM) with a settlement register "1" (TPR 00001) and a display register "X" that
// is not a settlement register; the gas meter point (G) has a prepay meter (GM). The account was
// billed to 2019-08-01, the day of both transfer readings; both agreements start that day.

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests reach into the example freely
type Account = any;

const E = 'supply_addresses.0.meter_points.0';
const G = 'supply_addresses.0.meter_points.1';
const EM = `${E}.meters.0`;
const GM = `${G}.meters.0`;

const elec = (a: Account) => a.supply_addresses[0].meter_points[0];
const gas = (a: Account) => a.supply_addresses[0].meter_points[1];
const elecMeter = (a: Account) => elec(a).meters[0];
const gasMeter = (a: Account) => gas(a).meters[0];

const sorted = (xs: string[]) => [...xs].sort();

/** The problems of the published example after `change`, in a stable order. */
function errorsAfter(change: (a: Account) => void, errors: (a: Account) => string[] = accountErrors): string[] {
  const account = published('account');
  change(account);
  return sorted(errors(account));
}

const awaitingRules = meterRulesAwaitingExamples(() => TODAY);
const reference = seededReferenceData();
const awaitingSchema = buildContractSchemas(hooksFor([...accountRules(() => TODAY), ...awaitingRules], (kind) => reference.values(kind))).EnergyAccount;

/** The problems with the rules awaiting the project's examples applied as well (see meters.ts). */
function errorsWithAwaiting(input: unknown): string[] {
  const result = awaitingSchema.safeParse(input, { reportInput: true });
  return result.success ? [] : issuesToItems(result.error.issues).map((i) => `${i.code}@${i.attr ?? ''}`);
}

/** A business account: exemptions and bespoke rates are for business accounts. */
const business = (a: Account) => {
  a.account_type = 'BUSINESS';
};

/**
 * A gas meter exchange on G: the published meter (without its prepay details) was removed on
 * 2019-09-01, after the account was last billed, and a new meter went in the day after.
 */
function gasExchange(a: Account) {
  const old = gasMeter(a);
  delete old.is_prepay;
  delete old.prepay_details;
  delete old.smart_type;
  old.removed_on = '2019-09-01';
  old.last_billed_to_date = '2019-08-01';
  old.reading_history = [{ reading_date: '2019-09-01', reading_value: '520.00', reading_type: 'CUSTOMER', billed: false }];
  gas(a).meters.push({
    meter_serial_number: 'G4A00099999',
    installed_on: '2019-09-02',
    gas_number_of_digits: 5,
    reading_history: [{ reading_date: '2019-09-02', reading_value: '0', reading_type: 'CUSTOMER', billed: false }],
  });
}

/**
 * A gas meter exchange where the old meter (the published prepay meter) was removed on 2019-07-31
 * and billed to 2019-08-01: fully billed, so it takes no transfer reading.
 */
function fullyBilledExchange(a: Account) {
  const old = gasMeter(a);
  old.removed_on = '2019-07-31';
  old.last_billed_to_date = '2019-08-01';
  old.transfer_readings = [];
  old.reading_history = [{ reading_date: '2019-07-31', reading_value: '499.00', reading_type: 'CUSTOMER', billed: true }];
  gas(a).meters.push({
    meter_serial_number: 'G4A00099999',
    installed_on: '2019-08-01',
    gas_number_of_digits: 5,
    transfer_readings: [{ reading_date: '2019-08-01', reading_value: '0', reading_type: 'CUSTOMER' }],
  });
}

/** A second supply address with no meter points. */
const secondAddress = (line1: string, postcode = 'W1F 9DF') => ({
  supply_address1: line1,
  supply_postcode: postcode,
  customer_at_supply_address_from_date: '2019-01-01',
  meter_points: [],
});

/** The electricity import meter point of an import/export meter: E's meter again, on its own MPAN. */
const importPoint = () => ({
  supply_type: 'ELECTRICITY',
  identifier: validMpan(),
  mpid: 'TENT',
  supply_start_date: '2019-01-01',
  meters: [
    {
      meter_serial_number: 'Z16N389556',
      installed_on: '2001-01-01',
      registers: [{ register_id: '1', tpr: '00001', number_of_digits: 5 }],
      transfer_readings: [{ register_id: '1', reading_date: '2019-08-01', reading_value: '10.00', reading_type: 'CUSTOMER' }],
    },
  ],
  agreements: [{ tariff_code: 'ELEC-EXPORT-J', effective_from: '2019-08-01' }],
  eac_history: [{ effective_from: '2019-09-01', tpr: '00001', consumption: '100' }],
});

interface Case {
  /** `<place> <code>: what it means` (rules-doc finds the test of a rule by `<place> <code>`). */
  title: string;
  change: (a: Account) => void;
  expected: string[];
  /** Which of `expected` only the rules awaiting the project's examples report (see meters.ts). */
  awaiting?: string[];
}

const cases: Case[] = [
  // Meters
  {
    title: 'ElectricityMeter smart_details_provided_for_non_smart_meter: a meter with no smart_type has no smart device ID',
    change: (a) => (elecMeter(a).smart_device_id = '01-23-45-67-89-AB-CD-EF'),
    expected: [`smart_details_provided_for_non_smart_meter@${EM}.smart_device_id`],
  },
  {
    title: 'GasMeter smart_details_provided_for_non_smart_meter: a meter whose smart_type is NONE has no commissioning date',
    change: (a) => Object.assign(gasMeter(a), { smart_type: 'NONE', smart_commissioned_on: '2019-01-01' }),
    expected: [`smart_details_provided_for_non_smart_meter@${GM}.smart_commissioned_on`],
  },
  {
    title: 'ElectricityMeter prepay_details_on_non_prepay_meter: a meter not marked is_prepay has no prepay customer reference',
    change: (a) => (elecMeter(a).prepay_customer_reference_number = '12345'),
    expected: [`prepay_details_on_non_prepay_meter@${EM}.prepay_customer_reference_number`],
  },
  {
    title: 'GasMeter prepay_details_on_non_prepay_meter: prepay details belong to a prepay meter',
    change: (a) => (gasMeter(a).is_prepay = false),
    expected: [`prepay_details_on_non_prepay_meter@${GM}.prepay_details`],
  },
  {
    title: 'ElectricityMeter electricity_prepay_meter_without_customer_reference_number: an active prepay meter needs its reference',
    change: (a) => (elecMeter(a).is_prepay = true),
    expected: [`electricity_prepay_meter_without_customer_reference_number@${EM}.prepay_customer_reference_number`],
  },
  {
    title: 'ElectricityMeter.prepay_customer_reference_number invalid_prepay_customer_reference_number: the reference is a whole number',
    change: (a) => Object.assign(elecMeter(a), { is_prepay: true, prepay_customer_reference_number: '12AB34' }),
    expected: [`invalid_prepay_customer_reference_number@${EM}.prepay_customer_reference_number`],
  },
  {
    title: 'ElectricityMeter reading_without_register_id: a transfer reading names its register (so the register has none)',
    change: (a) => delete elecMeter(a).transfer_readings[0].register_id,
    expected: [`missing_transfer_reading_for_register@${EM}.registers.0.register_id`, `reading_without_register_id@${EM}.transfer_readings.0.register_id`],
  },
  {
    title: "ElectricityMeter reading_register_id_not_recognised: a transfer reading names one of the meter's registers (so register 1 has none)",
    change: (a) => (elecMeter(a).transfer_readings[0].register_id = '2'),
    expected: [`missing_transfer_reading_for_register@${EM}.registers.0.register_id`, `reading_register_id_not_recognised@${EM}.transfer_readings.0.register_id`],
  },
  {
    title: 'ElectricityMeter no_register_id_for_reading: a historical reading names its register',
    change: (a) => delete elecMeter(a).reading_history[1].register_id,
    expected: [`no_register_id_for_reading@${EM}.reading_history.1.register_id`],
  },
  {
    title: "ElectricityMeter historical_reading_register_id_not_recognised: a historical reading names one of the meter's registers",
    change: (a) => (elecMeter(a).reading_history[0].register_id = '01'),
    expected: [`historical_reading_register_id_not_recognised@${EM}.reading_history.0.register_id`],
  },
  {
    title: 'ElectricityMeter.meter_serial_number blank: a serial number is not empty',
    change: (a) => (elecMeter(a).meter_serial_number = ''),
    expected: [`blank@${EM}.meter_serial_number`],
  },
  {
    title: 'GasMeter.meter_serial_number blank: a serial number is not just spaces',
    change: (a) => (gasMeter(a).meter_serial_number = '   '),
    expected: [`blank@${GM}.meter_serial_number`],
  },
  {
    title: 'ElectricityMeter.registers registers_have_duplicate_tprs: two registers of a meter have different TPRs',
    change: (a) => (elecMeter(a).registers[1].tpr = '00001'),
    expected: [`registers_have_duplicate_tprs@${EM}.registers.1.tpr`],
  },
  {
    title: 'ElectricityMeter.registers registers_have_duplicate_tprs: an odd TPR from 01201 to 01229 may appear twice, not three times',
    change: (a) => {
      elecMeter(a).registers[0].tpr = '01229';
      elecMeter(a).registers[1].tpr = '01229';
      elecMeter(a).registers.push({ register_id: 'Y', tpr: '01229', number_of_digits: 5, is_settlement: false });
      for (const eac of elec(a).eac_history) eac.tpr = '01229';
    },
    expected: [`registers_have_duplicate_tprs@${EM}.registers.2.tpr`],
  },
  {
    title: 'ElectricityMeter.registers registers_have_duplicate_tprs: an even TPR in that range may not repeat',
    change: (a) => {
      elecMeter(a).registers[0].tpr = '01202';
      elecMeter(a).registers[1].tpr = '01202';
      for (const eac of elec(a).eac_history) eac.tpr = '01202';
    },
    expected: [`registers_have_duplicate_tprs@${EM}.registers.1.tpr`],
  },
  {
    title: 'ElectricityMeter.smart_device_id invalid_smart_device_id: a device ID is 16 hex digits',
    change: (a) => Object.assign(elecMeter(a), { smart_type: 'SMETS2', smart_device_id: '01-23-45-67' }),
    expected: [`invalid_smart_device_id@${EM}.smart_device_id`],
  },
  {
    title: 'GasMeter.smart_device_id invalid_smart_device_id: hex digits only',
    change: (a) => (gasMeter(a).smart_device_id = '01-23-45-67-89-AB-CD-EG'),
    expected: [`invalid_smart_device_id@${GM}.smart_device_id`],
  },
  {
    title: 'ElectricityMeterPoint.meters meter_with_duplicate_register_ids: the registers of a meter have different IDs',
    change: (a) => (elecMeter(a).registers[1].register_id = '1'),
    expected: [`meter_with_duplicate_register_ids@${EM}.registers.1.register_id`],
  },

  // Meter points
  {
    title: 'ElectricityMeterPoint agreement_start_date_before_supply_start_date: no agreement starts before supply',
    change: (a) => (elec(a).agreements[0].effective_from = '2018-12-31'),
    expected: [`agreement_start_date_before_supply_start_date@${E}.agreements.0.effective_from`],
  },
  {
    title: 'GasMeterPoint agreement_start_date_before_supply_start_date: no agreement starts before supply',
    change: (a) => (gas(a).supply_start_date = '2019-08-02'),
    expected: [`agreement_start_date_before_supply_start_date@${G}.agreements.0.effective_from`],
  },
  {
    title: 'GasMeterPoint multiple_non_dmex_meters_with_serial_number: a repeated serial is a dummy exchange, installed the day after the removal',
    change: (a) => {
      fullyBilledExchange(a);
      delete gasMeter(a).prepay_details;
      delete gasMeter(a).is_prepay;
      gas(a).meters[1].meter_serial_number = '54BV';
      gas(a).meters[1].installed_on = '2019-08-02';
    },
    expected: [`multiple_non_dmex_meters_with_serial_number@${G}.meters.1.meter_serial_number`],
  },
  {
    title: 'ElectricityMeterPoint multiple_non_dmex_meters_with_serial_number: a repeated serial needs the earlier record removed',
    change: (a) => elec(a).meters.push({ ...structuredClone(elecMeter(a)), installed_on: '2019-01-02' }),
    expected: [`multiple_non_dmex_meters_with_serial_number@${E}.meters.1.meter_serial_number`],
  },
  {
    title: 'ElectricityMeterPoint registers_missing_for_active_electricity_meter: every register of a non-half-hourly meter point has a TPR',
    change: (a) => delete elecMeter(a).registers[0].tpr,
    expected: [`registers_missing_for_active_electricity_meter@${EM}.registers.0.tpr`],
  },
  {
    title: 'ElectricityMeterPoint registers_missing_for_active_electricity_meter: every active electricity meter has a register',
    change: (a) => Object.assign(elecMeter(a), { registers: [], transfer_readings: [], reading_history: [] }),
    expected: [`registers_missing_for_active_electricity_meter@${EM}.registers`],
    awaiting: [`registers_missing_for_active_electricity_meter@${EM}.registers`],
  },
  {
    title: 'ElectricityMeterPoint agents_and_mpids_to_appoint_provided: agents, or agents to appoint, not both',
    change: (a) => Object.assign(elec(a), { agents: {}, mop_to_appoint: 'ABCD' }),
    expected: [`agents_and_mpids_to_appoint_provided@${E}.agents`],
  },
  {
    title: 'ElectricityMeterPoint.dr_in_progress disputed_read_in_progress: no disputed read is in progress',
    change: (a) => (elec(a).dr_in_progress = true),
    expected: [`disputed_read_in_progress@${E}.dr_in_progress`],
  },
  {
    title: 'GasMeterPoint.dr_in_progress disputed_read_in_progress: no disputed read is in progress',
    change: (a) => (gas(a).dr_in_progress = true),
    expected: [`disputed_read_in_progress@${G}.dr_in_progress`],
  },
  {
    title: 'ElectricityMeterPoint.et_in_progress erroneous_transfer_not_in_progress: no erroneous transfer is in progress',
    change: (a) => (elec(a).et_in_progress = true),
    expected: [`erroneous_transfer_not_in_progress@${E}.et_in_progress`],
  },
  {
    title: 'GasMeterPoint.et_in_progress erroneous_transfer_not_in_progress: no erroneous transfer is in progress',
    change: (a) => (gas(a).et_in_progress = true),
    expected: [`erroneous_transfer_not_in_progress@${G}.et_in_progress`],
  },
  {
    title: "ElectricityMeterPoint.identifier invalid_supply_point_identifier: an MPAN core, reported beside the service's invalid_mpan",
    change: (a) => (elec(a).identifier = '1200060176721'),
    expected: [`invalid_mpan@${E}.identifier`, `invalid_supply_point_identifier@${E}.identifier`],
  },
  {
    title: "GasMeterPoint.identifier invalid_supply_point_identifier: an MPRN, reported beside the service's invalid_mprn",
    change: (a) => (gas(a).identifier = 'G9353824'),
    expected: [`invalid_mprn@${G}.identifier`, `invalid_supply_point_identifier@${G}.identifier`],
  },

  // Dated lists
  {
    title: 'ElectricityMeterPoint.capacity_values gaps_or_overlaps_in_periods: each period starts on the date the one before ends',
    change: (a) =>
      (elec(a).capacity_values = [
        { effective_from_date: '2019-01-01', effective_to_date: '2019-06-01', value: '10' },
        { effective_from_date: '2019-06-02', value: '12' },
      ]),
    expected: [`gaps_or_overlaps_in_periods@${E}.capacity_values.1.effective_from_date`],
  },
  {
    title: 'ElectricityMeterPoint.capacity_values zero_length_periods: a period covers some time',
    change: (a) =>
      (elec(a).capacity_values = [
        { effective_from_date: '2019-01-01', effective_to_date: '2019-01-01', value: '10' },
        { effective_from_date: '2019-01-01', value: '12' },
      ]),
    expected: [`zero_length_periods@${E}.capacity_values.0.effective_to_date`],
  },
  {
    title: 'ElectricityMeterPoint.configuration_periods gaps_or_overlaps_in_periods: an open-ended period is the last one',
    change: (a) => (elec(a).configuration_periods = [{ effective_from_date: '2019-01-01' }, { effective_from_date: '2019-06-01' }]),
    expected: [`gaps_or_overlaps_in_periods@${E}.configuration_periods.1.effective_from_date`],
  },
  {
    title: 'ElectricityMeterPoint.configuration_periods zero_length_periods: a period covers some time',
    change: (a) =>
      (elec(a).configuration_periods = [
        { effective_from_date: '2019-01-01', effective_to_date: '2019-01-01' },
        { effective_from_date: '2019-01-01' },
      ]),
    expected: [`zero_length_periods@${E}.configuration_periods.0.effective_to_date`],
  },
  {
    title: 'ElectricityMeterPoint.configuration_periods configuration_period_starts_in_future: periods start by today',
    change: (a) =>
      (elec(a).configuration_periods = [
        { effective_from_date: '2019-01-01', effective_to_date: '2026-02-01' },
        { effective_from_date: '2026-02-01' },
      ]),
    expected: [`configuration_period_starts_in_future@${E}.configuration_periods.1.effective_from_date`],
  },
  {
    title: 'ElectricityMeterPoint.configuration_periods latest_configuration_period_not_open_ended: the latest period has no end',
    change: (a) => (elec(a).configuration_periods = [{ effective_from_date: '2019-01-01', effective_to_date: '2020-01-01' }]),
    expected: [`latest_configuration_period_not_open_ended@${E}.configuration_periods.0.effective_to_date`],
  },
  {
    title: 'ElectricityMeterPoint.ccl_exemptions multiple_open_ended_tax_exemptions: only one exemption of a kind is open-ended (two also overlap)',
    change: (a) => {
      business(a);
      elec(a).ccl_exemptions = [
        { effective_from: '2019-01-01', rate: '1.0' },
        { effective_from: '2020-01-01', rate: '0.5' },
      ];
    },
    expected: [`multiple_open_ended_tax_exemptions@${E}.ccl_exemptions.1.effective_to`, `overlapping_effective_dates_for_tax_exemptions@${E}.ccl_exemptions.1.effective_from`],
  },
  {
    title: 'ElectricityMeterPoint.ccl_exemptions overlapping_effective_dates_for_tax_exemptions: exemptions do not overlap',
    change: (a) => {
      business(a);
      elec(a).ccl_exemptions = [
        { effective_from: '2019-05-01', rate: '0.5' },
        { effective_from: '2019-01-01', effective_to: '2019-06-01', rate: '1.0' },
      ];
    },
    expected: [`overlapping_effective_dates_for_tax_exemptions@${E}.ccl_exemptions.0.effective_from`],
  },
  {
    title: 'ElectricityMeterPoint.vat_exemptions multiple_open_ended_tax_exemptions: only one exemption of a kind is open-ended (two also overlap)',
    change: (a) => {
      business(a);
      elec(a).vat_exemptions = [
        { effective_from: '2020-01-01', rate: '0.5' },
        { effective_from: '2019-01-01', rate: '1.0' },
      ];
    },
    expected: [`multiple_open_ended_tax_exemptions@${E}.vat_exemptions.1.effective_to`, `overlapping_effective_dates_for_tax_exemptions@${E}.vat_exemptions.0.effective_from`],
  },
  {
    title: 'ElectricityMeterPoint.vat_exemptions overlapping_effective_dates_for_tax_exemptions: an exemption inside another overlaps it',
    change: (a) => {
      business(a);
      elec(a).vat_exemptions = [
        { effective_from: '2019-01-01', effective_to: '2020-01-01', rate: '1.0' },
        { effective_from: '2019-03-01', effective_to: '2019-04-01', rate: '0.5' },
      ];
    },
    expected: [`overlapping_effective_dates_for_tax_exemptions@${E}.vat_exemptions.1.effective_from`],
  },
  {
    title: 'GasMeterPoint.ccl_exemptions multiple_open_ended_tax_exemptions: only one exemption of a kind is open-ended (two also overlap)',
    change: (a) => {
      business(a);
      gas(a).ccl_exemptions = [
        { effective_from: '2019-01-01', rate: '1.0' },
        { effective_from: '2019-01-02', rate: '1.0' },
      ];
    },
    expected: [`multiple_open_ended_tax_exemptions@${G}.ccl_exemptions.1.effective_to`, `overlapping_effective_dates_for_tax_exemptions@${G}.ccl_exemptions.1.effective_from`],
  },
  {
    title: 'GasMeterPoint.ccl_exemptions overlapping_effective_dates_for_tax_exemptions: exemptions do not overlap',
    change: (a) => {
      business(a);
      gas(a).ccl_exemptions = [
        { effective_from: '2019-01-01', effective_to: '2019-03-01', rate: '1.0' },
        { effective_from: '2019-02-28', rate: '1.0' },
      ];
    },
    expected: [`overlapping_effective_dates_for_tax_exemptions@${G}.ccl_exemptions.1.effective_from`],
  },
  {
    title: 'GasMeterPoint.vat_exemptions multiple_open_ended_tax_exemptions: only one exemption of a kind is open-ended (two also overlap)',
    change: (a) => {
      business(a);
      gas(a).vat_exemptions = [
        { effective_from: '2019-01-01', rate: '1.0' },
        { effective_from: '2019-01-01', rate: '1.0' },
      ];
    },
    expected: [`multiple_open_ended_tax_exemptions@${G}.vat_exemptions.1.effective_to`, `overlapping_effective_dates_for_tax_exemptions@${G}.vat_exemptions.1.effective_from`],
  },
  {
    title: 'GasMeterPoint.vat_exemptions overlapping_effective_dates_for_tax_exemptions: exemptions do not overlap',
    change: (a) => {
      business(a);
      gas(a).vat_exemptions = [
        { effective_from: '2019-01-01', effective_to: '2019-03-01', rate: '1.0' },
        { effective_from: '2019-01-01', effective_to: '2019-02-01', rate: '1.0' },
      ];
    },
    expected: [`overlapping_effective_dates_for_tax_exemptions@${G}.vat_exemptions.1.effective_from`],
  },
  {
    title: 'GasMeterPoint.aq_history multiple_open_ended_aqs_in_meterpoint_aq_history: only the current AQ is open-ended (two also overlap)',
    change: (a) => delete gas(a).aq_history[1].effective_to,
    expected: [`gaps_or_overlaps_in_aq_history@${G}.aq_history.0.effective_from`, `multiple_open_ended_aqs_in_meterpoint_aq_history@${G}.aq_history.1.effective_to`],
  },
  {
    title: 'GasMeterPoint.aq_history gaps_or_overlaps_in_aq_history: each AQ starts the day after the one before ends',
    change: (a) => (gas(a).aq_history[2].effective_to = '2017-12-30'),
    expected: [`gaps_or_overlaps_in_aq_history@${G}.aq_history.1.effective_from`],
  },
  {
    title: 'GasMeterPoint.aq_history gaps_or_overlaps_in_aq_history: AQs do not overlap',
    change: (a) => (gas(a).aq_history[1].effective_to = '2019-01-01'),
    expected: [`gaps_or_overlaps_in_aq_history@${G}.aq_history.0.effective_from`],
  },
  {
    title: 'ElectricityMeterPoint.eac_history repeated_eac_for_tpr: one EAC per TPR and start date',
    change: (a) => (elec(a).eac_history[1].effective_from = '2019-10-01'),
    expected: [`repeated_eac_for_tpr@${E}.eac_history.1.effective_from`],
  },

  // Agreements
  {
    title: 'ElectricityAgreement no_register_id_or_rate_type_provided_for_bespoke_elec_rate: a bespoke register rate names its register or rate type',
    change: (a) => {
      business(a);
      elec(a).agreements[0].bespoke_tariff_rates = [{ standing_charge: '20', registers: [{ register_id: '1', unit_rate: '15' }, { unit_rate: '10' }] }];
    },
    expected: [`no_register_id_or_rate_type_provided_for_bespoke_elec_rate@${E}.agreements.0.bespoke_tariff_rates.0.registers.1.register_id`],
  },
  {
    title: 'ElectricityAgreement.bespoke_tariff_rates duplicate_bespoke_rates: one bespoke rate per meter and payment method',
    change: (a) => {
      business(a);
      const rate = { meter_serial_number: 'Z16N389556', standing_charge: '20', registers: [{ rate_type: 'STANDARD', unit_rate: '15' }] };
      elec(a).agreements[0].bespoke_tariff_rates = [rate, { ...rate, payment_method: 'PP' }, { ...rate, standing_charge: '21' }];
    },
    expected: [`duplicate_bespoke_rates@${E}.agreements.0.bespoke_tariff_rates.2`],
  },
  {
    title: 'GasAgreement.bespoke_tariff_rates duplicate_bespoke_rates: one bespoke rate per meter and payment method',
    change: (a) => {
      business(a);
      gas(a).agreements[0].bespoke_tariff_rates = [
        { standing_charge: '20', unit_rate: '5', payment_method: 'DD' },
        { standing_charge: '22', unit_rate: '6', payment_method: 'DD' },
      ];
    },
    expected: [`duplicate_bespoke_rates@${G}.agreements.0.bespoke_tariff_rates.1`],
  },
  {
    title: 'ElectricityAgreement.characteristics children_with_duplicate_values: each characteristic code once',
    change: (a) =>
      (elec(a).agreements[0].characteristics = [
        { code: 'gbr-electricity.payment-method', value: 'DIRECT_DEBIT' },
        { code: 'gbr-electricity.payment-method', value: 'PREPAYMENT' },
      ]),
    expected: [`children_with_duplicate_values@${E}.agreements.0.characteristics.1.code`],
  },
  {
    title: 'GasAgreement.characteristics children_with_duplicate_values: each characteristic code once',
    change: (a) =>
      (gas(a).agreements[0].characteristics = [
        { code: 'sales_channel', value: 'DIRECT' },
        { code: 'gbr-gas.payment-method', value: 'PREPAYMENT' },
        { code: 'sales_channel', value: 'MOVE_IN' },
      ]),
    expected: [`children_with_duplicate_values@${G}.agreements.0.characteristics.2.code`],
  },
  {
    title: 'AgreementIntermediaryDetails.portfolio_number invalid_portfolio_number: P- and 8 capital letters or digits',
    change: (a) => (elec(a).agreements[0].intermediary = { portfolio_number: 'P-ab12cd34' }),
    expected: [`invalid_portfolio_number@${E}.agreements.0.intermediary.portfolio_number`],
  },

  // Supply addresses and smart interest
  {
    title: 'EnergyLegacySupplyAddress multiple_property_administrators: one property administrator',
    change: (a) => a.supply_addresses[0].property_administrators.push({ ...a.supply_addresses[0].property_administrators[0], given_name: 'Seymour' }),
    expected: ['multiple_property_administrators@supply_addresses.0.property_administrators.1'],
  },
  {
    title: 'EnergySmartRefusalInterest smart_refusal_reason_given_for_interest: an interested customer gives no refusal reason',
    change: (a) => (elec(a).smart_refusal_interest.type = 'INTERESTED'),
    expected: [`smart_refusal_reason_given_for_interest@${E}.smart_refusal_interest.refusal_reason`],
  },

  // The account: who may have supply
  {
    title: 'EnergyAccount portfolio_lead_has_a_supply_address: a portfolio lead account has no supply address',
    change: (a) => (a.account_type = 'PORTFOLIO_LEAD'),
    expected: ['portfolio_lead_has_a_supply_address@supply_addresses'],
  },
  {
    title: 'EnergyAccount system_account_has_a_supply_address: a system account has no supply address',
    change: (a) => (a.account_type = 'SYSTEM'),
    expected: ['system_account_has_a_supply_address@supply_addresses'],
  },
  {
    title: "EnergyAccount occupier_account_with_multiple_supply_addresses: an unknown occupier's account has one supply address",
    change: (a) => {
      a.unknown_occupier = true;
      delete a.customers;
      a.supply_addresses.push(secondAddress('1 Other Road'));
    },
    expected: ['occupier_account_with_multiple_supply_addresses@supply_addresses.1'],
  },
  {
    title: 'EnergyAccount.supply_addresses duplicate_supply_addresses_found: the same first lines and postcode are one address',
    change: (a) => a.supply_addresses.push({ ...secondAddress('123  fake street', 'w1f9de'), supply_address2: '' }),
    expected: ['duplicate_supply_addresses_found@supply_addresses.1.supply_address1'],
  },
  {
    title: 'EnergyAccount tax_exemptions_provided_for_domestic_account: exemptions are for business accounts',
    change: (a) => (gas(a).vat_exemptions = [{ effective_from: '2019-01-01', rate: '1.0' }]),
    expected: [`tax_exemptions_provided_for_domestic_account@${G}.vat_exemptions`],
  },


  // The account: supply and agreements
  {
    title: 'EnergyAccount gaps_or_overlaps_in_agreement_dates: agreements follow one another without a gap',
    change: (a) => elec(a).agreements.unshift({ tariff_code: 'ELEC-1234-J', effective_from: '2019-01-01', effective_to: '2019-07-01' }),
    expected: [`gaps_or_overlaps_in_agreement_dates@${E}.agreements.1.effective_from`],
  },
  {
    title: 'EnergyAccount gaps_or_overlaps_in_agreement_dates: agreements do not overlap',
    change: (a) => gas(a).agreements.push({ tariff_code: 'GAS-1234-J', effective_from: '2020-01-01' }),
    expected: [`gaps_or_overlaps_in_agreement_dates@${G}.agreements.1.effective_from`],
  },
  {
    title: 'EnergyAccount no_agreement_covering_last_billed_to_date: an agreement covers the day billing reached',
    change: (a) => (elec(a).agreements[0].effective_from = '2019-08-02'),
    expected: [`no_agreement_covering_last_billed_to_date@${E}.agreements`],
  },
  {
    title: 'EnergyAccount meterpoint_with_agreement_not_on_supply: no agreement starts after supply ended',
    change: (a) => {
      gas(a).supply_end_date = '2019-07-31';
      gasMeter(a).reading_history = [{ reading_date: '2019-07-31', reading_value: '499.00', reading_type: 'CUSTOMER', billed: true }];
    },
    expected: [`meterpoint_with_agreement_not_on_supply@${G}.agreements.0.effective_from`],
  },
  {
    title: 'EnergyAccount meter_point_with_no_agreement: a meter point on supply has an agreement (so one covers the last billed to date too)',
    change: (a) => (gas(a).agreements = []),
    expected: [`meter_point_with_no_agreement@${G}.agreements`, `no_agreement_covering_last_billed_to_date@${G}.agreements`],
    awaiting: [`meter_point_with_no_agreement@${G}.agreements`],
  },
  {
    title: 'EnergyAccount no_current_or_future_aq_entry_found: a gas meter point on supply has an AQ in force today or later',
    change: (a) => (gas(a).aq_history[0].effective_to = '2019-12-31'),
    expected: [`no_current_or_future_aq_entry_found@${G}.aq_history`],
    awaiting: [`no_current_or_future_aq_entry_found@${G}.aq_history`],
  },
  {
    title: 'EnergyAccount future_supply_end_date: supply has ended or has no end date (EnergyAccount.supply_addresses loss_in_progress too)',
    change: (a) => (gas(a).supply_end_date = '2026-06-01'),
    expected: [`future_supply_end_date@${G}.supply_end_date`, `loss_in_progress@${G}`],
  },
  {
    title: 'EnergyAccount.supply_addresses loss_in_progress: a meter point whose supply ends after today is being lost',
    change: (a) => (elec(a).supply_end_date = '2026-01-16'),
    expected: [`future_supply_end_date@${E}.supply_end_date`, `loss_in_progress@${E}`],
  },
  {
    title: 'EnergyAccount no_reading_on_supply_end_date: a meter point off supply has a reading on its end date',
    change: (a) => (gas(a).supply_end_date = '2019-08-05'),
    expected: [`no_reading_on_supply_end_date@${G}.supply_end_date`],
  },
  {
    title: 'EnergyAccount future_supply_start_date: a meter point on supply started by today',
    change: (a) => {
      gas(a).supply_start_date = '2026-02-01';
      gas(a).agreements[0].effective_from = '2026-02-01';
    },
    expected: [`future_supply_start_date@${G}.supply_start_date`],
  },
  {
    title: 'EnergyAccount meter_point_with_no_meters: a meter point on supply has an active meter',
    change: (a) => (gas(a).meters = []),
    expected: [`meter_point_with_no_meters@${G}.meters`],
  },
  {
    title: 'EnergyAccount no_supply_point_on_supply: at least one meter point is on supply',
    change: (a) => {
      elec(a).supply_end_date = '2019-08-01';
      gas(a).supply_end_date = '2019-08-01';
    },
    expected: ['no_supply_point_on_supply@supply_addresses'],
  },
  {
    title: 'EnergyAccount unbilled_former_supply_address: an address the customer left is billed up to the day they left',
    change: (a) => (a.supply_addresses[0].customer_at_supply_address_to_date = '2019-09-01'),
    expected: ['unbilled_former_supply_address@supply_addresses.0.customer_at_supply_address_to_date'],
  },
  {
    title: 'EnergyAccount.supply_addresses import_meter_not_found_for_export_meter: an import/export meter is on two meter points',
    change: (a) => (elec(a).export_type = 'IMPORT_EXPORT'),
    expected: [`import_meter_not_found_for_export_meter@${EM}.meter_serial_number`],
  },
  {
    title: 'EnergyAccount.supply_addresses import_meter_not_found_for_export_meter: only one of the two is IMPORT_EXPORT',
    change: (a) => {
      elec(a).export_type = 'IMPORT_EXPORT';
      a.supply_addresses[0].meter_points.push({ ...importPoint(), export_type: 'IMPORT_EXPORT' });
    },
    expected: [`import_meter_not_found_for_export_meter@${EM}.meter_serial_number`, 'import_meter_not_found_for_export_meter@supply_addresses.0.meter_points.2.meters.0.meter_serial_number'],
  },

  // The account: readings and billed-to dates
  {
    title: 'EnergyAccount missing_transfer_reading_for_register: a settlement register of an active meter has a transfer reading',
    change: (a) => (elecMeter(a).transfer_readings = []),
    expected: [`missing_transfer_reading_for_register@${EM}.registers.0.register_id`],
  },
  {
    title: 'EnergyAccount multiple_transfer_readings_for_register: and only one',
    change: (a) => elecMeter(a).transfer_readings.push({ ...elecMeter(a).transfer_readings[0], reading_value: '1001.00' }),
    expected: [`multiple_transfer_readings_for_register@${EM}.transfer_readings.1.register_id`],
  },
  {
    title: 'EnergyAccount active_gas_meter_with_multiple_transfer_readings: an active gas meter has one transfer reading',
    change: (a) => gasMeter(a).transfer_readings.push({ ...gasMeter(a).transfer_readings[0], reading_type: 'ESTIMATE' }),
    expected: [`active_gas_meter_with_multiple_transfer_readings@${GM}.transfer_readings.1`],
  },
  {
    title: 'EnergyAccount active_gas_meter_without_transfer_reading: an active gas meter has its transfer reading',
    change: (a) => (gasMeter(a).transfer_readings = []),
    expected: [`active_gas_meter_without_transfer_reading@${GM}.transfer_readings`],
    awaiting: [`active_gas_meter_without_transfer_reading@${GM}.transfer_readings`],
  },
  {
    title: 'EnergyAccount reading_meter_fully_billed: a removed meter billed past its removal takes no transfer reading',
    change: (a) => {
      fullyBilledExchange(a);
      delete gasMeter(a).prepay_details;
      delete gasMeter(a).is_prepay;
      gasMeter(a).transfer_readings = [{ reading_date: '2019-08-01', reading_value: '500.00', reading_type: 'CUSTOMER' }];
    },
    expected: [`reading_meter_fully_billed@${GM}.transfer_readings.0`],
  },
  {
    title: 'EnergyAccount missing_eacs_for_active_register_tpr: each settlement register of an active meter has an EAC for its TPR',
    change: (a) => (elecMeter(a).registers[0].tpr = '00002'),
    expected: [`missing_eacs_for_active_register_tpr@${EM}.registers.0.tpr`],
  },
  {
    title: 'EnergyAccount last_billed_to_date_not_found: a billed account without a last billed to date gives one on each settlement register and gas meter',
    change: (a) => delete a.last_billed_to_date,
    expected: [`last_billed_to_date_not_found@${EM}.registers.0.last_billed_to_date`, `last_billed_to_date_not_found@${GM}.last_billed_to_date`],
  },
  {
    title: 'EnergyAccount prepay_details_on_fully_billed_meter: a removed meter billed past its removal has no prepay details',
    change: fullyBilledExchange,
    expected: [`prepay_details_on_fully_billed_meter@${GM}.prepay_details`],
  },
  {
    title: 'EnergyAccount transfer_vend_read_date_must_match_last_billed_to_date: the vend read is the day before the last billed to date',
    change: (a) => (gasMeter(a).prepay_details.transfer_vend_read_date = '2019-08-01'),
    expected: [`transfer_vend_read_date_must_match_last_billed_to_date@${GM}.prepay_details.transfer_vend_read_date`],
  },
  {
    title: 'EnergyAccount transfer_vend_read_date_must_match_last_billed_to_date: the meter-level date comes first',
    change: (a) => (gasMeter(a).last_billed_to_date = '2019-08-01'),
    expected: [],
  },
  {
    title: 'EnergyAccount.supply_addresses no_reading_on_removed_on: an exchanged meter has a reading on the day it was removed',
    change: (a) => {
      gasExchange(a);
      gasMeter(a).reading_history = [];
    },
    expected: [`no_reading_on_removed_on@${GM}.removed_on`],
  },
  {
    title: 'EnergyAccount.supply_addresses no_transfer_reading_on_exchanged_meter: an exchanged meter not billed to its removal has transfer readings',
    change: (a) => {
      gasExchange(a);
      gasMeter(a).transfer_readings = [];
    },
    expected: [`no_transfer_reading_on_exchanged_meter@${GM}.transfer_readings`],
  },
  {
    title: 'EnergyAccount.supply_addresses no_last_billed_to_date_on_exchanged_meter: an exchanged meter has its own last billed to date',
    change: (a) => {
      gasExchange(a);
      delete gasMeter(a).last_billed_to_date;
    },
    expected: [`no_last_billed_to_date_on_exchanged_meter@${GM}.last_billed_to_date`],
  },
  {
    title: 'EnergyAccount.supply_addresses last_billed_to_date_on_new_meter: the replacement meter has none',
    change: (a) => {
      gasExchange(a);
      gas(a).meters[1].last_billed_to_date = '2019-09-02';
    },
    // Its own date makes the new meter look billed since it went in, so it would need a transfer reading.
    expected: [`active_gas_meter_without_transfer_reading@${G}.meters.1.transfer_readings`, `last_billed_to_date_on_new_meter@${G}.meters.1.last_billed_to_date`],
    awaiting: [`active_gas_meter_without_transfer_reading@${G}.meters.1.transfer_readings`],
  },
  {
    title: 'EnergyAccount.supply_addresses billed_reading_after_last_billed_to_date: no billed reading after the last billed to date',
    change: (a) => (elecMeter(a).reading_history[0].reading_date = '2019-08-10'),
    expected: [`billed_reading_after_last_billed_to_date@${EM}.reading_history.0.reading_date`],
  },
  {
    title: 'EnergyAccount.supply_addresses billed_reading_after_last_billed_to_date: a register-level date comes first',
    change: (a) => (elecMeter(a).registers[0].last_billed_to_date = '2019-06-01'),
    expected: [`billed_reading_after_last_billed_to_date@${EM}.reading_history.0.reading_date`, `transfer_reading_dates_must_match_last_billed_to_date@${EM}.transfer_readings.0.reading_date`],
  },
  {
    title: 'EnergyAccount.supply_addresses transfer_reading_dates_must_match_last_billed_to_date: a transfer reading is dated on the last billed to date',
    change: (a) => (gasMeter(a).transfer_readings[0].reading_date = '2019-07-31'),
    expected: [`transfer_reading_dates_must_match_last_billed_to_date@${GM}.transfer_readings.0.reading_date`],
  },
];

/** Accounts the rules accept: each shows where a rule stops. */
const valid: { title: string; change: (a: Account) => void }[] = [
  { title: 'a smart meter with its smart details', change: (a) => Object.assign(elecMeter(a), { smart_type: 'SMETS2', smart_device_id: '0123456789abcdef', smart_commissioned_on: '2019-01-01' }) },
  { title: 'an active electricity prepay meter with a reference that is a number once spaces are gone', change: (a) => Object.assign(elecMeter(a), { is_prepay: true, prepay_customer_reference_number: ' 1234 5678 ' }) },
  {
    title: 'an odd TPR from 01201 to 01229 on two registers',
    change: (a) => {
      elecMeter(a).registers[1].tpr = '01201';
      elecMeter(a).registers[0].tpr = '01201';
      for (const eac of elec(a).eac_history) eac.tpr = '01201';
    },
  },
  {
    title: 'a dummy meter exchange: the same serial, installed the day after it was removed',
    change: (a) => {
      fullyBilledExchange(a);
      delete gasMeter(a).prepay_details;
      delete gasMeter(a).is_prepay;
      gas(a).meters[1].meter_serial_number = '54BV';
    },
  },
  {
    title: 'a register without TPR on a half-hourly meter point',
    change: (a) => {
      elec(a).measurement_class = 'C';
      delete elecMeter(a).registers[1].tpr;
    },
  },
  { title: 'an MOP to appoint without agents', change: (a) => (elec(a).mop_to_appoint = 'ABCD') },
  {
    title: 'capacity values and configuration periods that follow one another, the latest open-ended',
    change: (a) => {
      elec(a).capacity_values = [
        { effective_from_date: '2019-06-01', value: '12' },
        { effective_from_date: '2019-01-01', effective_to_date: '2019-06-01', value: '10' },
      ];
      elec(a).configuration_periods = [{ effective_from_date: '2019-01-01', effective_to_date: '2020-01-01' }, { effective_from_date: '2020-01-01' }];
    },
  },
  {
    title: 'tax exemptions on a business account, one ending the day the next starts',
    change: (a) => {
      business(a);
      elec(a).vat_exemptions = [
        { effective_from: '2019-06-01', rate: '0.5' },
        { effective_from: '2019-01-01', effective_to: '2019-06-01', rate: '1.0' },
      ];
    },
  },
  {
    title: 'bespoke rates for different payment methods, and one characteristic of each code',
    change: (a) => {
      business(a);
      gas(a).agreements[0].bespoke_tariff_rates = [
        { standing_charge: '20', unit_rate: '5', payment_method: 'DD' },
        { standing_charge: '22', unit_rate: '6', payment_method: 'NDD' },
      ];
      gas(a).agreements[0].characteristics = [
        { code: 'sales_channel', value: 'DIRECT' },
        { code: 'gbr-gas.payment-method', value: 'PREPAYMENT' },
      ];
      elec(a).agreements[0].intermediary = { portfolio_number: 'P-AB12CD34' };
    },
  },

  { title: 'agreements that follow one another', change: (a) => elec(a).agreements.unshift({ tariff_code: 'ELEC-1234-J', effective_from: '2019-01-01', effective_to: '2019-08-01' }) },
  { title: 'an unmetered electricity meter point without meters', change: (a) => Object.assign(elec(a), { measurement_class: 'B', meters: [], eac_history: [] }) },
  {
    title: 'a meter point off supply with a reading on its end date',
    change: (a) => {
      gas(a).supply_end_date = '2019-08-05';
      gasMeter(a).reading_history = [{ reading_date: '2019-08-05', reading_value: '501.00', reading_type: 'CUSTOMER', billed: false }];
    },
  },
  { title: 'an address the customer left on the day it was billed to', change: (a) => (a.supply_addresses[0].customer_at_supply_address_to_date = '2019-08-01') },
  { title: 'another address with a different second line', change: (a) => a.supply_addresses.push({ ...secondAddress('123 Fake Street', 'W1F 9DE'), supply_address2: 'Flat 2' }) },
  {
    title: 'an import/export meter on its export meter point and its import one',
    change: (a) => {
      elec(a).export_type = 'IMPORT_EXPORT';
      a.supply_addresses[0].meter_points.push(importPoint());
    },
  },
  { title: 'a gas meter exchange after the last bill, with all its readings and dates', change: gasExchange },
  {
    title: 'a meter exchange billed past the removal, the old meter without prepay details',
    change: (a) => {
      fullyBilledExchange(a);
      delete gasMeter(a).prepay_details;
      delete gasMeter(a).is_prepay;
    },
  },
  {
    title: 'a billed account whose meters carry their own last billed to dates',
    change: (a) => {
      delete a.last_billed_to_date;
      elecMeter(a).registers[0].last_billed_to_date = '2019-08-01';
      gasMeter(a).last_billed_to_date = '2019-08-01';
    },
  },
  {
    title: 'meter-level last billed to dates that move the transfer and vend reads with them',
    change: (a) => {
      gasMeter(a).last_billed_to_date = '2019-09-01';
      gasMeter(a).transfer_readings[0].reading_date = '2019-09-01';
      gasMeter(a).prepay_details.transfer_vend_read_date = '2019-08-31';
      elecMeter(a).registers[0].last_billed_to_date = '2019-07-31';
      elecMeter(a).transfer_readings[0].reading_date = '2019-07-31';
    },
  },
  { title: 'a reading after the last billed to date that is not billed', change: (a) => Object.assign(elecMeter(a).reading_history[0], { reading_date: '2019-08-10', billed: false }) },
];

describe('the meter rules (rules/meters.ts)', () => {
  for (const c of cases) {
    it(c.title, () => {
      // While the awaiting rules are not applied, the account's problems are the others.
      const applied = awaitingRules.length === 0 ? c.expected : c.expected.filter((e) => !c.awaiting?.includes(e));
      expect(errorsAfter(c.change)).toEqual(sorted(applied));
      expect(errorsAfter(c.change, errorsWithAwaiting)).toEqual(sorted(c.expected));
    });
  }

  describe('accept', () => {
    for (const v of valid) {
      it(v.title, () => {
        expect(errorsAfter(v.change)).toEqual([]);
        expect(errorsAfter(v.change, errorsWithAwaiting)).toEqual([]);
      });
    }
  });

  it('names every rule it applies in the title of a case', () => {
    const titles = cases.map((c) => c.title);
    const missing = [...implementedPairs(meterRules(() => TODAY)), ...implementedPairs(meterRulesAwaitingExamples(() => TODAY))].filter((pair) => !titles.some((t) => t.includes(pair)));
    expect(missing).toEqual([]);
  });

  it('the rules awaiting the examples accept the published example and a generated cohort', () => {
    expect(errorsWithAwaiting(published('account'))).toEqual([]);
    for (const { bundle, mistake } of generateCohort({ count: 40, supplier: 'SUPPLIER', today: TODAY, seed: 3 })) {
      if (!mistake) expect(errorsWithAwaiting(bundle.account), String(bundle.account.external_account_number)).toEqual([]);
    }
  });
});
