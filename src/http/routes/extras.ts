import { z } from 'zod';
import { paymentInstructionRequestSchema, type PaymentInstructionService } from '../../imports/payment-instructions/payment-instruction.service.js';
import { notesRequestSchema, noteResultSchema } from '../../imports/notes/note.schemas.js';
import type { NoteService } from '../../imports/notes/note.service.js';
import { makeStatementsRequestSchema } from '../../imports/statements/statement.schemas.js';
import type { StatementService } from '../../imports/statements/statement.service.js';
import { TRANSACTION_STATUSES, transactionsQuerySchema, transactionsRequestDocSchema } from '../../imports/transactions/transaction.schemas.js';
import type { TransactionService } from '../../imports/transactions/transaction.service.js';
import { withKrakenAccountNumber } from '../published-names.js';
import type { RouteDef } from '../route.js';
import { errorEnvelopeSchema } from '../envelope.js';

const common = {
  401: { description: 'Not authenticated.' },
  404: { description: 'account_not_found: the pair has no created account (staged only counts as not found).' },
};

export interface ExtrasServices {
  notes: NoteService;
  transactions: TransactionService;
  statements: StatementService;
  paymentInstructions: PaymentInstructionService;
}

export function extrasRoutes(s: ExtrasServices): RouteDef[] {
  return [
    {
      method: 'POST',
      url: '/v1/data-import/notes/create/',
      operationId: 'create_notes',
      summary: 'Import notes onto an imported account.',
      tags: ['extras'],
      auth: 'token',
      body: notesRequestSchema,
      responses: {
        201: { description: 'One entry per posted note, in input order.', schema: z.array(noteResultSchema) },
        400: { description: 'invalid_request (with one item per problem), import_supplier_migration_not_ongoing.' },
        ...common,
      },
      handler: async (req, reply) => {
        const results = await s.notes.importNotes(req.body);
        reply.code(201);
        return results;
      },
    },
    {
      method: 'POST',
      url: '/v1/data-import/transactions/create/',
      operationId: 'create_transactions',
      summary: 'Import financial transactions onto an imported account, all or nothing.',
      tags: ['extras'],
      auth: 'token',
      query: transactionsQuerySchema,
      body: transactionsRequestDocSchema,
      responses: {
        201: {
          description: 'One result per transaction, in input order.',
          schema: z.object({ results: z.array(z.object({ status: z.enum(TRANSACTION_STATUSES), transaction_data: z.record(z.string(), z.unknown()) })) }),
        },
        400: {
          description: 'The first failing transaction: { status: TRANSACTION_IMPORT_ERROR, error_detail, transaction_data, code, attr }; or the envelope (invalid_request) when the outer shape is wrong.',
          oneOf: [
            z
              .object({ status: z.literal('TRANSACTION_IMPORT_ERROR'), error_detail: z.string(), transaction_data: z.unknown(), code: z.string(), attr: z.string().nullable() })
              .meta({ id: 'TransactionImportError' }),
            errorEnvelopeSchema,
          ],
        },
        ...common,
      },
      handler: async (req, reply) => {
        const results = await s.transactions.importTransactions(req.body, req.query);
        reply.code(201);
        return { results };
      },
    },
    {
      method: 'POST',
      url: '/v1/data-import/historical-statements/create/',
      operationId: 'create_historical_statements',
      summary: 'Import historical PDF statements onto an imported account.',
      tags: ['extras'],
      auth: 'token',
      body: makeStatementsRequestSchema(() => '9999-12-31'),
      responses: {
        201: { description: 'The validated data; each statement carries status STATEMENT_CREATED or STATEMENT_ALREADY_EXISTS.' },
        400: { description: 'invalid_request (overlapping_statement_periods, document_not_found, document_not_pdf, …), import_supplier_migration_not_ongoing.' },
        ...common,
      },
      handler: async (req, reply) => {
        const result = await s.statements.importStatements(req.body);
        reply.code(201);
        return result;
      },
    },
    {
      method: 'POST',
      url: '/v1/data-import/payment-instruction/create/',
      operationId: 'create_payment_instruction',
      summary: 'Verify a payment instruction with its vendor and store it on an imported account.',
      tags: ['extras'],
      auth: 'token',
      body: paymentInstructionRequestSchema,
      responses: {
        201: {
          description: 'Stored (or already stored).',
          schema: z
            .object({
              service_account_number: z.string(),
              reference: z.string(),
              kraken_account_number: z.string().describe("The published document's name for service_account_number: the same value."),
            })
            .meta({ id: 'PaymentInstructionCreated' }),
        },
        400: { description: 'invalid_request, payment_vendor_not_found, payment_instruction_not_found_at_vendor, payment_instruction_type_mismatch; do not retry unchanged.' },
        500: { description: 'payment_vendor_unavailable (or another unexpected error); retry as-is.' },
        ...common,
      },
      handler: async (req, reply) => {
        const result = await s.paymentInstructions.importPaymentInstruction(req.body);
        reply.code(201);
        return withKrakenAccountNumber(result);
      },
    },
  ];
}
