import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { markToSkip } from '../../src/imports/accounts/account.repository.js';
import { findSupplierByCode } from '../../src/imports/suppliers/supplier.repository.js';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { accountPayload, validMpan } from '../helpers/fixtures.js';

let ctx: TestContext;
let auth: { authorization: string };
const S = 'SUPPLIER_A';
const TEAM = 'Migrations Team';

beforeAll(async () => {
  ctx = await createTestContext();
  await ctx.createSupplier(S);
  await ctx.createSupplier('PAUSED_CO', { status: 'PAUSED' });
  await ctx.createSupplier('DONE_CO', { status: 'COMPLETE' });
  await ctx.createTeam(TEAM);
  auth = await ctx.authHeaders();
});
afterAll(async () => ctx?.close());

const post = async (url: string, payload: unknown) => ctx.app.inject({ method: 'POST', url, payload: payload as object, headers: auth });
const get = async (url: string) => ctx.app.inject({ method: 'GET', url, headers: auth });
const stage = (payload: unknown) => post('/v1/data-import/account-import-process/create-or-update/', payload);
const processAccount = (ext: string, extra: Record<string, unknown> = {}, supplier = S) =>
  post('/v1/data-import/account-import-process/process/', {
    external_account_number: ext,
    import_supplier_code: supplier,
    operations_team_name: TEAM,
    ...extra,
  });

