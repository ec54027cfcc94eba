import type { RuleSpec } from '../../../contract/rules.js';
import { notInFuture, periodRule } from './helpers.js';

/** Periods whose end may not come before their start, and dates that may not lie in the future. */
export function dateRules(today: () => string): RuleSpec[] {
  const later = 'start_date_later_than_end_date';
  return [
    periodRule('ContributionSchemeAgreement', 'active_period_start_date', 'active_period_end_date', later),
    periodRule('ContributionSchemePeriod', 'start_date', 'end_date', later),
    // decisions §1: an agreement's effective_to is after its effective_from (a zero-length agreement
    // covers nothing), stricter than the document's "on or after" and with its code.
    periodRule('ElectricityAgreement', 'effective_from', 'effective_to', later, true),
    periodRule('GasAgreement', 'effective_from', 'effective_to', later, true),
    periodRule('ElectricityCapacityValue', 'effective_from_date', 'effective_to_date', later),
    periodRule('ElectricityConfigurationPeriod', 'effective_from_date', 'effective_to_date', later),
    periodRule('ElectricityMeterPoint', 'supply_start_date', 'supply_end_date', later),
    periodRule('GasMeterPoint', 'supply_start_date', 'supply_end_date', later),
    periodRule('EnergyCommissionContract', 'effective_from', 'effective_to', later),
    periodRule('GasAnnualQuantity', 'effective_from', 'effective_to', later),
    periodRule('LineItem', 'start_date', 'end_date', later),
    periodRule('PartnerOrganisation', 'valid_from', 'valid_to', later),
    periodRule('PaymentSchedule', 'start_date', 'end_date', later),
    periodRule('PropertyAdministrator', 'effective_from', 'effective_to', later),
    periodRule('AccountCampaign', 'start_date', 'expiry_date', 'start_date_same_as_end_date', true),
    periodRule('EnergyTaxExemption', 'effective_from', 'effective_to', 'start_date_same_as_end_date', true),

    notInFuture('AccountConsent.signed_at', 'date_in_future', today),
    notInFuture('CustomerConsent.signed_at', 'date_in_future', today),
    notInFuture('EnergyAccount.last_payment_review_date', 'last_payment_review_date_is_future_dated', today),
    notInFuture('ElectricityMeter.smart_commissioned_on', 'future_smart_meter_commission_date', today),
    notInFuture('GasMeter.smart_commissioned_on', 'future_smart_meter_commission_date', today),
    notInFuture('PaymentAdequacyChange.applied_at', 'payment_adequacy_invalid_dates', today),
    notInFuture('PaymentAdequacyChange.created_at', 'payment_adequacy_invalid_dates', today),

    // decisions §1: dates that describe the past may not be in the future.
    notInFuture('EnergyAccount.date_of_sale', 'date_in_future', today, 'service'),
    notInFuture('EnergyAccount.last_statement_closing_date', 'date_in_future', today, 'service'),
    notInFuture('Reading.reading_date', 'date_in_future', today, 'service'),
    notInFuture('HistoricalReading.reading_date', 'date_in_future', today, 'service'),
    notInFuture('EnergyReading.reading_date', 'date_in_future', today, 'service'),
    ...['EnergyCustomer', 'BusinessUser', 'PropertyAdministrator'].map((schema) => dateOfBirth(`${schema}.date_of_birth`, today)),
  ];
}

/** A date of birth lies before today (decisions §1). */
function dateOfBirth(at: string, today: () => string): RuleSpec {
  return {
    at,
    codes: ['date_in_future'],
    source: 'service',
    value: (v, report) => {
      const t = today();
      if (typeof v === 'string' && v >= t) report('date_in_future', `A date of birth must be before today (${t}).`);
      return v;
    },
  };
}
