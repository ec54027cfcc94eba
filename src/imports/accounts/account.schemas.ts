import { z } from 'zod';
import {
  choice,
  crossFieldCheck,
  dateInPast,
  dateNotInFuture,
  dateString,
  decimalString,
  email,
  isRecord,
  isValidMprn,
  isValidMpanCore,
  mobilePhone,
  phoneNumber,
  ukPostcode,
} from '../shared/fields.js';

// The account data object of decisions §1. Every object is strict: the interface says payloads
// carry only documented fields, so an unknown key anywhere is `unknown_field`.
//
// Per-field rules live on the fields, so they report whatever else is wrong. Rules relating
// several fields are crossFieldChecks, which run even when a sibling failed and look only at the
// fields they need once those parsed; together this reports every problem in one response.

/** Free text that may be omitted, and may be empty when given (supplier exports often send ""). */
const optionalText = (max: number) => z.string().max(max).optional();
/** Free text that must be given and not be empty (`blank`). */
const requiredText = (max: number) => z.string().min(1).max(max);

const ADDRESS_LINE_MAX = 512;

const meterSchema = z.strictObject({
  serial_number: requiredText(255),
});

const agreementSchema = z
  .strictObject({
    tariff_code: requiredText(255),
    effective_from: dateString,
    effective_to: dateString.optional(),
  })
  .check(
    crossFieldCheck((a, ctx) => {
      if (!isRecord(a) || !ctx.parsed(['effective_from']) || !ctx.parsed(['effective_to'])) return;
      const { effective_from: from, effective_to: to } = a;
      if (typeof from !== 'string' || typeof to !== 'string') return;
      if (to <= from) {
        ctx.addIssue('start_date_later_than_end_date', `effective_to (${to}) must be after effective_from (${from}).`, ['effective_to']);
      }
    }),
  );

const SUPPLY_TYPES = ['ELECTRICITY', 'GAS'] as const;

const meterPointSchema = z
  .strictObject({
    supply_type: choice(SUPPLY_TYPES),
    // Its format depends on supply_type, so it is checked below once both parsed.
    identifier: z.string(),
    supply_start_date: dateString,
    meters: z.array(meterSchema).optional(),
    agreements: z.array(agreementSchema).optional(),
  })
  .check(
    crossFieldCheck((mp, ctx) => {
      if (!isRecord(mp) || !ctx.parsed(['supply_type']) || !ctx.parsed(['identifier'])) return;
      const { supply_type: type, identifier } = mp;
      if (typeof identifier !== 'string') return;
      if (type === 'ELECTRICITY' && !isValidMpanCore(identifier)) {
        ctx.addIssue('invalid_mpan', `${JSON.stringify(identifier)} is not a valid MPAN core: 13 digits with a valid check digit.`, ['identifier']);
      } else if (type === 'GAS' && !isValidMprn(identifier)) {
        ctx.addIssue('invalid_mprn', `${JSON.stringify(identifier)} is not a valid MPRN: 6 to 10 digits.`, ['identifier']);
      }
    }),
  );

const supplyAddressSchema = z.strictObject({
  supply_address1: requiredText(ADDRESS_LINE_MAX),
  supply_address2: optionalText(ADDRESS_LINE_MAX),
  supply_address3: optionalText(ADDRESS_LINE_MAX),
  supply_address4: optionalText(ADDRESS_LINE_MAX),
  supply_address5: optionalText(ADDRESS_LINE_MAX),
  supply_postcode: ukPostcode,
  customer_at_supply_address_from_date: dateString,
  meter_points: z.array(meterPointSchema).min(1),
});

const customerPreferencesSchema = z.strictObject({
  opted_into_marketing: z.boolean().optional(),
  opted_into_updates: z.boolean().optional(),
});

const accountBillingOptionsSchema = z.strictObject({
  period_length: choice(['MONTHLY', 'QUARTERLY']),
  period_start_day: z.number().int().min(1).max(28),
});