describe('validate-account', () => {
  it('answers 200 with the validated, normalised data', async () => {
    const res = await post('/v1/data-import/validate-account/', accountPayload(S, 'V-1'));
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.billing_postcode).toBe('NW1 6XE');
    expect(body.transfer_balance).toBe('-12.5');
    expect(body.customers[0].mobile).toBe('+447911123456');
    expect(body.external_account_number).toBe('V-1');
  });

  it('keeps every digit of a decimal sent as a JSON number', async () => {
    const raw = JSON.stringify(accountPayload(S, 'V-2', { transfer_balance: 0 })).replace(
      '"transfer_balance":0',
      '"transfer_balance":1234567890.0123456789',
    );
    const res = await ctx.app.inject({
      method: 'POST',
      url: '/v1/data-import/validate-account/',
      payload: raw,
      headers: { ...auth, 'content-type': 'application/json' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().transfer_balance).toBe('1234567890.0123456789');
  });

  it('reports every problem at once with dot-path attrs', async () => {
    const payload = accountPayload(S, 'V-3');
    (payload.customers as Array<Record<string, unknown>>)[0]!.landline = '12345';
    payload.billing_postcode = 'NOT A POSTCODE';
    payload.surprise = true;
    const res = await post('/v1/data-import/validate-account/', payload);
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body.code).toBe('account_failed_validation');
    expect(typeof body.detail).toBe('string');
    const pairs = body.errors.map((e: { code: string; attr: string }) => `${e.code}@${e.attr}`);
    expect(pairs).toEqual(
      expect.arrayContaining(['invalid_phone_number@customers.0.landline', 'invalid_postcode@billing_postcode', 'unknown_field@surprise']),
    );
    expect(body.errors).toHaveLength(3);
  });

  it('rejects an unknown supplier with import_supplier_not_found on import_supplier', async () => {
    const res = await post('/v1/data-import/validate-account/', accountPayload('NOPE', 'V-4'));
    expect(res.statusCode).toBe(400);
    expect(res.json().errors).toEqual([expect.objectContaining({ code: 'import_supplier_not_found', attr: 'import_supplier' })]);
  });

  it('rejects a meter point staged by another account of any supplier', async () => {
    const first = accountPayload(S, 'MP-OWNER');
    expect((await stage(first)).statusCode).toBe(201);
    const taken = (first.supply_addresses as Array<{ meter_points: Array<{ identifier: string }> }>)[0]!.meter_points[0]!.identifier;
    const second = accountPayload('DONE_CO', 'MP-THIEF');
    (second.supply_addresses as Array<{ meter_points: Array<{ identifier: string }> }>)[0]!.meter_points[1] = {
      ...((second.supply_addresses as Array<{ meter_points: Array<Record<string, unknown>> }>)[0]!.meter_points[0]!),
      identifier: taken,
    };
    const res = await post('/v1/data-import/validate-account/', second);
    expect(res.statusCode).toBe(400);
    expect(res.json().errors).toContainEqual(
      expect.objectContaining({ code: 'meter_point_already_registered', attr: 'supply_addresses.0.meter_points.1.identifier' }),
    );
    // The owner itself may re-stage with the same meter point.
    expect((await stage(first)).statusCode).toBe(200);
  });

  it('answers each of 40 concurrent requests for itself: own claims, others\' claims, unknown suppliers, valid', async () => {
    type Mp = { identifier: string };
    const mps = (p: Record<string, unknown>) => (p.supply_addresses as Array<{ meter_points: Mp[] }>)[0]!.meter_points;
    // Owners stage first: their meter points are claimed by them.
    const owners = Array.from({ length: 10 }, (_, i) => accountPayload(S, `CC-OWN-${i}`));
    for (const o of owners) expect((await stage(o)).statusCode).toBe(201);
    const requests = Array.from({ length: 40 }, (_, i) => {
      const kind = (['own', 'thief', 'unknown', 'valid'] as const)[i % 4]!;
      const owner = owners[Math.floor(i / 4)]!;
      if (kind === 'own') return { kind, payload: owner };
      if (kind === 'unknown') return { kind, payload: accountPayload(`NOPE-${i}`, `CC-${i}`) };
      const payload = accountPayload(S, `CC-${i}`);
      // The owner's electricity meter point as this account's second one.
      if (kind === 'thief') mps(payload)[1] = { ...mps(payload)[0]!, identifier: mps(owner)[0]!.identifier };
      return { kind, payload };
    });
    const answers = await Promise.all(requests.map(async (r) => post('/v1/data-import/validate-account/', r.payload)));
    answers.forEach((res, i) => {
      const { kind } = requests[i]!;
      if (kind === 'own' || kind === 'valid') {
        expect(res.statusCode, `${i} ${kind}`).toBe(200);
        expect(res.json().external_account_number).toBe((requests[i]!.payload as { external_account_number: string }).external_account_number);
      } else {
        expect(res.statusCode, `${i} ${kind}`).toBe(400);
        const expected =
          kind === 'thief'
            ? [expect.objectContaining({ code: 'meter_point_already_registered', attr: 'supply_addresses.0.meter_points.1.identifier' })]
            : [expect.objectContaining({ code: 'import_supplier_not_found', attr: 'import_supplier' })];
        expect(res.json().errors, `${i} ${kind}`).toEqual(expected);
      }
    });
  });

  it('answers 400 invalid_json for a malformed body and 415 for another content type', async () => {
    const bad = await ctx.app.inject({
      method: 'POST',
      url: '/v1/data-import/validate-account/',
      payload: '{"import_supplier": ',
      headers: { ...auth, 'content-type': 'application/json' },
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ code: 'invalid_json', errors: [] });
    const text = await ctx.app.inject({
      method: 'POST',
      url: '/v1/data-import/validate-account/',
      payload: 'hello',
      headers: { ...auth, 'content-type': 'text/plain' },
    });
    expect(text.statusCode).toBe(415);
    expect(text.json()).toMatchObject({ code: 'unsupported_media_type', errors: [] });
  });

  it('answers 413 payload_too_large above 10 MiB', async () => {
    const big = JSON.stringify({ ...accountPayload(S, 'BIG'), billing_name: 'x'.repeat(10 * 1024 * 1024) });
    const res = await ctx.app.inject({
      method: 'POST',
      url: '/v1/data-import/validate-account/',
      payload: big,
      headers: { ...auth, 'content-type': 'application/json' },
    });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toMatchObject({ code: 'payload_too_large', errors: [] });
  });
});

describe('stage (create-or-update)', () => {
  it('answers 201 the first time and 200 when re-staged, replacing the data', async () => {
    const first = await stage(accountPayload(S, 'ST-1'));
    expect(first.statusCode).toBe(201);
    expect(first.json()).toEqual({ import_supplier: S, external_account_number: 'ST-1', import_supplier_code: S });
    const again = await stage(accountPayload(S, 'ST-1', { billing_name: 'Changed Name' }));
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual({ import_supplier: S, external_account_number: 'ST-1', import_supplier_code: S });
    const supplier = await findSupplierByCode(ctx.deps.db, S);
    const row = await ctx.deps.db
      .selectFrom('account_import_processes')
      .select('payload')
      .where('import_supplier_id', '=', supplier!.id)
      .where('external_account_number', '=', 'ST-1')
      .executeTakeFirstOrThrow();
    expect((row.payload as { billing_name: string }).billing_name).toBe('Changed Name');
  });

  it('validates with the same rules as validate-account', async () => {
    // The published EnergyAccount allows an empty customer list, so an unreadable billing e-mail
    // address is the invalid payload here.
    const payload = accountPayload(S, 'ST-2', { billing_email: 'ada@' });
    const res = await stage(payload);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'account_failed_validation', errors: [{ code: 'invalid_email', attr: 'billing_email' }] });
    expect(res.json().errors).toEqual((await post('/v1/data-import/validate-account/', payload)).json().errors);
  });

  it.each([
    ['PAUSED_CO'],
    ['DONE_CO'],
  ])('refuses when the supplier %s is not Ongoing', async (supplier) => {
    const res = await stage(accountPayload(supplier, 'ST-3'));
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('import_supplier_migration_not_ongoing');
  });

  it('refuses an account marked to skip', async () => {
    const supplier = await findSupplierByCode(ctx.deps.db, S);
    await markToSkip(ctx.deps.db, supplier!.id, 'ST-SKIP');
    const res = await stage(accountPayload(S, 'ST-SKIP'));
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('account_marked_to_skip');
  });
});

