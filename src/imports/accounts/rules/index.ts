import type { NotImplemented, RuleSpec } from '../../../contract/rules.js';
import { contactRules } from './contact.js';
import { dateRules } from './dates.js';
import { meterRules, meterRulesNotImplemented } from './meters.js';
import { partyRules, partyRulesNotImplemented } from './parties.js';
import { paymentRules, paymentRulesNotImplemented } from './payments.js';
import { serviceRules } from './service.js';
import { statementRules, statementRulesNotImplemented } from './statements.js';

/**
 * Every rule applied to the account data object; `today` returns the UTC calendar date.
 * - service: decisions §1's own rules (MPAN/MPRN, external account number, duplicates).
 * - contact: phones, postcodes, delivery points, e-mail addresses.
 * - dates: periods whose end may not precede their start; dates not in the future.
 * - meters: meter points, meters, registers, readings, agreements, consumption histories.
 * - statements: the account's transactions, ledgers, balances and statement dates.
 * - payments: payment schedules, plans, instructions, preferences, adequacy, deposits, debts.
 * - parties: account type, customers, business, occupiers, campaigns, consents, complaints, portfolio.
 */
export function accountRules(today: () => string): RuleSpec[] {
  return [...serviceRules, ...contactRules, ...dateRules(today), ...meterRules(today), ...statementRules(today), ...paymentRules(today), ...partyRules(today)];
}

/** The document's account rules this service does not apply, each with its reason. */
export const accountRulesNotImplemented: readonly NotImplemented[] = [
  ...meterRulesNotImplemented,
  ...statementRulesNotImplemented,
  ...paymentRulesNotImplemented,
  ...partyRulesNotImplemented,
];
