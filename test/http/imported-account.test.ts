import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { accountPayload, validMpan, validMprn } from '../helpers/fixtures.js';
import { published } from '../contract/harness.js';
import { startImportctl } from '../cli/run-cli.js';

let ctx: TestContext;
let auth: { authorization: string };
// The published example's own supplier code: this deployment has a supplier of that name.
const S = 'TENTACLE_ENERGY';
const TEAM = 'Migrations Team';

beforeAll(async () => {
  ctx = await createTestContext();
  await ctx.createSupplier(S);
  await ctx.createSupplier('OTHER_CO');
  await ctx.createTeam(TEAM);
  auth = await ctx.authHeaders();
});
afterAll(async () => ctx?.close());

const post = async (url: string, payload: unknown) => ctx.app.inject({ method: 'POST', url, payload: payload as object, headers: auth });
const get = async (url: string, headers: Record<string, string> = auth) => ctx.app.inject({ method: 'GET', url, headers });
const readBack = (supplier: string, ext: string, headers?: Record<string, string>) =>
  get(`/v1/data-import/imported-accounts/${supplier}/${encodeURIComponent(ext)}/`, headers);

/** validate → stage → process, as a supplier would; returns what validate answered (the normalised data). */
async function importAccount(payload: Record<string, unknown>): Promise<{ validated: Record<string, unknown>; number: string }> {
  const validated = await post('/v1/data-import/validate-account/', payload);
  expect(validated.statusCode, validated.body).toBe(200);
  const staged = await post('/v1/data-import/account-import-process/create-or-update/', payload);
  expect(staged.statusCode, staged.body).toBe(201);
  const processed = await post('/v1/data-import/account-import-process/process/', {
    import_supplier_code: payload.import_supplier,
    external_account_number: payload.external_account_number,
    operations_team_name: TEAM,
  });
  expect(processed.statusCode, processed.body).toBe(201);
  return { validated: validated.json(), number: processed.json().service_account_number };
}

/** Every leaf of `part` (the relational read-back) equals the same path of `whole` (what was sent, normalised). */
function leavesAgree(part: unknown, whole: unknown, path = ''): string[] {
  if (part !== null && typeof part === 'object') {
    return Object.entries(part as Record<string, unknown>).flatMap(([k, v]) =>
      leavesAgree(v, (whole as Record<string, unknown> | undefined)?.[k], path ? `${path}.${k}` : k),
    );
  }
  return part === whole ? [] : [`${path}: read back ${JSON.stringify(part)}, sent ${JSON.stringify(whole)}`];
}

