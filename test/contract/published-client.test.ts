import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ErrorObject } from 'ajv';
import createClient from 'openapi-fetch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/project-root.js';
import type { TestContext } from '../helpers/context.js';
import type { FakeVendor } from '../helpers/fake-vendor.js';
import { accountPayload } from '../helpers/fixtures.js';
import { createExtrasHarness, mixedTransactions, type ExtrasHarness } from '../http/extras/setup.js';
import type { components, paths } from './published-client.generated.js';
import { loadPublishedDocument, PUBLISHED_DOCUMENT } from './published-document.js';

// Issue 15, part 7: a supplier's client generated from the published document (openapi-typescript types,
// openapi-fetch calls) against this service over real HTTP. Every 2xx answer is checked against the
// document's response schema; where the interface (its specification and docs/decisions.md) says otherwise,
// the interface wins and ALLOWANCES below names exactly that difference. 4xx bodies are the interface's envelope.

const GENERATED = path.join(projectRoot, 'test/contract/published-client.generated.ts');

// Suppliers and payment vendors are each deployment's own (decisions §6); the document enumerates EDF's,
// so this deployment is set up with published names, as a client typed from the document sends them.
const SUPPLIER = 'EDF';
const VENDOR = 'STRIPE';
const TEAM = 'Published Client Team';
const DOCS_ROOT = 'suppliers/edf';
/** A fixed "today" (2026-06-15), so the date rules of transactions and notes do not depend on the wall clock. */
const NOW = new Date('2026-06-15T12:00:00Z');

type Endpoint = `${'GET' | 'POST'} ${keyof paths & string}`;

/** A difference between the document and the interface that the check accepts, and why. */
type Allowance = {
  name: string;
  reason: string;
  endpoint: Endpoint;
} & (
  | {
      /** Ajv errors with this keyword at a matching path (for `required`, naming `missing`), where `when` holds, are the named difference. */
      kind: 'value';
      keyword: string;
      at: RegExp;
      missing?: string;
      /** `value` is the one at the error's path, `parent` the object holding it. */
      when?: (value: unknown, parent: unknown) => boolean;
    }
  | {
      /** The body is an array of what the document describes once: each item is checked against it. */
      kind: 'array-of-documented';
    }
);

const LISTS = ['all', 'pending'] as const;
const isPendingEntry = (entry: unknown): boolean =>
  typeof entry === 'object' && entry !== null && ['service_account_number', 'kraken_account_number', 'account_created_at'].every((k) => (entry as Record<string, unknown>)[k] === null);

const ALLOWANCES: Allowance[] = [
  ...LISTS.map(
    (list): Allowance => ({
      name: `${list} list: a pending entry's number and time are null`,
      reason:
        'The interface: "for pending accounts the last two are null" (service_account_number, account_created_at), and so is their published twin kraken_account_number. The document types both as a string when present.',
      endpoint: `GET /v1/data-import/${list}-account-import-processes/{import_supplier_code}/`,
      kind: 'value',
      keyword: 'type',
      at: /^\/\d+\/(kraken_account_number|account_created_at)$/,
      when: (value, entry) => value === null && isPendingEntry(entry),
    }),
  ),
  {
    name: 'notes: the 201 is an array of note results',
    reason: 'The interface: "201: Array with one entry per posted note". The document describes one CreateAccountNotesResponse; each entry is checked against it.',
    endpoint: 'POST /v1/data-import/notes/create/',
    kind: 'array-of-documented',
  },
  {
    name: "statements: gross_amount is a decimal string",
    reason:
      'Money is decimal: amounts go out as decimal strings, never floats (DESIGN property 4; the interface says so of transaction amounts). The document types a statement\'s gross_amount as an integer, which cannot hold pence.',
    endpoint: 'POST /v1/data-import/historical-statements/create/',
    kind: 'value',
    keyword: 'type',
    at: /^\/statements\/\d+\/gross_amount$/,
    when: (value) => typeof value === 'string' && /^-?\d+(\.\d+)?$/.test(value),
  },
  {
    name: 'process: the 201 carries the number, not the external account number',
    reason:
      'The interface: "201: Body: service_account_number" (issue 15 adds its published name kraken_account_number). The document also requires external_account_number, which the client itself sent.',
    endpoint: 'POST /v1/data-import/account-import-process/process/',
    kind: 'value',
    keyword: 'required',
    at: /^$/,
    missing: 'external_account_number',
  },
  {
    name: 'payment instruction: the 201 has no account_number',
    reason:
      'The interface: "201: Body: service_account_number, reference" (issue 15 adds kraken_account_number, the name a generated client reads). The document also requires account_number, its older name for the same number, which the interface does not carry.',
    endpoint: 'POST /v1/data-import/payment-instruction/create/',
    kind: 'value',
    keyword: 'required',
    at: /^$/,
    missing: 'account_number',
  },
];

