import { z } from 'zod';
import { crossFieldCheck, dateNotInFuture, dateString, decimalString, isRecord } from '../shared/fields.js';
import { accountPairShape } from '../shared/imported-account.js';

/** decisions §7 */
export const MAX_STATEMENTS_PER_REQUEST = 500;

export function makeStatementsRequestSchema(today: () => string) {
  const statement = z
    .strictObject({
      bill_period_from_date: dateString,
      bill_period_to_date: dateString,
      statement_id: z.string().min(1).max(255),
      // Optional, as published (decisions §3); the document types gross_amount as an integer, and a
      // decimal amount is accepted too since money is kept exact either way.
      issued_date: dateNotInFuture(today).nullable().optional(),
      number: z.string().min(1).max(255).optional(),
      gross_amount: decimalString({ maxIntegerDigits: 10, maxFractionDigits: 10 }).nullable().optional(),
      statement_path: z.string().min(1).max(1024).optional(),
    })
    .check(
      crossFieldCheck((s, ctx) => {
        if (!isRecord(s) || !ctx.parsed(['bill_period_from_date']) || !ctx.parsed(['bill_period_to_date'])) return;
        if (typeof s.bill_period_from_date === 'string' && typeof s.bill_period_to_date === 'string' && s.bill_period_to_date < s.bill_period_from_date) {
          ctx.addIssue('start_date_later_than_end_date', 'bill_period_to_date must not be before bill_period_from_date.', ['bill_period_to_date']);
        }
      }),
    )
    .meta({ id: 'HistoricalStatement' });
  return z
    .strictObject({ ...accountPairShape, statements: z.array(statement).min(1).max(MAX_STATEMENTS_PER_REQUEST) })
    .meta({ id: 'HistoricalStatementsRequest' });
}
export type StatementsRequest = z.output<ReturnType<typeof makeStatementsRequestSchema>>;
export type StatementInput = StatementsRequest['statements'][number];