describe('the published example account, imported and read back', () => {
  const example = published('account');
  let validated: Record<string, unknown>;
  let body: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- asserted field by field below

  beforeAll(async () => {
    // The documents its note and statements name, under the supplier's documents root ('/' is the root).
    await ctx.deps.documents.put('notes/1234/attachment.jpg', 'a photo');
    await ctx.deps.documents.put('EXTERNAL-1234/2019-06-01-to-2019-07-01.pdf', '%PDF-1.4 June');
    await ctx.deps.documents.put('EXTERNAL-1234/2019-07-01-to-2019-08-01.pdf', '%PDF-1.4 July');
    ({ validated } = await importAccount(example));
    const res = await readBack(S, example.external_account_number);
    expect(res.statusCode, res.body).toBe(200);
    body = res.json();
  });

  it('keeps the whole validated payload with the account', () => {
    expect(body.payload).toEqual(validated);
  });

  it("imports the account's own note, statements and ledger transactions with it (decisions §1)", async () => {
    expect(body.counts).toEqual({ notes: 1, transactions: 4, statements: 2, payment_instructions: 0 });
    const id = (await ctx.deps.db.selectFrom('accounts').select('id').where('number', '=', body.service_account_number).executeTakeFirstOrThrow()).id;
    const txs = await ctx.deps.db
      .selectFrom('account_transactions')
      .select(['transaction_id', 'type', 'reason', 'payment_type', 'transaction_date', 'original_transaction_date'])
      .where('account_id', '=', id)
      .orderBy('transaction_id')
      .execute();
    // Historical and current transactions keep their own dates: none is moved into the open period.
    expect(txs).toEqual([
      { transaction_id: '1', type: 'REPAYMENT', reason: 'FULL_CREDIT_REFUND', payment_type: '', transaction_date: '2019-08-04', original_transaction_date: null },
      { transaction_id: '2', type: 'PAYMENT', reason: 'ACCOUNT_CHARGE_PAYMENT', payment_type: null, transaction_date: '2019-08-05', original_transaction_date: null },
      { transaction_id: '3', type: 'PAYMENT', reason: 'ACCOUNT_CHARGE_PAYMENT', payment_type: null, transaction_date: '2018-08-05', original_transaction_date: null },
      { transaction_id: '4', type: 'CREDIT', reason: 'DIRECT_DEBIT_DISCOUNT', payment_type: null, transaction_date: '2018-07-05', original_transaction_date: null },
    ]);
    const statements = await ctx.deps.db.selectFrom('historical_statements').select(['statement_id', 'bill_period_from_date', 'bill_period_to_date']).where('account_id', '=', id).orderBy('bill_period_from_date').execute();
    // The two periods touch (one ends the day the next begins): not an overlap (decisions §1).
    expect(statements).toEqual([
      { statement_id: '54321', bill_period_from_date: '2019-06-01', bill_period_to_date: '2019-07-01' },
      { statement_id: '12345', bill_period_from_date: '2019-07-01', bill_period_to_date: '2019-08-01' },
    ]);
  });

  it('stores the account fields, by their request names', () => {
    expect(body).toMatchObject({ import_supplier: S, external_account_number: 'EXTERNAL-1234', service_account_number: expect.stringMatching(/^A-[0-9A-F]{8}$/) });
    expect(body.account).toEqual({
      account_type: 'DOMESTIC',
      billing_name: 'Robert Jabłoński',
      billing_address1: '123 Fake Street',
      billing_address2: '',
      billing_address3: '',
      billing_address4: '',
      billing_address5: '',
      billing_postcode: 'W1F 9DE',
      communication_preference: 'ONLINE',
      transfer_balance: '30',
      sales_channel: 'DIRECT',
      sales_subchannel: '',
      unknown_occupier: false,
      document_accessibility: 'LARGE_PRINT',
      last_billed_to_date: '2019-08-01',
      last_payment_review_date: '2019-06-01',
      next_bill_due_date: '2019-09-20',
      smart_read_frequency: 'HALF_HOURLY',
      smart_read_cycle_day: 10,
    });
    expect(body.metadata).toEqual([{ key: 'metadata_key', value: { some_data: 'some_value' } }]);
  });

  it('stores the customer with preferences and PSR entries', () => {
    expect(body.customers).toEqual([
      {
        given_name: 'Bob',
        family_name: 'Jabłoński',
        email: 'bob@jablonski.com',
        mobile: '+447123456789',
        landline: '+442072343456',
        date_of_birth: '1989-01-11',
        title: 'Mr',
        salutation: 'Hi',
        customer_preferences: {
          opted_into_sms: true,
          opted_into_recommended: true,
          opted_into_updates: true,
          opted_into_third_parties: true,
          opted_into_offers: true,
          is_user_psr_consent_obtained: true,
        },
        psr: [
          { elec_industry_code: '01', effective_from: '2012-01-01T00:00:00Z' },
          { gas_industry_code: '01', effective_from: '2012-01-01T00:00:00Z' },
        ],
      },
    ]);
  });

  it('stores the electricity meter point with its meter, registers, transfer reading, reading history and agreement', () => {
    const [address] = body.supply_addresses;
    expect(address).toMatchObject({ supply_address1: '123 Fake Street', supply_postcode: 'W1F 9DE', is_landlord: false, customer_at_supply_address_from_date: '2019-01-01' });
    expect(address.meter_points[0]).toEqual({
      identifier: '1200060176720',
      supply_type: 'ELECTRICITY',
      mpid: 'TENT',
      supply_start_date: '2019-01-01',
      profile_class: 1,
      ssc: '0393',
      et_in_progress: false,
      dr_in_progress: false,
      // Not sent: where its registration stands (decisions.md §8), before any attempt.
      registration: { status: 'PRE_REGISTRATION', history: [] },
      agreements: [{ tariff_code: 'ELEC-1234-J', effective_from: '2019-08-01' }],
      meters: [
        {
          meter_serial_number: 'Z16N389556',
          installed_on: '2001-01-01',
          registers: [
            { register_id: '1', tpr: '00001', number_of_digits: 5 },
            { register_id: 'X', tpr: '00043', number_of_digits: 5, is_settlement: false },
          ],
          transfer_readings: [{ register_id: '1', reading_date: '2019-08-01', reading_value: '1000', reading_type: 'CUSTOMER' }],
          reading_history: [
            { register_id: '1', reading_date: '2019-06-20', reading_value: '980', reading_type: 'CUSTOMER', billed: true },
            { register_id: '1', reading_date: '2019-05-20', reading_value: '960', reading_type: 'ROUTINE', billed: true },
          ],
        },
      ],
    });
  });

  it('stores the gas meter point with its shipper and prepay meter', () => {
    expect(body.supply_addresses[0].meter_points[1]).toEqual({
      identifier: '9353824109',
      supply_type: 'GAS',
      mpid: 'TEN',
      shipper_mpid: 'TCL',
      supply_start_date: '2019-04-10',
      et_in_progress: false,
      dr_in_progress: false,
      registration: { status: 'PRE_REGISTRATION', history: [] },
      agreements: [{ tariff_code: 'GAS-1234-J', effective_from: '2019-08-01' }],
      meters: [
        {
          meter_serial_number: '54BV',
          installed_on: '2002-01-01',
          gas_number_of_digits: 5,
          smart_type: 'SMETS1',
          is_prepay: true,
          transfer_readings: [{ reading_date: '2019-08-01', reading_value: '500', reading_type: 'CUSTOMER' }],
        },
      ],
    });
  });

  it('importctl account show prints the same JSON', async () => {
    const run = await (await startImportctl(['account', 'show', S, 'EXTERNAL-1234'], { DATABASE_URL: ctx.config.databaseUrl }, 30_000)).done;
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(run.stdout)).toEqual(body);
  });

  it('reads back nothing that differs from what was sent', () => {
    // Each meter point's registration is the service's own state (decisions.md §8), never sent: left out here.
    const supplyAddresses = body.supply_addresses.map((a: { meter_points: Array<Record<string, unknown>> }) => ({ ...a, meter_points: a.meter_points.map(({ registration: _, ...mp }) => mp) }));
    const relational = { ...body.account, customers: body.customers, supply_addresses: supplyAddresses, metadata: body.metadata };
    // account_billing_options is absent here; everything else sits at the same path as in the payload.
    expect(leavesAgree(relational, validated)).toEqual([]);
  });
});

