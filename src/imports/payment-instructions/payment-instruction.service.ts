import type { Insertable, Kysely } from 'kysely';
import { z } from 'zod';
import { chunkRows } from '../../db/chunked.js';
import type { Database, Executor, PaymentInstructionsTable } from '../../db/database.js';
import { AppError, badRequest, type ErrorItem } from '../../errors.js';
import { INSTRUCTION_TYPES, PaymentVendorUnavailable, type PaymentVendorClient, type VendorLookup } from '../../vendors/payment-vendor.js';
import type { ReferenceData } from '../reference/reference.service.js';
import { findImportedAccountSupplier } from '../shared/account-lookup.js';
import { choice, crossFieldCheck, dateString, isRecord } from '../shared/fields.js';
import { accountPairShape, runLocked, type AccountPair, type ExtrasContext, type LockedWrite } from '../shared/imported-account.js';
import { issuesToItems, parseOrThrow } from '../shared/validation.js';
import type { SetInsert } from '../shared/write-set.js';

/**
 * The published request (LegacyPaymentInstruction), with the in-account PaymentInstruction's fields too.
 * The instruction is named by `reference`, or by the older `instruction_reference`: exactly one of them.
 */
export const paymentInstructionRequestSchema = z
  .strictObject({
    ...accountPairShape,
    vendor: z.string().min(1).max(64),
    reference: z.string().min(1).max(512).optional(),
    instruction_reference: z.string().min(1).max(128).optional(),
    type: choice(INSTRUCTION_TYPES),
    customer_reference: z.string().max(512).optional(),
    instruction_identifier: z.string().min(1).max(255).optional(),
    ledger_code: z.string().min(1).max(255).optional(),
    use_for_scheduled_payments: z.boolean().nullable().optional(),
    valid_from: dateString.nullable().optional(),
  })
  .check(
    crossFieldCheck((req, ctx) => {
      if (!isRecord(req) || !ctx.parsed(['reference']) || !ctx.parsed(['instruction_reference'])) return;
      const given = [req.reference, req.instruction_reference].filter((v) => v !== undefined).length;
      if (given !== 1) {
        ctx.addIssue('mutually_exclusive_field_required', 'Give exactly one of reference and instruction_reference.', [given === 0 ? 'reference' : 'instruction_reference']);
      }
    }),
  )
  .transform((req) => ({ ...req, reference: (req.reference ?? req.instruction_reference) as string }))
  .meta({ id: 'PaymentInstructionRequest' });

/** An instruction in one of these states would never collect a payment: migrating it would hide a broken mandate. */
const INACTIVE_STATUSES: ReadonlySet<string> = new Set(['CANCELLED', 'EXPIRED', 'FAILED']);

export interface PaymentInstructionResult {
  service_account_number: string;
  reference: string;
}

export interface PaymentInstructionServiceDeps {
  db: Kysely<Database>;
  vendors: PaymentVendorClient;
  reference: ReferenceData;
}