describe('process (create account)', () => {
  it('creates the account once and answers 201 with an A-XXXXXXXX number', async () => {
    expect((await stage(accountPayload(S, 'P-1'))).statusCode).toBe(201);
    const res = await processAccount('P-1');
    expect(res.statusCode).toBe(201);
    const { service_account_number } = res.json();
    expect(service_account_number).toMatch(/^A-[0-9A-F]{8}$/);
    // The published document's name for the same number sits beside it (issue 15, part 7).
    expect(res.json()).toEqual({ service_account_number, kraken_account_number: service_account_number });
    const account = await ctx.deps.db.selectFrom('accounts').selectAll().where('number', '=', service_account_number).executeTakeFirstOrThrow();
    expect(account.external_account_number).toBe('P-1');
    expect(account.transfer_balance).toBe('-12.5');
    const customers = await ctx.deps.db.selectFrom('customers').selectAll().where('account_id', '=', account.id).execute();
    expect(customers).toHaveLength(1);
    const meterPoints = await ctx.deps.db.selectFrom('meter_points').selectAll().where('account_id', '=', account.id).execute();
    expect(meterPoints).toHaveLength(2);

    const again = await processAccount('P-1');
    expect(again.statusCode).toBe(400);
    expect(again.json()).toMatchObject({
      code: 'account_import_process_already_imported',
      external_account_number: 'P-1',
      service_account_number,
    });
    // Staging an imported account is refused with the same code.
    const restage = await stage(accountPayload(S, 'P-1'));
    expect(restage.statusCode).toBe(400);
    expect(restage.json()).toMatchObject({ code: 'account_import_process_already_imported', service_account_number });
  });

  it('answers invalid_request for a malformed request, naming each field', async () => {
    const res = await post('/v1/data-import/account-import-process/process/', { import_supplier_code: S, dry_run: 'yes', extra: 1 });
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body.code).toBe('invalid_request');
    expect(body.errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ code: 'required', attr: 'external_account_number' }),
        expect.objectContaining({ code: 'required', attr: 'operations_team_name' }),
        expect.objectContaining({ code: 'invalid_type', attr: 'dry_run' }),
        expect.objectContaining({ code: 'unknown_field', attr: 'extra' }),
      ]),
    );
  });

  it('answers import_process_does_not_exist when nothing was staged', async () => {
    const res = await processAccount('NEVER-STAGED');
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('import_process_does_not_exist');
  });

  it('answers operations_team_not_found for a missing team', async () => {
    await stage(accountPayload(S, 'P-TEAM'));
    const res = await processAccount('P-TEAM', { operations_team_name: 'Nobody' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'operations_team_not_found', errors: [{ code: 'operations_team_not_found', attr: 'operations_team_name' }] });
    expect(await ctx.deps.db.selectFrom('accounts').select('id').where('external_account_number', '=', 'P-TEAM').execute()).toHaveLength(0);
  });

  it('refuses to process once the supplier is Paused, and after it is Ongoing again succeeds', async () => {
    await ctx.createSupplier('FLIP_CO');
    await stage(accountPayload('FLIP_CO', 'P-FLIP'));
    await ctx.deps.db.updateTable('import_suppliers').set({ status: 'PAUSED' }).where('code', '=', 'FLIP_CO').execute();
    const paused = await processAccount('P-FLIP', {}, 'FLIP_CO');
    expect(paused.statusCode).toBe(400);
    expect(paused.json().code).toBe('import_supplier_migration_not_ongoing');
    await ctx.deps.db.updateTable('import_suppliers').set({ status: 'ONGOING' }).where('code', '=', 'FLIP_CO').execute();
    expect((await processAccount('P-FLIP', {}, 'FLIP_CO')).statusCode).toBe(201);
  });

  it('refuses an account marked to skip after staging', async () => {
    await stage(accountPayload(S, 'P-SKIP'));
    const supplier = await findSupplierByCode(ctx.deps.db, S);
    await markToSkip(ctx.deps.db, supplier!.id, 'P-SKIP');
    const res = await processAccount('P-SKIP');
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('account_marked_to_skip');
  });

  it('frees a skipped account’s meter points for another account', async () => {
    const skipped = accountPayload(S, 'P-SKIP-MP');
    expect((await stage(skipped)).statusCode).toBe(201);
    const supplier = await findSupplierByCode(ctx.deps.db, S);
    const other = accountPayload(S, 'P-TAKES-MP', { supply_addresses: skipped.supply_addresses });
    expect((await stage(other)).json().errors[0].code).toBe('meter_point_already_registered');
    await markToSkip(ctx.deps.db, supplier!.id, 'P-SKIP-MP');
    expect((await stage(other)).statusCode).toBe(201);
  });

  it('dry run: answers dry_run_rolled_back and leaves every table exactly as it was', async () => {
    await stage(accountPayload(S, 'P-DRY'));
    const before = await ctx.tableCounts();
    const res = await processAccount('P-DRY', { dry_run: true });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'dry_run_rolled_back', errors: [] });
    expect(res.json().detail).toMatch(/rolled back/i);
    expect(await ctx.tableCounts()).toEqual(before);
    // The dry run really ran the checks: a dry run for a missing team fails as the real call would.
    const badTeam = await processAccount('P-DRY', { dry_run: true, operations_team_name: 'Nobody' });
    expect(badTeam.json().code).toBe('operations_team_not_found');
    // And the account can still be created for real afterwards.
    expect((await processAccount('P-DRY')).statusCode).toBe(201);
  });

  it('two concurrent process calls for one account create exactly one account', async () => {
    await stage(accountPayload(S, 'P-RACE'));
    const results = await Promise.all([processAccount('P-RACE'), processAccount('P-RACE'), processAccount('P-RACE')]);
    const codes = results.map((r) => r.statusCode).sort();
    expect(codes).toEqual([201, 400, 400]);
    const number = results.find((r) => r.statusCode === 201)!.json().service_account_number;
    for (const r of results.filter((x) => x.statusCode === 400)) {
      expect(r.json()).toMatchObject({ code: 'account_import_process_already_imported', service_account_number: number });
    }
    const accounts = await ctx.deps.db.selectFrom('accounts').select('id').where('external_account_number', '=', 'P-RACE').execute();
    expect(accounts).toHaveLength(1);
  });
});