describe('a gas-and-electricity account with several registers', () => {
  it('reads back every register, reading and agreement, in the order sent', async () => {
    const mpan = validMpan();
    const mprn = validMprn();
    const payload = accountPayload(S, 'MULTI-1', {
      account_type: 'BUSINESS',
      account_billing_options: { period_length: 'QUARTERLY', period_start_day: 5 },
      next_bill_due_date: '2025-12-01',
      supply_addresses: [
        {
          supply_address1: '1 Economy Road',
          supply_postcode: 'M1 1AE',
          customer_at_supply_address_from_date: '2023-01-01',
          meter_points: [
            {
              supply_type: 'ELECTRICITY',
              identifier: mpan,
              mpid: 'TENT',
              supply_start_date: '2023-01-01',
              profile_class: 2,
              ssc: '0151',
              eac_history: [
                { effective_from: '2023-01-01', tpr: '00043', consumption: '2100', source: 'D0019' },
                { effective_from: '2023-01-01', tpr: '00210', consumption: '1900', source: 'D0019' },
              ],
              meters: [
                {
                  meter_serial_number: 'E7DAYNIGHT1',
                  registers: [
                    { register_id: 'DAY', tpr: '00043', number_of_digits: 6 },
                    { register_id: 'NIGHT', tpr: '00210', number_of_digits: 6 },
                    { register_id: 'HEAT', tpr: '00001', number_of_digits: 5, is_settlement: false },
                  ],
                  transfer_readings: [
                    { register_id: 'DAY', reading_date: '2023-01-01', reading_value: '12345.6', reading_type: 'CUSTOMER' },
                    { register_id: 'NIGHT', reading_date: '2023-01-01', reading_value: '4321', reading_type: 'CUSTOMER' },
                  ],
                },
              ],
              agreements: [
                { tariff_code: 'E-2R-FIX-12M-23-01-01', effective_from: '2023-01-01', effective_to: '2024-01-01' },
                { tariff_code: 'E-2R-VAR-22-11-01', effective_from: '2024-01-01' },
              ],
            },
            {
              supply_type: 'GAS',
              identifier: mprn,
              mpid: 'TEN',
              shipper_mpid: 'TCL',
              supply_start_date: '2023-01-01',
              aq_history: [{ effective_from: '2023-01-01', consumption: '11000' }],
              agreements: [{ tariff_code: 'G-1R-VAR-22-11-01', effective_from: '2023-01-01' }],
              meters: [{ meter_serial_number: 'G4GASMETER', gas_number_of_digits: 5, transfer_readings: [{ reading_date: '2023-01-01', reading_value: '888', reading_type: 'CUSTOMER' }] }],
            },
          ],
        },
      ],
    });
    const { validated } = await importAccount(payload);
    const res = await readBack(S, 'MULTI-1');
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.account).toMatchObject({ account_type: 'BUSINESS', account_billing_options: { period_length: 'QUARTERLY', period_start_day: 5 } });
    const [elec, gas] = body.supply_addresses[0].meter_points;
    expect(elec.meters[0].registers.map((r: { register_id: string }) => r.register_id)).toEqual(['DAY', 'NIGHT', 'HEAT']);
    expect(elec.meters[0].transfer_readings).toEqual([
      { register_id: 'DAY', reading_date: '2023-01-01', reading_value: '12345.6', reading_type: 'CUSTOMER' },
      { register_id: 'NIGHT', reading_date: '2023-01-01', reading_value: '4321', reading_type: 'CUSTOMER' },
    ]);
    expect(elec.agreements).toEqual([
      { tariff_code: 'E-2R-FIX-12M-23-01-01', effective_from: '2023-01-01', effective_to: '2024-01-01' },
      { tariff_code: 'E-2R-VAR-22-11-01', effective_from: '2024-01-01' },
    ]);
    expect(gas).toMatchObject({ identifier: mprn, shipper_mpid: 'TCL', meters: [{ meter_serial_number: 'G4GASMETER', gas_number_of_digits: 5 }] });
    expect(body.payload).toEqual(validated);
    expect(body.counts).toEqual({ notes: 0, transactions: 0, statements: 0, payment_instructions: 0 });
  });
});

