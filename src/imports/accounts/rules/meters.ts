import { because, type NotImplemented, type RuleSpec } from '../../../contract/rules.js';
import { activeMeterRegisters, objectRules } from './meters-objects.js';
import { periodRules } from './meters-periods.js';
import { readingRules } from './meters-readings.js';
import { supplyRules } from './meters-supply.js';

// Meter points, meters, registers, readings, agreements, consumption histories, tax exemptions, smart
// details, supply addresses, and the account-level rules about supply, readings and agreements:
// - meters-objects.ts: one meter point, meter, register, agreement or supply address at a time;
// - meters-periods.ts: dated lists (capacity, configuration periods, exemptions, AQ and EAC histories);
// - meters-supply.ts: the account's meter points on supply, their agreements, meters and AQs;
// - meters-readings.ts: transfer and historical readings, exchanged meters, last billed to dates;
// - meters-model.ts: how they read the payload (billable, active, settlement, billed-to dates).

/** Rules of the document for this part of the account (see index.ts). */
export function meterRules(today: () => string): RuleSpec[] {
  const supply = supplyRules(today);
  const readings = readingRules(today);
  return [...objectRules, activeMeterRegisters, ...periodRules(today), ...supply.applied, ...supply.awaiting, ...readings.applied, ...readings.awaiting];
}

/** Written while the project's own example account lacked registers, agreements and AQs; now all applied. */
export function meterRulesAwaitingExamples(_today: () => string): RuleSpec[] {
  return [];
}

const participants = because.referenceData('market participants');
const products = (what: string) => because.referenceData(`products (${what})`);

/** Rules of the document for this part of the account that are not applied, each with its reason. */
export const meterRulesNotImplemented: NotImplemented[] = [
  ...[
    'ElectricityAgentContractReference.agent_mpid',
    'ElectricityMeterPoint.dc_to_appoint',
    'ElectricityMeterPoint.mop_to_appoint',
    'ElectricityMeterPoint.mpid',
    'GasMeterPoint.mam_to_appoint',
    'GasMeterPoint.mpid',
    'GasMeterPoint.shipper_mpid',
  ].map((at) => ({ at, codes: ['market_participant_not_found', 'supply_type_not_recognised'], reason: participants })),
  { at: 'ElectricityMeterPoint', codes: ['agent_contract_reference_does_not_exist', 'multiple_active_agent_contract_references'], reason: because.referenceData('agent contracts') },
  { at: 'ElectricityRegister.tpr', codes: ['tpr_not_found'], reason: because.referenceData('Market Domain Data (the TPRs that exist)') },
  ...['ElectricityAgreement', 'GasAgreement'].flatMap((at): NotImplemented[] => [
    { at, codes: ['invalid_period', 'rate_band_does_not_exist'], reason: products('their rate bands') },
    { at, codes: ['open_ended_agreement_for_end_dated_product'], reason: products('their end dates') },
    { at: `${at}.tariff_code`, codes: ['tariff_code_not_found'], reason: because.referenceData('tariffs') },
  ]),
  {
    at: 'GasAgreement',
    codes: ['no_register_id_or_rate_type_provided_for_bespoke_elec_rate'],
    reason: because.cannotArise('a gas bespoke rate has no registers, so none can lack a register_id or rate_type'),
  },
  ...['ElectricityMeter', 'GasMeter'].flatMap((m): NotImplemented[] => [
    { at: `${m}.meter_serial_number`, codes: ['invalid_meter_serial_number'], reason: because.unpublished('the industry format a meter serial number must follow') },
    {
      at: `${m}.meter_serial_number`,
      codes: ['supply_type_not_recognised'],
      reason: because.cannotArise("a meter is only read under a meter point whose supply_type the structure has already accepted"),
    },
  ]),
  {
    at: 'GasMeter.prepay_customer_reference_number',
    codes: ['invalid_prepay_customer_reference_number'],
    reason: because.cannotArise('the document applies this check to electricity prepay meters only'),
  },
  {
    at: 'ProductCharacteristic',
    codes: ['characteristic_code_not_found', 'invalid_characteristic_value'],
    reason: because.cannotArise("the document lists every characteristic code and its values, and the structure already refuses others (invalid_choice)"),
  },
  {
    at: 'EnergyAccount',
    codes: ['business_supply_type_on_domestic_account'],
    reason: because.cannotArise('the business-only supply types are not among the supply types the document accepts (ELECTRICITY, GAS)'),
  },
  {
    at: 'EnergyAccount',
    codes: ['account_contracts_without_supply_points'],
    reason: because.cannotArise('the document gives the account no account_contracts field, so an account that sends one is refused as unknown_field'),
  },
  {
    at: 'EnergyAccount',
    codes: ['term_supply_type_mismatch', 'contract_term_product_code_not_in_agreements'],
    reason: because.cannotArise('the document gives the account no contract terms, so an account that sends them is refused as unknown_field'),
  },
  {
    // The business declares contract identifiers only in the form the document selects when the
    // import supplier enforces business contracts; without that setting none can be declared.
    at: 'EnergyAccount',
    codes: ['agreement_business_contract_identifier_not_declared'],
    reason: because.configuration('enforce_business_contracts_exist'),
  },
  { at: 'EnergyAccount', codes: ['supply_charge_line_items_not_covered_by_single_agreement'], reason: products('which product each tariff code belongs to') },
  { at: 'EnergyAccount', codes: ['tariff_type_does_not_match_meter_point_type'], reason: because.referenceData('tariffs (how many rates each has)') },
  { at: 'EnergyAccount', codes: ['tariff_type_does_not_match_meter_type'], reason: because.referenceData('tariffs (which are prepay tariffs)') },
  {
    at: 'EnergyAccount',
    codes: ['agreement_effective_from_before_product_available_from', 'agreement_cannot_start_before_product_available'],
    reason: products('the dates they are available from'),
  },
  {
    at: 'EnergyAccount.supply_addresses',
    codes: ['supply_points_provided_while_skip_supply_point_creation_enabled', 'supply_points_not_provided_while_skip_supply_point_creation_disabled'],
    reason: because.configuration('Skip supply point creation'),
  },
  { at: 'EnergyAccount.supply_addresses', codes: ['supply_addresses_provided_while_skip_property_creation_enabled'], reason: because.configuration('Skip property creation') },
  { at: 'EnergyAccount.supply_addresses', codes: ['agents_supplied_for_non_on_market_switch'], reason: because.configuration('send_registration_flows') },
  {
    at: 'EnergyAccount.supply_addresses',
    codes: ['unexpected_number_of_meter_points_found_for_meter'],
    reason: because.referenceData('meter technical details (which meters are twin-element meters)'),
  },
  { at: 'EnergyLegacySupplyAddress', codes: ['invalid_address'], reason: because.unpublished('what format a supply address must have') },
  {
    at: 'EnergyLegacySupplyAddress',
    codes: ['both_landlord_details_and_property_administrators_provided'],
    reason: because.cannotArise('the document gives a supply address no landlord details field, so one that sends them is refused as unknown_field'),
  },
];