describe('account-transfer-status', () => {
  it('answers UNKNOWN while staged, COMPLETED once created, 404 for unknown pairs', async () => {
    await stage(accountPayload(S, 'STAT-1'));
    const staged = await get(`/v1/data-import/account-transfer-status/${S}/STAT-1/`);
    expect(staged.statusCode).toBe(200);
    expect(staged.json()).toEqual({ status: 'UNKNOWN', service_account_number: '', kraken_account_number: '' });
    const created = (await processAccount('STAT-1')).json().service_account_number;
    expect((await get(`/v1/data-import/account-transfer-status/${S}/STAT-1/`)).json()).toEqual({
      status: 'COMPLETED',
      service_account_number: created,
      kraken_account_number: created,
    });
    for (const url of [`/v1/data-import/account-transfer-status/${S}/NOPE/`, '/v1/data-import/account-transfer-status/NOSUPPLIER/STAT-1/']) {
      const res = await get(url);
      expect(res.statusCode).toBe(404);
      expect(res.json()).toMatchObject({ code: 'account_not_found', errors: [] });
    }
  });
});

describe('lists', () => {
  beforeAll(async () => {
    await ctx.createSupplier('LIST_CO');
    for (const ext of ['L-03', 'L-01', 'L-02', 'L-05', 'L-04']) {
      expect((await stage(accountPayload('LIST_CO', ext))).statusCode).toBe(201);
    }
    expect((await processAccount('L-02', {}, 'LIST_CO')).statusCode).toBe(201);
    expect((await processAccount('L-04', {}, 'LIST_CO')).statusCode).toBe(201);
  });

  it('lists all, pending and imported entries ordered by external account number', async () => {
    const all = (await get('/v1/data-import/all-account-import-processes/LIST_CO/')).json();
    expect(all.map((e: { external_account_number: string }) => e.external_account_number)).toEqual(['L-01', 'L-02', 'L-03', 'L-04', 'L-05']);
    expect(all[0]).toEqual({ external_account_number: 'L-01', service_account_number: null, account_created_at: null, kraken_account_number: null });
    expect(all[1].service_account_number).toMatch(/^A-[0-9A-F]{8}$/);
    expect(all[1].account_created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    expect(all[1].kraken_account_number).toBe(all[1].service_account_number);

    const pending = (await get('/v1/data-import/pending-account-import-processes/LIST_CO/')).json();
    expect(pending).toEqual(
      ['L-01', 'L-03', 'L-05'].map((e) => ({ external_account_number: e, service_account_number: null, account_created_at: null, kraken_account_number: null })),
    );
    const imported = (await get('/v1/data-import/imported-account-import-processes/LIST_CO/')).json();
    expect(imported.map((e: { external_account_number: string }) => e.external_account_number)).toEqual(['L-02', 'L-04']);
    expect(imported.every((e: { service_account_number: string | null }) => typeof e.service_account_number === 'string')).toBe(true);
    expect(imported.every((e: { service_account_number: string; kraken_account_number: string }) => e.kraken_account_number === e.service_account_number)).toBe(true);
  });

  it('answers [] from imported when nothing is imported, and 404 for an unknown supplier', async () => {
    await ctx.createSupplier('EMPTY_CO');
    const res = await get('/v1/data-import/imported-account-import-processes/EMPTY_CO/');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual([]);
    for (const segment of ['all', 'pending', 'imported']) {
      const missing = await get(`/v1/data-import/${segment}-account-import-processes/NOSUCH/`);
      expect(missing.statusCode).toBe(404);
      expect(missing.json()).toMatchObject({ code: 'import_supplier_not_found', errors: [] });
    }
  });

  it('pages with page_size and a Link rel="next" cursor until the end', async () => {
    const seen: string[] = [];
    let url: string | null = '/v1/data-import/all-account-import-processes/LIST_CO/?page_size=2';
    let pages = 0;
    while (url) {
      const res = await get(url);
      expect(res.statusCode).toBe(200);
      const page = res.json() as Array<{ external_account_number: string }>;
      expect(Array.isArray(page)).toBe(true);
      seen.push(...page.map((e) => e.external_account_number));
      const link = res.headers.link as string | undefined;
      url = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1]! : null;
      pages++;
    }
    expect(pages).toBe(3);
    expect(seen).toEqual(['L-01', 'L-02', 'L-03', 'L-04', 'L-05']);
  });

  it('rejects a bad page_size or cursor with the envelope', async () => {
    for (const q of ['page_size=0', 'page_size=1001', 'page_size=abc', 'cursor=%%%']) {
      const res = await get(`/v1/data-import/all-account-import-processes/LIST_CO/?${q}`);
      expect(res.statusCode, q).toBe(400);
      expect(res.json().code).toBe('invalid_request');
    }
  });
});