describe("the account's own extras are all or nothing with it", () => {
  it('validate and stage refuse what process would refuse for a field, at its place in the account', async () => {
    const example = published('account');
    example.external_account_number = 'EMB-FIELDS';
    // Its own meter points: the example's are the imported EXTERNAL-1234's.
    example.supply_addresses[0].meter_points[0].identifier = validMpan();
    example.supply_addresses[0].meter_points[1].identifier = validMprn();
    example.notes[0].external_id = '';
    example.ledgers[0].current_statement_transactions[0].display_note = 'x'.repeat(5001);
    for (const url of ['/v1/data-import/validate-account/', '/v1/data-import/account-import-process/create-or-update/']) {
      const res = await post(url, example);
      expect(res.statusCode, url).toBe(400);
      expect(res.json().code).toBe('account_failed_validation');
      expect(res.json().errors.map((e: { code: string; attr: string }) => `${e.code}@${e.attr}`).sort()).toEqual(
        ['blank@notes.0.external_id', 'max_length@ledgers.0.current_statement_transactions.0.display_note'].sort(),
      );
    }
  });

  it('a note whose document is not in storage fails the account at its place, and nothing is created', async () => {
    const payload = accountPayload(S, 'EMB-FAIL', {
      notes: [{ body: 'Kept only if the account is' }, { body: 'With a letter', document_paths: [{ document_path: 'missing/letter.pdf' }] }],
    });
    const staged = await post('/v1/data-import/account-import-process/create-or-update/', payload);
    expect(staged.statusCode, staged.body).toBe(201);
    const before = await ctx.tableCounts();
    const res = await post('/v1/data-import/account-import-process/process/', { import_supplier_code: S, external_account_number: 'EMB-FAIL', operations_team_name: TEAM });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'account_failed_validation', errors: [{ code: 'document_not_found', attr: 'notes.1.document_paths.0.document_path' }] });
    expect(await ctx.tableCounts()).toEqual(before);
  });
});

describe('who may read an account back', () => {
  it('answers 404 account_not_found for an account that is only staged, and for an unknown supplier', async () => {
    const staged = await post('/v1/data-import/account-import-process/create-or-update/', accountPayload(S, 'STAGED-ONLY'));
    expect(staged.statusCode).toBe(201);
    for (const [supplier, ext] of [
      [S, 'STAGED-ONLY'],
      [S, 'NEVER-SENT'],
      ['NO_SUCH_SUPPLIER', 'EXTERNAL-1234'],
    ] as const) {
      const res = await readBack(supplier, ext);
      expect(res.statusCode).toBe(404);
      expect(res.json()).toMatchObject({ code: 'account_not_found', errors: [] });
    }
  });

  it('answers 401 without a token', async () => {
    const res = await readBack(S, 'EXTERNAL-1234', {});
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ code: 'not_authenticated' });
  });

  it("answers 404 to a key scoped to another supplier, as if the account did not exist", async () => {
    const scoped = await ctx.authHeaders({ suppliers: ['OTHER_CO'] });
    const res = await readBack(S, 'EXTERNAL-1234', scoped);
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ code: 'account_not_found' });
  });
});
