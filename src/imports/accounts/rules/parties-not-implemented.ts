import { because, type NotImplemented } from '../../../contract/rules.js';

// The document's party rules this service does not apply, and why. Rules another file already
// applies (phones, postcodes, test e-mail addresses, periods, dates in the future, metadata) are
// not repeated here.

const customerDetails = because.referenceData('registered customer detail namespaces, with the type and checks of each');
const internalEmail = because.configuration('internal e-mail addresses of the instance');
const newPortfolios = because.configuration('the import supplier creates new portfolios');
const consentsEnabled = because.configuration('consents are enabled');
const psrRecords = because.referenceData('PSR records (needs, descriptions and industry codes)');
const noRequiredNamespace = because.cannotArise('the document says no customer detail namespace is configured as required, so the check is skipped');

export const partyRulesNotImplemented: NotImplemented[] = [
  { at: 'AccountCampaign', codes: ['campaign_not_found'], reason: because.referenceData('campaigns') },
  { at: 'AccountPortfolio', codes: ['portfolio_references_provided'], reason: newPortfolios },
  { at: 'BusinessPortfolio', codes: ['portfolio_references_provided'], reason: newPortfolios },
  { at: 'EnergyAccount', codes: ['portfolio_references_provided'], reason: newPortfolios },
  {
    at: 'BusinessPortfolio',
    codes: ['portfolio_references_missing'],
    reason: because.cannotArise('a business portfolio must list at least one portfolio reference, so a portfolio without one is refused as required or min_items first'),
  },
  {
    // The account's only portfolio is `portfolio`, an AccountPortfolio: the same rule on that schema
    // reports a missing reference there, once.
    at: 'EnergyAccount',
    codes: ['portfolio_references_missing'],
    reason: because.cannotArise("the account's one portfolio is checked by the same rule on AccountPortfolio, which reports it"),
  },
  { at: 'AccountReference', codes: ['reference_already_exists'], reason: because.referenceData('other accounts and their references') },
  { at: 'AccountReference.namespace', codes: ['invalid_reference_namespace'], reason: because.referenceData('account reference namespaces') },
  { at: 'Address', codes: ['invalid_address'], reason: because.unpublished('what makes a structured address well formed') },
  { at: 'EnergyAccount', codes: ['invalid_address'], reason: because.unpublished('what makes a legacy billing address well formed') },
  {
    at: 'BusinessDetail',
    codes: ['business_detail_incorrect_value_type', 'business_detail_failed_validation'],
    reason: because.referenceData('registered business detail keys, with the type and checks of each'),
  },
  { at: 'BusinessUser.details', codes: ['customer_detail_failed_validation', 'customer_detail_incorrect_value_type', 'customer_detail_not_registered'], reason: customerDetails },
  { at: 'EnergyCustomer.details', codes: ['customer_detail_failed_validation', 'customer_detail_incorrect_value_type', 'customer_detail_not_registered'], reason: customerDetails },
  { at: 'CustomerUserDetail', codes: ['customer_detail_failed_validation', 'customer_detail_incorrect_value_type', 'customer_detail_not_registered'], reason: customerDetails },
  { at: 'BusinessUser.user_details', codes: ['required_customer_details_namespace_missing'], reason: noRequiredNamespace },
  { at: 'EnergyCustomer.user_details', codes: ['required_customer_details_namespace_missing'], reason: noRequiredNamespace },
  { at: 'BusinessUser.email', codes: ['internal_email_address'], reason: internalEmail },
  { at: 'EnergyCustomer.email', codes: ['internal_email_address'], reason: internalEmail },
  { at: 'EnergyAccount.billing_email', codes: ['internal_email_address'], reason: internalEmail },
  {
    at: 'BusinessWithExistingContracts',
    codes: ['business_information_required_if_not_linking_via_contract', 'business_information_not_required_if_linking_via_contract'],
    reason: because.configuration('link_account_to_business_with_contract of the import supplier'),
  },
  { at: 'EnergyAccount', codes: ['business_field_required'], reason: because.configuration('enforce_business_contracts_exist of the import supplier') },
  { at: 'Complaint', codes: ['invalid_complaint_type_or_subtype'], reason: because.configuration('complaint types and subtypes allowed') },
  { at: 'Complaint', codes: ['invalid_official_organization_or_status'], reason: because.configuration('official complaint organisations and their statuses') },
  { at: 'ComplaintContact', codes: ['invalid_complaint_source'], reason: because.configuration('complaint communication sources') },
  { at: 'EnergyAccount', codes: ['managed_accounts_are_not_allowed'], reason: because.configuration('managed accounts are allowed') },
  { at: 'EnergyAccount', codes: ['customer_given_name_required'], reason: because.configuration('registration flows are sent for the import supplier') },
  {
    at: 'EnergyAccount',
    codes: ['operations_team_provided_when_using_auto_allocation', 'operations_team_should_be_provided'],
    reason: because.configuration('operations teams are allocated automatically'),
  },
  { at: 'EnergyAccount.operations_team_name', codes: ['operations_team_name_does_not_exist'], reason: because.referenceData('operations teams') },
  {
    // Its name promises a details/user_details check; its description compares business users with
    // customers without saying which fields must agree, or how.
    at: 'EnergyAccount',
    codes: ['customer_details_and_user_details_both_provided'],
    reason: because.unpublished('which business user fields must match which customer fields'),
  },
  {
    at: 'EnergyAccount',
    codes: ['parent_property_reference_not_found'],
    reason: because.cannotArise('the document defines no parent_property_reference field (nor properties), so an unknown field is refused before any reference could dangle'),
  },
  { at: 'EnergyAccount.consents', codes: ['field_not_enabled'], reason: consentsEnabled },
  { at: 'EnergyCustomer.consents', codes: ['field_not_enabled'], reason: consentsEnabled },
  {
    at: 'EnergyCommissionContract',
    codes: ['commission_type_requires_value', 'uplift_and_value_conflict'],
    reason: because.unpublished('what the commission uplift rule accepts: its name and description are untranslated placeholders'),
  },
  { at: 'EnergyCommissionContract.affiliate_organisation_name', codes: ['affiliate_organisation_does_not_exist'], reason: because.referenceData('affiliate organisations') },
  {
    // Read literally (every customer needs a role) it would refuse the published example, whose
    // customer has neither account_roles nor portfolio_roles.
    at: 'EnergyCustomer',
    codes: ['required_user_role'],
    reason: because.unpublished('when a customer needs a role: the published example account has a customer without one'),
  },
  { at: 'EnergyCustomer', codes: ['customer_has_exclusive_role_conflict'], reason: because.referenceData('roles that are exclusive and the roles users already hold') },
  { at: 'EnergyPSR', codes: ['temporary_psr_does_not_have_end_date'], reason: because.referenceData('PSR records, which say which needs are temporary') },
  { at: 'EnergyPSR.description', codes: ['psr_record_description_not_found'], reason: psrRecords },
  { at: 'EnergyPSR.elec_industry_code', codes: ['electricity_psr_record_not_found', 'psr_invalid_industry_code'], reason: psrRecords },
  { at: 'EnergyPSR.gas_industry_code', codes: ['gas_psr_record_not_found', 'psr_invalid_industry_code'], reason: psrRecords },
  { at: 'PartnerOrganisation.organisation_number', codes: ['partner_organisation_does_not_exist'], reason: because.referenceData('partner organisations') },
];