export function createPaymentInstructionService(deps: PaymentInstructionServiceDeps) {
  // Concurrent identical lookups (a client retrying blindly, the same bundle twice) share one call:
  // the vendor's answer depends only on the vendor and the reference.
  const inFlight = new Map<string, Promise<VendorLookup>>();
  const lookupOnce = (vendor: string, reference: string): Promise<VendorLookup> => {
    const key = JSON.stringify([vendor, reference]);
    let pending = inFlight.get(key);
    if (!pending) {
      pending = deps.vendors.lookup(vendor, reference).finally(() => inFlight.delete(key));
      inFlight.set(key, pending);
    }
    return pending;
  };

  /**
   * Verifies the instruction with its vendor and stores what the vendor returns. A reference the
   * account already has is answered from storage without asking the vendor again; a repeat is
   * never stored twice. The vendor is asked outside any database transaction.
   */
  async function importPaymentInstruction(input: unknown): Promise<PaymentInstructionResult> {
    const write = await preparePaymentInstruction(input);
    return runLocked(deps.db, input as AccountPair, write); // prepare has checked the pair
  }

  /** The vendor's check, made before the account is locked; the write comes back to run under the lock. */
  async function preparePaymentInstruction(input: unknown, ctx: ExtrasContext = {}): Promise<LockedWrite<PaymentInstructionResult>> {
    const req = parseOrThrow(paymentInstructionRequestSchema, input, 'invalid_request', 'Invalid request.');
    // Which published types this platform takes is reference data (decisions §6).
    await deps.reference.refresh();
    if (!deps.reference.values('PAYMENT_INSTRUCTION_TYPE').has(req.type)) {
      throw new AppError(400, 'invalid_request', 'Invalid request.', [
        { code: 'invalid_choice', detail: `Payment-instruction type '${req.type}' is not enabled on this platform.`, attr: 'type' },
      ]);
    }
    const db = ctx.db ?? deps.db;
    await findImportedAccountSupplier(db, req.import_supplier, req.external_account_number, ctx.supplier);
    // Already stored: answered without asking the vendor again. The insert below does nothing then.
    if (await isStored(db, req)) return storeInstruction(req, null);

    let lookup;
    try {
      lookup = await lookupOnce(req.vendor, req.reference);
    } catch (err) {
      if (err instanceof PaymentVendorUnavailable) {
        throw new AppError(500, 'payment_vendor_unavailable', `Payment vendor '${req.vendor}' could not be reached; retry the request as it is.`, [], {}, {}, { cause: err });
      }
      throw err;
    }
    switch (lookup.kind) {
      case 'unknown_vendor':
        throw badRequest('payment_vendor_not_found', `Payment vendor '${req.vendor}' is not configured.`, 'vendor');
      case 'not_found':
        throw badRequest('payment_instruction_not_found_at_vendor', `Payment vendor '${req.vendor}' has no instruction '${req.reference}'.`, 'reference');
      case 'rejected':
        throw badRequest('payment_instruction_not_found_at_vendor', `Payment vendor '${req.vendor}' rejected instruction '${req.reference}': ${lookup.reason}`, 'reference');
      case 'found':
        break;
    }
    if (INACTIVE_STATUSES.has(lookup.details.status)) {
      throw badRequest(
        'payment_instruction_inactive',
        `Payment vendor '${req.vendor}' reports instruction '${req.reference}' as ${lookup.details.status}; only a usable instruction can be migrated.`,
        'reference',
      );
    }
    if (lookup.details.type !== req.type) {
      throw badRequest(
        'payment_instruction_type_mismatch',
        `Payment vendor '${req.vendor}' holds '${req.reference}' as ${lookup.details.type}, not ${req.type}.`,
        'type',
      );
    }
    return storeInstruction(req, lookup.details.raw);
  }

  /** The request's field problems and whether its type is enabled (no vendor, no account). The caller refreshes the reference lists. */
  function checkPaymentInstruction(input: unknown): ErrorItem[] {
    const parsed = paymentInstructionRequestSchema.safeParse(input, { reportInput: true });
    if (!parsed.success) return issuesToItems(parsed.error.issues);
    return deps.reference.values('PAYMENT_INSTRUCTION_TYPE').has(parsed.data.type)
      ? []
      : [{ code: 'invalid_choice', detail: `Payment-instruction type '${parsed.data.type}' is not enabled on this platform.`, attr: 'type' }];
  }

  return { importPaymentInstruction, preparePaymentInstruction, checkPaymentInstruction };
}

export type PaymentInstructionService = ReturnType<typeof createPaymentInstructionService>;

type Request = z.output<typeof paymentInstructionRequestSchema>;

/** The write under the lock: the instruction with the vendor's details, unless the account already holds it (`details` null). */
function storeInstruction(req: Request, details: unknown): LockedWrite<PaymentInstructionResult> {
  return async (w, account) => {
    if (details !== null) {
      w.insert(instructionRows, [
        {
          account_id: account.id,
          vendor: req.vendor,
          reference: req.reference,
          type: req.type,
          details: JSON.stringify(details),
          instruction_reference: req.instruction_reference ?? null,
          customer_reference: req.customer_reference ?? null,
          instruction_identifier: req.instruction_identifier ?? null,
          ledger_code: req.ledger_code ?? null,
          use_for_scheduled_payments: req.use_for_scheduled_payments ?? null,
          valid_from: req.valid_from ?? null,
        },
      ]);
    }
    return Promise.resolve({ service_account_number: account.number, reference: req.reference });
  };
}

/** Payment instructions of every account of a set: one insert; one the account already holds is left as it is. */
const instructionRows: SetInsert<Insertable<PaymentInstructionsTable>> = {
  async insert(trx, rows) {
    for (const chunk of chunkRows(rows)) {
      await trx
        .insertInto('payment_instructions')
        .values(chunk)
        .onConflict((oc) => oc.columns(['account_id', 'vendor', 'reference']).doNothing())
        .execute();
    }
  },
};

/**
 * Whether the account already holds this vendor's reference. The account is found first and the
 * instruction by its unique key: a join let the planner scan every stored instruction for each
 * request while the table's statistics still said it was empty (1,000 scans of 450 rows on
 * average in a 1,000-account bench cohort).
 */
async function isStored(db: Executor, req: Request): Promise<boolean> {
  const row = await db
    .selectFrom('payment_instructions as p')
    .select('p.id')
    .where('p.account_id', '=', (eb) =>
      eb
        .selectFrom('accounts as a')
        .innerJoin('import_suppliers as s', 's.id', 'a.import_supplier_id')
        .select('a.id')
        .where('s.code', '=', req.import_supplier)
        .where('a.external_account_number', '=', req.external_account_number),
    )
    .where('p.vendor', '=', req.vendor)
    .where('p.reference', '=', req.reference)
    .executeTakeFirst();
  return row !== undefined;
}