describe('OpenAPI document', () => {
  it('describes every endpoint with its bodies and error envelope', async () => {
    const res = await ctx.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toBe('3.1.0');
    for (const r of ctx.built.routes) {
      const path = r.url.replace(/:([A-Za-z_]+)/g, '{$1}');
      expect(doc.paths[path]?.[r.method.toLowerCase()], path).toBeDefined();
    }
    const process = doc.paths['/v1/data-import/account-import-process/process/'].post;
    expect(process.responses['429']).toBeDefined();
    expect(process.responses['400'].content['application/json'].schema.$ref).toBe('#/components/schemas/ErrorEnvelope');
    expect(doc.components.schemas.ProcessRequest.required).toEqual(
      expect.arrayContaining(['external_account_number', 'import_supplier_code', 'operations_team_name']),
    );
    // The published names beside ours, described as responses (issue 15, part 7).
    expect(doc.components.schemas.ProcessedAccount.required).toEqual(['service_account_number', 'kraken_account_number']);
    expect(doc.components.schemas.AccountTransferStatus.required).toEqual(['status', 'service_account_number', 'kraken_account_number']);
    expect(doc.components.schemas.AccountImportProcess.properties.kraken_account_number.type).toEqual(['string', 'null']);
    expect(doc.components.schemas.AccountImportProcess.required).toContain('kraken_account_number');
    expect(doc.components.schemas.StagedAccount.required).toEqual(['import_supplier', 'external_account_number', 'import_supplier_code']);
    expect(doc.components.schemas.PaymentInstructionCreated.required).toEqual(['service_account_number', 'reference', 'kraken_account_number']);
  });
});

// Keeps the fixture generator honest: a fresh MPAN each call.
it('fixtures produce distinct valid MPANs', () => {
  expect(validMpan()).not.toBe(validMpan());
});