const metadataSchema = z
  .array(
    z.strictObject({
      key: requiredText(255),
      value: z.string(),
    }),
  )
  .check(
    crossFieldCheck((items, ctx) => {
      if (!Array.isArray(items)) return;
      const seen = new Set<string>();
      items.forEach((item: unknown, i) => {
        if (!isRecord(item) || !ctx.parsed([i, 'key']) || typeof item.key !== 'string') return;
        if (seen.has(item.key)) ctx.addIssue('duplicate_key', `Metadata key ${JSON.stringify(item.key)} is given more than once.`, [i, 'key']);
        seen.add(item.key);
      });
    }),
  );

/** Where each meter point's identifier sits, for identifiers that parsed and suit their supply type. */
function parsedIdentifiers(data: unknown, parsed: (path: readonly PropertyKey[]) => boolean) {
  const found: { identifier: string; path: PropertyKey[] }[] = [];
  if (!isRecord(data) || !Array.isArray(data.supply_addresses)) return found;
  data.supply_addresses.forEach((sa: unknown, i) => {
    if (!isRecord(sa) || !Array.isArray(sa.meter_points)) return;
    sa.meter_points.forEach((mp: unknown, j) => {
      const path = ['supply_addresses', i, 'meter_points', j];
      if (!isRecord(mp) || typeof mp.identifier !== 'string') return;
      if (!parsed([...path, 'identifier']) || !parsed([...path, 'supply_type'])) return;
      found.push({ identifier: mp.identifier, path: [...path, 'identifier'] });
    });
  });
  return found;
}

/**
 * The account data object (decisions §1). `today` returns the UTC calendar date and is read at
 * parse time, so one schema serves every request under an injectable clock.
 * `import_supplier` is only required here; whether the supplier exists is a database question.
 */
export function makeAccountDataSchema(today: () => string) {
  const customerSchema = z.strictObject({
    title: optionalText(20),
    given_name: requiredText(255),
    family_name: requiredText(255),
    email: email.optional(),
    mobile: mobilePhone.optional(),
    landline: phoneNumber.optional(),
    date_of_birth: dateInPast(today).optional(),
    customer_preferences: customerPreferencesSchema.optional(),
  });

  return z
    .strictObject({
      import_supplier: requiredText(255),
      external_account_number: requiredText(128),
      account_type: choice(['DOMESTIC', 'BUSINESS']).default('DOMESTIC'),
      billing_name: optionalText(510),
      billing_address1: optionalText(ADDRESS_LINE_MAX),
      billing_address2: optionalText(ADDRESS_LINE_MAX),
      billing_address3: optionalText(ADDRESS_LINE_MAX),
      billing_address4: optionalText(ADDRESS_LINE_MAX),
      billing_address5: optionalText(ADDRESS_LINE_MAX),
      billing_postcode: ukPostcode.optional(),
      billing_email: email.optional(),
      communication_preference: choice(['ONLINE', 'PRINT']).default('ONLINE'),
      date_of_sale: dateNotInFuture(today).optional(),
      // Credit positive, debit negative; numeric(20,10) territory.
      transfer_balance: decimalString({ maxIntegerDigits: 10, maxFractionDigits: 10 }).optional(),
      last_statement_closing_date: dateNotInFuture(today).optional(),
      account_billing_options: accountBillingOptionsSchema.optional(),
      customers: z.array(customerSchema).min(1),
      supply_addresses: z.array(supplyAddressSchema).min(1),
      metadata: metadataSchema.optional(),
    })
    .check(
      crossFieldCheck((data, ctx) => {
        const seen = new Set<string>();
        for (const { identifier, path } of parsedIdentifiers(data, ctx.parsed)) {
          if (seen.has(identifier)) {
            ctx.addIssue('duplicate_meter_point', `Meter point ${identifier} appears more than once in this account.`, path);
          }
          seen.add(identifier);
        }
      }),
    );
}

export type AccountDataSchema = ReturnType<typeof makeAccountDataSchema>;
export type AccountData = z.output<AccountDataSchema>;
export type AccountDataInput = z.input<AccountDataSchema>;

/** Every meter point identifier in the account, in payload order. */
export function meterPointIdentifiers(data: AccountData): string[] {
  return data.supply_addresses.flatMap((sa) => sa.meter_points.map((mp) => mp.identifier));
}