const doc = loadPublishedDocument();
const used = new Set<string>();

/** The value at an Ajv instancePath (`/0/kraken_account_number`). */
function valueAt(body: unknown, pointer: string): unknown {
  return pointer
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<unknown>((v, key) => (v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[key] : undefined), body);
}

/** What in `body` breaks the document's response schema for `endpoint` and `status` and no allowance names, one line each. */
function unexplained(endpoint: Endpoint, status: number, body: unknown): string[] {
  const [method, p] = endpoint.split(' ') as [string, string];
  const mine = ALLOWANCES.filter((a) => a.endpoint === endpoint);
  const eachItem = mine.find((a) => a.kind === 'array-of-documented');
  let errors: ErrorObject[];
  if (eachItem) {
    if (!Array.isArray(body)) return [`(body) is not an array, as "${eachItem.name}" expects`];
    used.add(eachItem.name);
    errors = body.flatMap((item, i) => doc.check(method, p, status, item).map((e) => ({ ...e, instancePath: `/${i}${e.instancePath}` })));
  } else {
    errors = doc.check(method, p, status, body);
  }
  return errors
    .filter((e) => {
      const value = valueAt(body, e.instancePath);
      const parent = valueAt(body, e.instancePath.replace(/\/[^/]*$/, ''));
      const allowance = mine.find(
        (a) =>
          a.kind === 'value' &&
          a.keyword === e.keyword &&
          a.at.test(e.instancePath) &&
          (a.missing === undefined || (e.params as { missingProperty?: string }).missingProperty === a.missing) &&
          (a.when === undefined || a.when(value, parent)),
      );
      if (allowance) used.add(allowance.name);
      return !allowance;
    })
    .map((e) => `${e.instancePath || '(body)'} ${e.message ?? e.keyword} (${e.schemaPath}); got ${JSON.stringify(valueAt(body, e.instancePath))}`);
}

/** A 2xx answer that conforms to the document's response schema, but for the named allowances. */
function expectPublished(endpoint: Endpoint, res: { response: Response; data?: unknown }): void {
  const { status } = res.response;
  expect(status >= 200 && status < 300, `${endpoint}: ${status}`).toBe(true);
  expect(unexplained(endpoint, status, res.data), `${endpoint} ${status} against the published document`).toEqual([]);
}

/** The interface's error envelope, exactly: detail, code, errors. */
function expectEnvelope(res: { response: Response; error?: unknown }, status: number, code: string): void {
  expect(res.response.status, JSON.stringify(res.error)).toBe(status);
  const body = res.error as { detail: unknown; code: unknown; errors: unknown };
  expect(Object.keys(body).sort()).toEqual(['code', 'detail', 'errors']);
  expect(typeof body.detail).toBe('string');
  expect(body.code).toBe(code);
  expect(Array.isArray(body.errors)).toBe(true);
}

let ctx: TestContext;
let vendor: FakeVendor;
let harness: ExtrasHarness;
let client: ReturnType<typeof createClient<paths>>;

type Account = components['schemas']['EnergyAccount'];
/** The project's valid account fixture, as the generated type of a request body (it is built loosely typed). */
const account = (ext: string): Account => accountPayload(SUPPLIER, ext) as unknown as Account;

async function importAccount(ext: string): Promise<string> {
  const staged = await client.POST('/v1/data-import/account-import-process/create-or-update/', { body: account(ext) });
  expect(staged.response.status, JSON.stringify(staged.error)).toBe(201);
  const processed = await client.POST('/v1/data-import/account-import-process/process/', {
    body: { external_account_number: ext, import_supplier_code: SUPPLIER, operations_team_name: TEAM, dry_run: false },
  });
  expect(processed.response.status, JSON.stringify(processed.error)).toBe(201);
  return processed.data!.kraken_account_number!;
}

