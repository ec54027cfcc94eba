import { z } from 'zod';
import { choice, crossFieldCheck, dateString, decimalString, isRecord } from '../shared/fields.js';
import { seededReferenceData, type ReferenceData } from '../reference/reference.service.js';
import type { ReferenceKind } from '../reference/reference.seed.js';
import { accountNumberField, accountPairShape } from '../shared/imported-account.js';

/** decisions §7 */
export const MAX_TRANSACTIONS_PER_REQUEST = 5000;

/** decisions §6 */
export const TRANSACTION_TYPES = ['CHARGE', 'CREDIT', 'PAYMENT', 'REPAYMENT', 'SUPPLY_CHARGE'] as const;
export type TransactionType = (typeof TRANSACTION_TYPES)[number];

/** The reference list (decisions §6) a type's reason is checked against; SUPPLY_CHARGE's optional reason is a charge reason. */
const REASON_KIND: Record<TransactionType, ReferenceKind> = {
  CHARGE: 'CHARGE_REASON',
  CREDIT: 'CREDIT_REASON',
  PAYMENT: 'PAYMENT_REASON',
  REPAYMENT: 'REPAYMENT_REASON',
  SUPPLY_CHARGE: 'CHARGE_REASON',
};
const PAYMENT_TYPE_KIND: Partial<Record<TransactionType, ReferenceKind>> = {
  PAYMENT: 'PAYMENT_PAYMENT_TYPE',
  REPAYMENT: 'REPAYMENT_PAYMENT_TYPE',
};
/** Fields a type requires beyond transaction_id, transaction_date, amount and type (decisions §3). */
const REQUIRED_BY_TYPE: Record<TransactionType, readonly string[]> = {
  CHARGE: ['reason'],
  CREDIT: ['reason'],
  PAYMENT: [],
  REPAYMENT: [],
  SUPPLY_CHARGE: ['product_code', 'line_items'],
};

/** Amounts as transfer_balance: up to 10 integer and 10 fraction digits, exact. */
const money = decimalString({ maxIntegerDigits: 10, maxFractionDigits: 10 });
/** Quantities and rates may need more precision than money (prices per kWh). */
const quantity = decimalString({ maxIntegerDigits: 12, maxFractionDigits: 12 });
const text = (max: number) => z.string().min(1).max(max);
/** The published `params` objects: keys the document leaves open. */
const jsonObject = z.record(z.string(), z.unknown());

const lineItemSchema = z
  .strictObject({
    rate_band: choice(['CONSUMPTION_STANDARD', 'CONSUMPTION_DAY', 'CONSUMPTION_NIGHT', 'STANDING_CHARGE']).optional(),
    start_date: dateString,
    end_date: dateString,
    number_of_units: quantity,
    net_amount: money,
    price_per_unit: quantity.optional(),
    units: z.array(quantity).max(1000).optional(),
    external_rate_identifier: text(255).optional(),
    rate_specification_code: text(255).optional(),
    time_series_specification_code: text(255).optional(),
    params: jsonObject.optional(),
  })
  .check(
    crossFieldCheck((li, ctx) => {
      if (!isRecord(li) || !ctx.parsed(['start_date']) || !ctx.parsed(['end_date'])) return;
      if (typeof li.start_date === 'string' && typeof li.end_date === 'string' && li.end_date < li.start_date) {
        ctx.addIssue('start_date_later_than_end_date', 'end_date must not be before start_date.', ['end_date']);
      }
    }),
  );

const taxItemSchema = z.strictObject({
  amount: money,
  tax_type: choice(['VAT', 'CCL']),
  value_taxed: money,
  rate: quantity,
  unit_type: choice(['PROPORTION', 'CURRENCY_PER_KWH']),
  params: jsonObject.optional(),
});

/**
 * One transaction: field types here, the per-type rules in the check, all reported with attrs.
 * Reasons and payment types are read from the deployment's reference lists at parse time.
 */
export function makeTransactionSchema(reference: ReferenceData) {
  return z
  .strictObject({
    transaction_id: text(255),
    transaction_date: dateString,
    amount: money,
    type: choice(TRANSACTION_TYPES),
    reason: text(64).optional(),
    reference: text(255).optional(),
    // "" is a published REPAYMENT payment type (the document's example account sends it).
    payment_type: z.string().max(64).optional(),
    display_note: z.string().max(5000).optional(),
    note: z.string().max(5000).optional(),
    product_code: text(255).optional(),
    billing_document_identifier: text(255).optional(),
    to_prepay_meter_serial_number: text(255).optional(),
    supply_point_identifier: text(255).optional(),
    line_items: z.array(lineItemSchema).max(1000).optional(),
    tax_items: z.array(taxItemSchema).max(100).optional(),
  })
  .check(
    crossFieldCheck((t, ctx) => {
      if (!isRecord(t) || !ctx.parsed(['type'])) return;
      const type = t.type as TransactionType;
      for (const field of REQUIRED_BY_TYPE[type]) {
        if (t[field] === undefined) ctx.addIssue('required', `${field} is required on ${type} transactions.`, [field]);
      }
      if (type === 'SUPPLY_CHARGE' && Array.isArray(t.line_items) && t.line_items.length === 0 && ctx.parsed(['line_items'])) {
        ctx.addIssue('min_items', 'A SUPPLY_CHARGE needs at least one line item.', ['line_items']);
      }
      if (typeof t.reason === 'string' && ctx.parsed(['reason']) && !reference.values(REASON_KIND[type]).has(t.reason)) {
        ctx.addIssue('invalid_choice', `'${t.reason.slice(0, 64)}' is not a reason this platform takes for ${type} transactions.`, ['reason']);
      }
      if (typeof t.payment_type === 'string' && ctx.parsed(['payment_type'])) {
        const kind = PAYMENT_TYPE_KIND[type];
        if (!kind) ctx.addIssue('invalid_choice', `payment_type does not apply to ${type} transactions.`, ['payment_type']);
        else if (!reference.values(kind).has(t.payment_type)) {
          ctx.addIssue('invalid_choice', `'${t.payment_type.slice(0, 64)}' is not a payment_type this platform takes for ${type} transactions.`, ['payment_type']);
        }
      }
    }),
  )
  .meta({ id: 'Transaction' });
}

/** For the OpenAPI document and the types: the schema over the seeded lists. */
export const transactionSchema = makeTransactionSchema(seededReferenceData());
export type TransactionInput = z.output<typeof transactionSchema>;

/** The outer shape; each transaction is checked on its own so the first failing one can be reported. */
export const transactionsRequestSchema = z
  .strictObject({
    ...accountPairShape,
    account_number: accountNumberField,
    dry_run: z.boolean().optional(),
    transactions: z.array(z.unknown()).min(1).max(MAX_TRANSACTIONS_PER_REQUEST),
  })
  .meta({ id: 'TransactionsRequest' });

/** For the OpenAPI document: the request as clients send it. */
export const transactionsRequestDocSchema = z.strictObject({ ...accountPairShape, account_number: accountNumberField, dry_run: z.boolean().optional(), transactions: z.array(transactionSchema) });

const booleanParam = z
  .string()
  .transform((s) => s.toLowerCase())
  .pipe(z.enum(['true', 'false', '1', '0']))
  .transform((s) => s === 'true' || s === '1');

export const transactionsQuerySchema = z.strictObject({
  check_previously_added: booleanParam.optional().default(true),
  force_add_to_current_statement: booleanParam.optional().default(true),
});

export const TRANSACTION_STATUSES = ['TRANSACTION_ADDED_TO_ACCOUNT', 'TRANSACTION_ALREADY_EXISTS'] as const;
