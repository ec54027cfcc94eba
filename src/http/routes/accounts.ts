import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { formatDatetime } from '../../clock.js';
import { AppError, badRequest } from '../../errors.js';
import type { ListKind } from '../../imports/accounts/account.repository.js';
import { processRequestSchema, type AccountService } from '../../imports/accounts/account.service.js';
import { parseOrThrow } from '../../imports/shared/validation.js';
import { storable } from '../../json.js';
import { withImportSupplierCode, withKrakenAccountNumber } from '../published-names.js';
import type { RouteDef } from '../route.js';

const MAX_PAGE_SIZE = 1000;

// `kraken_account_number` and `import_supplier_code` are the published document's names for the same values (published-names.ts).
const krakenAccountNumber = 'The published document\'s name for service_account_number: the same value.';
const stagedSchema = z
  .object({
    import_supplier: z.string(),
    external_account_number: z.string(),
    import_supplier_code: z.string().describe('The published document\'s name for import_supplier: the same value.'),
  })
  .meta({ id: 'StagedAccount' });
const processedSchema = z
  .object({ service_account_number: z.string(), kraken_account_number: z.string().describe(krakenAccountNumber) })
  .meta({ id: 'ProcessedAccount' });
const statusSchema = z
  .object({
    status: z.enum(['UNKNOWN', 'COMPLETED', 'IN_PROGRESS']),
    service_account_number: z.string(),
    kraken_account_number: z.string().describe(krakenAccountNumber),
  })
  .meta({ id: 'AccountTransferStatus' });
const listEntrySchema = z
  .object({
    external_account_number: z.string(),
    service_account_number: z.string().nullable(),
    account_created_at: z.string().nullable().describe('YYYY-MM-DDTHH:MM:SSZ'),
    kraken_account_number: z.string().nullable().describe(krakenAccountNumber),
  })
  .meta({ id: 'AccountImportProcess' });
const listQuerySchema = z.strictObject({
  page_size: z.string().regex(/^\d+$/).optional(),
  cursor: z.string().optional(),
});
const supplierParams = z.object({ import_supplier_code: z.string() });
const pairParams = z.object({ import_supplier_code: z.string(), external_account_number: z.string() });
const importedAccountSchema = z
  .object({
    service_account_number: z.string(),
    account_created_at: z.string().describe('YYYY-MM-DDTHH:MM:SSZ'),
    import_supplier: z.string(),
    external_account_number: z.string(),
    account: z.record(z.string(), z.unknown()).describe('The account fields given, by their request names.'),
    customers: z.array(z.record(z.string(), z.unknown())),
    supply_addresses: z.array(z.record(z.string(), z.unknown())).describe('With meter_points, meters, registers, transfer_readings, reading_history and agreements.'),
    metadata: z.array(z.object({ key: z.string(), value: z.unknown() })),
    counts: z.object({ notes: z.number(), transactions: z.number(), statements: z.number(), payment_instructions: z.number() }),
    payload: z.unknown().describe('The validated account data object the account was created from.'),
  })
  .meta({ id: 'ImportedAccount' });
const accountData = z.record(z.string(), z.unknown()).describe('Account data object (decisions §1).').meta({ id: 'AccountData' });

const envelope = (description: string) => ({ description });