/** The service listening on loopback, with the document's supplier and vendor, a team, documents and the sandbox payment vendor. */
beforeAll(async () => {
  harness = await createExtrasHarness({ now: NOW, supplier: SUPPLIER, team: TEAM, vendor: VENDOR, docsRoot: DOCS_ROOT });
  ctx = harness.ctx;
  vendor = harness.vendor;
  await harness.putDocument('statements/2025-01.pdf', '%PDF-1.4\n%âãÏÓ\n1 0 obj\n<<>>\nendobj\n');
  await harness.putDocument('notes/letter.pdf', '%PDF-1.4\nletter\n');
  const baseUrl = await ctx.app.listen({ host: '127.0.0.1', port: 0 });
  client = createClient<paths>({ baseUrl, headers: harness.auth });
});
afterAll(async () => harness?.close());

describe('the generated client', () => {
  it('is what openapi-typescript writes today from test/fixtures/published/openapi.yml (npm run contract:client)', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'published-client-'));
    try {
      const out = path.join(dir, 'published-client.generated.ts');
      const cli = path.join(projectRoot, 'node_modules/openapi-typescript/bin/cli.js');
      execFileSync(process.execPath, [cli, PUBLISHED_DOCUMENT, '-o', out], { cwd: projectRoot, stdio: 'pipe' });
      expect(readFileSync(GENERATED, 'utf8')).toBe(readFileSync(out, 'utf8'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('account imports through the generated client', () => {
  it('validate-account: 200 with the validated data, as EnergyAccount', async () => {
    const res = await client.POST('/v1/data-import/validate-account/', { body: account('PC-VALID') });
    expectPublished('POST /v1/data-import/validate-account/', res);
    expect(res.data?.external_account_number).toBe('PC-VALID');
  });

  it('create-or-update: 201 then 200, the supplier read as import_supplier_code', async () => {
    const first = await client.POST('/v1/data-import/account-import-process/create-or-update/', { body: account('PC-STAGE') });
    expect(first.response.status).toBe(201);
    expectPublished('POST /v1/data-import/account-import-process/create-or-update/', first);
    expect(first.data).toEqual({ import_supplier_code: SUPPLIER, external_account_number: 'PC-STAGE', import_supplier: SUPPLIER });
    const again = await client.POST('/v1/data-import/account-import-process/create-or-update/', { body: account('PC-STAGE') });
    expect(again.response.status).toBe(200);
    expectPublished('POST /v1/data-import/account-import-process/create-or-update/', again);
    expect(again.data?.import_supplier_code).toBe(SUPPLIER);
  });

  it('process: 201, the number read as kraken_account_number; the status reads it too', async () => {
    const number = await importAccount('PC-PROCESS');
    expect(number).toMatch(/^A-[0-9A-F]{8}$/);

    const processed = await client.POST('/v1/data-import/account-import-process/process/', {
      body: { external_account_number: 'PC-PROCESS', import_supplier_code: SUPPLIER, operations_team_name: TEAM, dry_run: false },
    });
    // Already imported: the interface's envelope, with the pair beside it (decisions §2).
    expect(processed.response.status).toBe(400);
    expect(processed.error).toMatchObject({ code: 'account_import_process_already_imported', service_account_number: number });

    const status = await client.GET('/v1/data-import/account-transfer-status/{import_supplier_code}/{external_account_number}/', {
      params: { path: { import_supplier_code: SUPPLIER, external_account_number: 'PC-PROCESS' } },
    });
    expectPublished('GET /v1/data-import/account-transfer-status/{import_supplier_code}/{external_account_number}/', status);
    expect(status.data).toEqual({ status: 'COMPLETED', kraken_account_number: number, service_account_number: number });
  });

  it('process: the 201 body itself conforms', async () => {
    await client.POST('/v1/data-import/account-import-process/create-or-update/', { body: account('PC-PROCESS-2') });
    const res = await client.POST('/v1/data-import/account-import-process/process/', {
      body: { external_account_number: 'PC-PROCESS-2', import_supplier_code: SUPPLIER, operations_team_name: TEAM, dry_run: false },
    });
    expectPublished('POST /v1/data-import/account-import-process/process/', res);
    expect(res.data?.kraken_account_number).toMatch(/^A-[0-9A-F]{8}$/);
  });

  it('account-transfer-status of a staged account: UNKNOWN, an empty number', async () => {
    await client.POST('/v1/data-import/account-import-process/create-or-update/', { body: account('PC-STATUS-STAGED') });
    const res = await client.GET('/v1/data-import/account-transfer-status/{import_supplier_code}/{external_account_number}/', {
      params: { path: { import_supplier_code: SUPPLIER, external_account_number: 'PC-STATUS-STAGED' } },
    });
    expectPublished('GET /v1/data-import/account-transfer-status/{import_supplier_code}/{external_account_number}/', res);
    expect(res.data).toEqual({ status: 'UNKNOWN', kraken_account_number: '', service_account_number: '' });
  });

  it('the three lists: all, pending and imported entries with kraken_account_number', async () => {
    const imported = await importAccount('PC-LIST-1');
    await client.POST('/v1/data-import/account-import-process/create-or-update/', { body: account('PC-LIST-2') });
    const params = { params: { path: { import_supplier_code: SUPPLIER } } };

    const all = await client.GET('/v1/data-import/all-account-import-processes/{import_supplier_code}/', params);
    expectPublished('GET /v1/data-import/all-account-import-processes/{import_supplier_code}/', all);
    expect(all.data?.find((e) => e.external_account_number === 'PC-LIST-1')).toMatchObject({ kraken_account_number: imported, service_account_number: imported });
    expect(all.data?.find((e) => e.external_account_number === 'PC-LIST-2')).toEqual({
      external_account_number: 'PC-LIST-2',
      kraken_account_number: null,
      service_account_number: null,
      account_created_at: null,
    });

    const pending = await client.GET('/v1/data-import/pending-account-import-processes/{import_supplier_code}/', params);
    expectPublished('GET /v1/data-import/pending-account-import-processes/{import_supplier_code}/', pending);
    expect(pending.data?.map((e) => e.external_account_number)).toContain('PC-LIST-2');

    const done = await client.GET('/v1/data-import/imported-account-import-processes/{import_supplier_code}/', params);
    expectPublished('GET /v1/data-import/imported-account-import-processes/{import_supplier_code}/', done);
    const entry = done.data?.find((e) => e.external_account_number === 'PC-LIST-1');
    expect(entry?.kraken_account_number).toBe(imported);
    expect(entry?.account_created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
  });
});

describe('extras through the generated client', () => {
  let number: string;
  beforeAll(async () => {
    number = await importAccount('PC-EXTRAS');
  });

  it('notes: 201 with one entry per note', async () => {
    const res = await client.POST('/v1/data-import/notes/create/', {
      body: {
        import_supplier: SUPPLIER,
        external_account_number: 'PC-EXTRAS',
        notes: [
          { body: 'A pinned note.', is_pinned: true, unpin_at: '2026-07-01T12:00:00Z' },
          { created_at: '2026-02-01T12:00:00Z', body: 'A note with a letter.', document_paths: [{ document_path: 'notes/letter.pdf' }] },
        ],
      },
    });
    expectPublished('POST /v1/data-import/notes/create/', res);
  });

  it('transactions: 201 with one result per transaction', async () => {
    const res = await client.POST('/v1/data-import/transactions/create/', {
      params: { query: { check_previously_added: true, force_add_to_current_statement: true } },
      body: {
        import_supplier: SUPPLIER,
        external_account_number: 'PC-EXTRAS',
        dry_run: false,
        transactions: mixedTransactions('PC') as components['schemas']['Transactions']['transactions'],
      },
    });
    expectPublished('POST /v1/data-import/transactions/create/', res);
    expect(res.data?.results.map((r) => r.status)).toEqual(['TRANSACTION_ADDED_TO_ACCOUNT', 'TRANSACTION_ADDED_TO_ACCOUNT', 'TRANSACTION_ADDED_TO_ACCOUNT']);
  });

  it('historical statements: 201 with the validated data', async () => {
    const res = await client.POST('/v1/data-import/historical-statements/create/', {
      body: {
        import_supplier: SUPPLIER,
        external_account_number: 'PC-EXTRAS',
        statements: [
          { statement_id: 'ST-1', bill_period_from_date: '2025-01-01', bill_period_to_date: '2025-01-31', issued_date: '2025-02-02', number: 'N-1', gross_amount: 100, statement_path: 'statements/2025-01.pdf' },
          { statement_id: 'ST-2', bill_period_from_date: '2025-02-01', bill_period_to_date: '2025-02-28' },
        ],
      },
    });
    expectPublished('POST /v1/data-import/historical-statements/create/', res);
  });

  it('payment instruction: 201, the number read as kraken_account_number', async () => {
    vendor.set('PC-CARD-1', { kind: 'found', details: { type: 'CARD', last4: '4242' } });
    const res = await client.POST('/v1/data-import/payment-instruction/create/', {
      body: { import_supplier: SUPPLIER, external_account_number: 'PC-EXTRAS', vendor: VENDOR, reference: 'PC-CARD-1', type: 'CARD' },
    });
    expectPublished('POST /v1/data-import/payment-instruction/create/', res);
    expect(res.data).toEqual({ kraken_account_number: number, service_account_number: number, reference: 'PC-CARD-1' });
  });
});

describe('registration through the generated client', () => {
  // No registration gateway in this context: every meter point answers REGISTRATION_FLOW_ERROR, still the document's shape.
  const pair = { path: { import_supplier_code: SUPPLIER, external_account_number: 'PC-EXTRAS' } };

  it('send-registration-flows: 200 GbrMeterPointRegistrationStatuses for a created account, checked against the document', async () => {
    const res = await client.POST('/v1/data-import/send-registration-flows/{import_supplier_code}/{external_account_number}/', { params: pair });
    expectPublished('POST /v1/data-import/send-registration-flows/{import_supplier_code}/{external_account_number}/', res);
    expect(res.data?.import_supplier_code).toBe(SUPPLIER);
    expect(res.data?.meter_points?.length).toBeGreaterThan(0);
    for (const p of res.data?.meter_points ?? []) expect(p).toMatchObject({ status: 'REGISTRATION_FLOW_ERROR', error_detail: 'No registration gateway is configured.' });
  });

  it('meterpoint-statuses-for-account: 200 array of GbrMeterPointStatus for a created account, checked against the document', async () => {
    const res = await client.GET('/v1/data-import/meterpoint-statuses-for-account/{import_supplier_code}/{external_account_number}/', { params: pair });
    expectPublished('GET /v1/data-import/meterpoint-statuses-for-account/{import_supplier_code}/{external_account_number}/', res);
    expect((res.data as Array<{ status: string }>).every((p) => p.status === 'PRE_REGISTRATION')).toBe(true);
  });

  it('their 404s are the document\'s own shapes, not the envelope', async () => {
    const missing = { path: { import_supplier_code: SUPPLIER, external_account_number: 'PC-NOBODY' } };
    const sent = await client.POST('/v1/data-import/send-registration-flows/{import_supplier_code}/{external_account_number}/', { params: missing });
    expect(sent.response.status).toBe(404);
    expect(sent.error).toEqual({ external_account_number: 'PC-NOBODY', import_supplier_code: SUPPLIER, error_detail: 'Account not found for PC-NOBODY.' });
    const listed = await client.GET('/v1/data-import/meterpoint-statuses-for-account/{import_supplier_code}/{external_account_number}/', { params: missing });
    expect(listed.response.status).toBe(404);
    expect(listed.error).toEqual({ error: 'No meterpoints found for PC-NOBODY.' });
  });
});

describe('4xx answers stay the interface envelope, one per endpoint family', () => {
  it('validate, stage and process', async () => {
    const broken = { ...accountPayload(SUPPLIER, 'PC-BAD'), customers: 'nobody' } as unknown as Account;
    expectEnvelope(await client.POST('/v1/data-import/validate-account/', { body: broken }), 400, 'account_failed_validation');
    expectEnvelope(await client.POST('/v1/data-import/account-import-process/create-or-update/', { body: broken }), 400, 'account_failed_validation');
    expectEnvelope(
      await client.POST('/v1/data-import/account-import-process/process/', {
        body: { external_account_number: 'PC-NEVER-STAGED', import_supplier_code: SUPPLIER, operations_team_name: TEAM, dry_run: false },
      }),
      400,
      'import_process_does_not_exist',
    );
  });

  it('the reads', async () => {
    expectEnvelope(
      await client.GET('/v1/data-import/all-account-import-processes/{import_supplier_code}/', {
        params: { path: { import_supplier_code: SUPPLIER }, query: { page_size: 0 } as never },
      }),
      400,
      'invalid_request',
    );
    expectEnvelope(
      await client.GET('/v1/data-import/account-transfer-status/{import_supplier_code}/{external_account_number}/', {
        params: { path: { import_supplier_code: SUPPLIER, external_account_number: 'PC-NOBODY' } },
      }),
      404,
      'account_not_found',
    );
  });

  it('notes, transactions, statements and payment instruction', async () => {
    await importAccount('PC-EXTRAS-400');
    const pair = { import_supplier: SUPPLIER, external_account_number: 'PC-EXTRAS-400' } as const;
    expectEnvelope(await client.POST('/v1/data-import/notes/create/', { body: { ...pair, notes: [{ is_pinned: true }] } }), 400, 'invalid_request');
    expectEnvelope(await client.POST('/v1/data-import/transactions/create/', { body: { ...pair } as never }), 400, 'invalid_request');
    expectEnvelope(
      await client.POST('/v1/data-import/historical-statements/create/', {
        body: { ...pair, statements: [{ statement_id: 'X', bill_period_from_date: '2025-02-01', bill_period_to_date: '2025-01-01' }] },
      }),
      400,
      'invalid_request',
    );
    expectEnvelope(
      // A published vendor that this deployment does not configure.
      await client.POST('/v1/data-import/payment-instruction/create/', { body: { ...pair, vendor: 'BOTTOMLINE_PTX', reference: 'R', type: 'CARD' } }),
      400,
      'payment_vendor_not_found',
    );
  });
});

describe('the check', () => {
  it('finds what breaks the document, and an allowance covers only the difference it names', () => {
    const status = 'GET /v1/data-import/account-transfer-status/{import_supplier_code}/{external_account_number}/' as const;
    expect(unexplained(status, 200, { status: 'DONE', kraken_account_number: 'A-1' })).toEqual([expect.stringMatching(/^\/status must be equal to one of the allowed values/)]);
    expect(unexplained(status, 200, { kraken_account_number: 'A-1' })).toEqual([expect.stringMatching(/must have required property 'status'/)]);
    const all = 'GET /v1/data-import/all-account-import-processes/{import_supplier_code}/' as const;
    // A null number on an entry that has a creation time is not a pending entry: not allowed.
    expect(unexplained(all, 200, [{ external_account_number: 'X', service_account_number: null, kraken_account_number: null, account_created_at: '2026-01-01T00:00:00Z' }])).toHaveLength(1);
    expect(unexplained(all, 200, [{ external_account_number: 'X', account_created_at: 'yesterday' }])).toEqual([expect.stringMatching(/must match format "date-time"/)]);
    // The imported list holds no pending entries, so no allowance there.
    const imported = 'GET /v1/data-import/imported-account-import-processes/{import_supplier_code}/' as const;
    expect(unexplained(imported, 200, [{ external_account_number: 'X', service_account_number: null, kraken_account_number: null, account_created_at: null }])).toHaveLength(2);
    const statements = 'POST /v1/data-import/historical-statements/create/' as const;
    const statement = { statement_id: '1', bill_period_from_date: '2025-01-01', bill_period_to_date: '2025-01-31' };
    expect(unexplained(statements, 201, { import_supplier: SUPPLIER, external_account_number: 'X', statements: [{ ...statement, gross_amount: 'a lot' }] })).toHaveLength(1);
    expect(unexplained(statements, 201, { import_supplier: 'NOT_PUBLISHED', external_account_number: 'X', statements: [statement] })).toHaveLength(1);
    // Transactions are checked against the schema their type names (the document's discriminator).
    const transactions = 'POST /v1/data-import/transactions/create/' as const;
    const charge = { transaction_id: '1', transaction_date: '2026-01-01', amount: '1.00', type: 'CHARGE', reason: 'IMPORTED_CHARGE' };
    expect(unexplained(transactions, 201, { results: [{ status: 'TRANSACTION_ADDED_TO_ACCOUNT', transaction_data: charge }] })).toEqual([]);
    expect(unexplained(transactions, 201, { results: [{ status: 'TRANSACTION_ADDED_TO_ACCOUNT', transaction_data: { ...charge, reason: 'FULL_CREDIT_REFUND' } }] })).not.toEqual([]);
  });
});

describe('the allowances', () => {
  it('are each used: none outlives the difference it names', () => {
    expect(ALLOWANCES.map((a) => a.name).filter((n) => !used.has(n))).toEqual([]);
  });
});
