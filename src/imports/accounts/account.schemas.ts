import type { z } from 'zod';
import { hooksFor } from '../../contract/rules.js';
import { buildContractSchemas } from '../../contract/schemas.generated.js';
import type { ReferenceData } from '../reference/reference.service.js';
import { accountRules } from './rules/index.js';

// The account data object is the published EnergyAccount (decisions §1): its structure is generated
// from the document (src/contract/), and this service's rules attach to it by their places in the
// document (rules/). Every object is strict, so an undocumented key anywhere is `unknown_field`,
// and every problem found is reported at once.

/**
 * The account data object. `today` returns the UTC calendar date and is read at parse time, so one
 * schema serves every request under an injectable clock; the reference lists are read at parse time
 * too, so the caller refreshes them first. Whether `import_supplier` exists, and whether
 * a meter point belongs to another account, are database questions answered by the service.
 */
export function makeAccountDataSchema(today: () => string, reference: ReferenceData) {
  return buildContractSchemas(hooksFor(accountRules(today), (kind) => reference.values(kind))).EnergyAccount;
}

export type AccountDataSchema = ReturnType<typeof makeAccountDataSchema>;
/** A parsed account: the service's rules make external_account_number present and not blank. */
export type AccountData = z.output<AccountDataSchema> & { external_account_number: string };
export type AccountDataInput = z.input<AccountDataSchema>;

/** Every meter point identifier in the account, in payload order. */
export function meterPointIdentifiers(data: AccountData): string[] {
  return (data.supply_addresses ?? []).flatMap((sa) => sa.meter_points.map((mp) => mp.identifier));
}