export function accountRoutes(accounts: AccountService): RouteDef[] {
  const listRoute = (kind: ListKind, segment: string, summary: string): RouteDef => ({
    method: 'GET',
    url: `/v1/data-import/${segment}/:import_supplier_code/`,
    operationId: `list_${kind}_account_imports`,
    summary,
    tags: ['account imports'],
    auth: 'token',
    params: supplierParams,
    query: listQuerySchema,
    responses: {
      200: { description: 'One page, ordered by external_account_number; a Link rel="next" header when more follow.', schema: z.array(listEntrySchema), headers: { Link: 'rel="next" link to the next page' } },
      400: envelope('Bad page_size or cursor.'),
      401: envelope('Not authenticated.'),
      404: envelope('import_supplier_not_found'),
    },
    handler: async (req, reply) => {
      const { import_supplier_code } = req.params as { import_supplier_code: string };
      const { pageSize, after } = parsePaging(req.query);
      const { entries, more } = await accounts.list(kind, import_supplier_code, after, pageSize);
      const last = entries.at(-1);
      if (more && last) reply.header('Link', `<${nextLink(req, pageSize, last.external_account_number)}>; rel="next"`);
      return entries.map((e) =>
        withKrakenAccountNumber({
          external_account_number: e.external_account_number,
          service_account_number: e.service_account_number,
          account_created_at: e.account_created_at ? formatDatetime(e.account_created_at) : null,
        }),
      );
    },
  });

  return [
    {
      method: 'POST',
      url: '/v1/data-import/validate-account/',
      operationId: 'validate_account',
      summary: 'Validate an account data object without storing it.',
      tags: ['account imports'],
      auth: 'token',
      body: accountData,
      responses: { 200: { description: 'The validated, normalised data.', schema: accountData }, 400: envelope('account_failed_validation'), 401: envelope('Not authenticated.') },
      handler: async (req) => accounts.validate(req.body),
    },
    {
      method: 'POST',
      url: '/v1/data-import/account-import-process/create-or-update/',
      operationId: 'stage_account',
      summary: 'Stage (or re-stage) an account data object.',
      tags: ['account imports'],
      auth: 'token',
      body: accountData,
      responses: {
        200: { description: 'Staged before; data replaced.', schema: stagedSchema },
        201: { description: 'First staging.', schema: stagedSchema },
        400: envelope('account_failed_validation, account_import_process_already_imported, account_marked_to_skip, import_supplier_migration_not_ongoing'),
        401: envelope('Not authenticated.'),
      },
      handler: async (req, reply) => {
        const r = await accounts.stage(req.body);
        reply.code(r.first ? 201 : 200);
        return withImportSupplierCode({ import_supplier: r.import_supplier, external_account_number: r.external_account_number });
      },
    },
    {
      method: 'POST',
      url: '/v1/data-import/account-import-process/process/',
      operationId: 'process_account',
      summary: 'Create the account from its staged data.',
      tags: ['account imports'],
      auth: 'token',
      body: processRequestSchema,
      responses: {
        201: { description: 'Account created.', schema: processedSchema },
        400: envelope('invalid_request, import_process_does_not_exist, operations_team_not_found, import_supplier_migration_not_ongoing, account_marked_to_skip, account_import_process_already_imported (with external_account_number and service_account_number), dry_run_rolled_back'),
        401: envelope('Not authenticated.'),
        429: { description: 'concurrency_limit_exceeded; see Retry-After.', headers: { 'Retry-After': 'seconds' } },
        503: { description: 'processing_permit_lost: the permit expired during a stall, nothing was committed; retry (see Retry-After).', headers: { 'Retry-After': 'seconds' } },
      },
      handler: async (req, reply) => {
        const r = await accounts.processWithPermit(req.body);
        reply.code(201);
        return withKrakenAccountNumber({ service_account_number: r.service_account_number });
      },
    },
    {
      method: 'GET',
      url: '/v1/data-import/account-transfer-status/:import_supplier_code/:external_account_number/',
      operationId: 'account_transfer_status',
      summary: 'The state of one account import.',
      tags: ['account imports'],
      auth: 'token',
      params: pairParams,
      responses: { 200: { description: 'The import process exists.', schema: statusSchema }, 401: envelope('Not authenticated.'), 404: envelope('account_not_found') },
      handler: async (req) => {
        const p = req.params as { import_supplier_code: string; external_account_number: string };
        return withKrakenAccountNumber(await accounts.status(p.import_supplier_code, p.external_account_number));
      },
    },
    {
      method: 'GET',
      url: '/v1/data-import/imported-accounts/:import_supplier_code/:external_account_number/',
      operationId: 'imported_account',
      summary: 'An imported account as stored: its fields, customers, supply addresses, meter points with meters, registers, readings and agreements, the counts of its history, and the data it was created from.',
      tags: ['account imports'],
      auth: 'token',
      params: pairParams,
      responses: { 200: { description: 'The account exists.', schema: importedAccountSchema }, 401: envelope('Not authenticated.'), 404: envelope('account_not_found (also when only staged)') },
      handler: async (req) => {
        const p = req.params as { import_supplier_code: string; external_account_number: string };
        return accounts.show(p.import_supplier_code, p.external_account_number);
      },
    },
    listRoute('all', 'all-account-import-processes', 'Pending and imported accounts of a supplier.'),
    listRoute('pending', 'pending-account-import-processes', 'Staged accounts not yet created.'),
    listRoute('imported', 'imported-account-import-processes', 'Created accounts.'),
  ];
}

function parsePaging(query: unknown): { pageSize: number; after: string | null } {
  const q = parseOrThrow(listQuerySchema, query ?? {}, 'invalid_request', 'Invalid query parameters.');
  const pageSize = q.page_size === undefined ? MAX_PAGE_SIZE : Number(q.page_size);
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_PAGE_SIZE) {
    throw badRequest('invalid_request', `page_size must be between 1 and ${MAX_PAGE_SIZE}.`, 'page_size');
  }
  return { pageSize, after: q.cursor === undefined ? null : decodeCursor(q.cursor) };
}

/** Cursors are opaque to clients: the last external account number of the page, base64url-encoded. */
function decodeCursor(cursor: string): string {
  try {
    const v: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(v) && typeof v[0] === 'string' && storable(v[0])) return v[0];
  } catch {
    // fall through
  }
  throw new AppError(400, 'invalid_request', 'Invalid query parameters.', [{ code: 'invalid_cursor', detail: 'The cursor is not one this service issued.', attr: 'cursor' }]);
}

function nextLink(req: FastifyRequest, pageSize: number, last: string): string {
  const path = req.url.split('?')[0]!;
  const cursor = Buffer.from(JSON.stringify([last])).toString('base64url');
  return `${path}?page_size=${pageSize}&cursor=${cursor}`;
}
