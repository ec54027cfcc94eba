import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { SupplierStatus } from '../../../src/db/database.js';
import { createTestContext, type TestContext } from '../../helpers/context.js';
import { FAKE_VENDOR_API_KEY, startFakeVendor, type FakeVendor } from '../../helpers/fake-vendor.js';
import { accountPayload, type AccountOverrides } from '../../helpers/fixtures.js';

/** "Today" for every extras suite: a fixed instant, so date rules do not depend on the wall clock. */
export const NOW = new Date('2026-06-15T12:00:00Z');
export const TODAY = '2026-06-15';

/** The main supplier of a suite: Ongoing, with a documents root under the local store. */
export const S = 'EXTRAS_CO';
export const DOCS_ROOT = 'suppliers/extras-co';
export const TEAM = 'Extras Team';
export const VENDOR = 'sandbox';

export const URLS = {
  notes: '/v1/data-import/notes/create/',
  transactions: '/v1/data-import/transactions/create/',
  statements: '/v1/data-import/historical-statements/create/',
  paymentInstruction: '/v1/data-import/payment-instruction/create/',
} as const;

export interface PostOptions {
  /** Query string without the `?`. */
  query?: string;
  /** Send without an Authorization header. */
  noAuth?: boolean;
}

export interface ExtrasHarness {
  ctx: TestContext;
  vendor: FakeVendor;
  /** The Authorization header `post` sends; replaced by `setClock`. */
  readonly auth: { authorization: string };
  docsDir: string;
  /** Moves the fake clock and obtains a token valid at the new time (tokens live 60 minutes). */
  setClock(date: Date): Promise<void>;
  /** POST a JSON payload (an object, or a hand-written JSON string sent as it is). Awaiting runs it. */
  post(url: string, payload: unknown, opts?: PostOptions): Promise<LightMyRequestResponse>;
  /** Stages and processes an account; resolves to its service_account_number. */
  importAccount(ext: string, overrides?: AccountOverrides, supplier?: string): Promise<string>;
  /** Stages an account without creating it. */
  stageAccount(ext: string, overrides?: AccountOverrides, supplier?: string): Promise<void>;
  /** The accounts.id of a created account. */
  accountId(ext: string, supplier?: string): Promise<string>;
  setSupplierStatus(code: string, status: SupplierStatus): Promise<void>;
  /** Writes a document under the main supplier's documents root. */
  putDocument(relativePath: string, body: Buffer | string): Promise<void>;
  /** Runs a query and returns its rows (for exact `::text` reads of numerics). */
  rows<T extends Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

/**
 * One service instance for an extras suite: its own database, a fresh local documents folder,
 * the sandbox vendor over real HTTP, a fixed clock, the main supplier, a team and a token (their
 * codes and names as given, EXTRAS_CO and the others above by default).
 */
export async function createExtrasHarness(
  opts: { now?: Date; supplier?: string; team?: string; vendor?: string; docsRoot?: string } = {},
): Promise<ExtrasHarness> {
  // The main supplier, its team, its documents root and the vendor code the sandbox vendor answers as.
  const { supplier: main = S, team = TEAM, vendor: vendorCode = VENDOR, docsRoot = DOCS_ROOT } = opts;
  const docsDir = await mkdtemp(path.join(tmpdir(), 'extras-docs-'));
  const vendor = await startFakeVendor();
  let ctx: TestContext;
  try {
    ctx = await createTestContext({
      now: opts.now ?? NOW,
      env: {
        DOCUMENTS_DIR: docsDir,
        PAYMENT_VENDORS: JSON.stringify({ [vendorCode]: { base_url: vendor.baseUrl, api_key: FAKE_VENDOR_API_KEY } }),
        PAYMENT_VENDOR_TIMEOUT_MS: '300',
        PAYMENT_VENDOR_RETRIES: '2',
      },
      deps: { vendorBackoffMs: { min: 10, max: 50 } },
    });
  } catch (err) {
    await vendor.close();
    await rm(docsDir, { recursive: true, force: true });
    throw err;
  }
  await ctx.createSupplier(main, { documentsRoot: docsRoot });
  await ctx.createTeam(team);
  let auth = await ctx.authHeaders();

  const post = async (url: string, payload: unknown, o: PostOptions = {}): Promise<LightMyRequestResponse> => {
    const headers: Record<string, string> = { 'content-type': 'application/json', ...(o.noAuth ? {} : auth) };
    return ctx.app.inject({
      method: 'POST',
      url: o.query === undefined ? url : `${url}?${o.query}`,
      payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
      headers,
    });
  };

  const stageAccount = async (ext: string, overrides: AccountOverrides = {}, supplier = main): Promise<void> => {
    const staged = await post('/v1/data-import/account-import-process/create-or-update/', accountPayload(supplier, ext, overrides));
    expect(staged.statusCode, staged.body).toBe(201);
  };

  return {
    ctx,
    vendor,
    get auth() {
      return auth;
    },
    docsDir,
    async setClock(date) {
      ctx.clock.set(date);
      auth = await ctx.authHeaders();
    },
    post,
    stageAccount,
    async importAccount(ext, overrides = {}, supplier = main) {
      await stageAccount(ext, overrides, supplier);
      const processed = await post('/v1/data-import/account-import-process/process/', {
        external_account_number: ext,
        import_supplier_code: supplier,
        operations_team_name: team,
      });
      expect(processed.statusCode, processed.body).toBe(201);
      return (processed.json() as { service_account_number: string }).service_account_number;
    },
    async accountId(ext, supplier = main) {
      const row = await ctx.deps.db
        .selectFrom('accounts as a')
        .innerJoin('import_suppliers as s', 's.id', 'a.import_supplier_id')
        .select('a.id')
        .where('s.code', '=', supplier)
        .where('a.external_account_number', '=', ext)
        .executeTakeFirstOrThrow();
      return row.id;
    },
    async setSupplierStatus(code, status) {
      await ctx.deps.db.updateTable('import_suppliers').set({ status }).where('code', '=', code).execute();
    },
    async putDocument(relativePath, body) {
      await ctx.deps.documents.put(`${docsRoot}/${relativePath}`, body);
    },
    async rows<T extends Record<string, unknown>>(sql: string, params: unknown[] = []) {
      return (await ctx.deps.pool.query(sql, params)).rows as T[];
    },
    async close() {
      try {
        await ctx.close();
      } finally {
        await vendor.close();
        await rm(docsDir, { recursive: true, force: true });
      }
    },
  };
}

/** The interface's error envelope, exactly: detail, code, errors (and nothing else). */
export function expectEnvelope(res: LightMyRequestResponse, status: number, code: string): Array<{ detail: string; code: string; attr: string | null }> {
  expect(res.statusCode, res.body).toBe(status);
  const body = res.json() as { detail: unknown; code: unknown; errors: Array<{ detail: string; code: string; attr: string | null }> };
  expect(Object.keys(body).sort()).toEqual(['code', 'detail', 'errors']);
  expect(typeof body.detail).toBe('string');
  expect(body.code).toBe(code);
  expect(Array.isArray(body.errors)).toBe(true);
  for (const e of body.errors) {
    expect(Object.keys(e).sort()).toEqual(['attr', 'code', 'detail']);
    expect(typeof e.detail).toBe('string');
    expect(typeof e.code).toBe('string');
  }
  return body.errors;
}

/** `code@attr` for each item, for order-insensitive comparisons. */
export const pairs = (errors: Array<{ code: string; attr: string | null }>): string[] => errors.map((e) => `${e.code}@${e.attr}`);

/** The transactions endpoint's own 400: the first failing transaction. */
export function expectTransactionError(
  res: LightMyRequestResponse,
  code: string,
  attr: string,
): { status: string; error_detail: string; transaction_data: Record<string, unknown>; code: string; attr: string } {
  expect(res.statusCode, res.body).toBe(400);
  const body = res.json() as { status: string; error_detail: string; transaction_data: Record<string, unknown>; code: string; attr: string };
  expect(Object.keys(body).sort()).toEqual(['attr', 'code', 'error_detail', 'status', 'transaction_data']);
  expect(body.status).toBe('TRANSACTION_IMPORT_ERROR');
  expect(typeof body.error_detail).toBe('string');
  expect(body.error_detail.length).toBeGreaterThan(0);
  expect(body.code).toBe(code);
  expect(body.attr).toBe(attr);
  return body;
}

/** Runs `n` copies of `request` concurrently (each call starts its own injected request). */
export const many = async <T>(n: number, request: () => Promise<T>): Promise<T[]> => Promise.all(Array.from({ length: n }, () => request()));

/**
 * Three transactions of different shapes for the repeated-request tests: a charge, a credit dated
 * before the open period (from 2025-11-01, after last_statement_closing_date 2025-10-31: moved, with
 * one pinned note) and a supply charge with two line items and a tax item. Ids `${prefix}-1..3`.
 */
export const mixedTransactions = (prefix: string) => [
  { transaction_id: `${prefix}-1`, transaction_date: '2026-01-10', amount: '12.34', type: 'CHARGE', reason: 'IMPORTED_CHARGE' },
  { transaction_id: `${prefix}-2`, transaction_date: '2025-09-01', amount: '5', type: 'CREDIT', reason: 'GOODWILL_PAYMENT' },
  {
    transaction_id: `${prefix}-3`,
    transaction_date: '2026-02-01',
    amount: '97.81',
    type: 'SUPPLY_CHARGE',
    product_code: 'E-1R',
    line_items: [
      { start_date: '2026-01-01', end_date: '2026-01-31', number_of_units: '310.5', net_amount: '93.15' },
      { start_date: '2026-01-01', end_date: '2026-01-31', number_of_units: '31', net_amount: '4.66', rate_band: 'STANDING_CHARGE' },
    ],
    tax_items: [{ amount: '4.66', tax_type: 'VAT', value_taxed: '93.15', rate: '0.05', unit_type: 'PROPORTION' }],
  },
];
