import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createExtrasHarness, expectEnvelope, expectTransactionError, NOW, pairs, S, URLS, type ExtrasHarness } from './setup.js';

/**
 * Transactions (decisions §3, §6, §7). "Today" is 2026-06-15 (UTC). The fixture account's
 * last_statement_closing_date is 2025-10-31, so its open statement period is 2025-11-01 … today.
 */

let h: ExtrasHarness;

beforeAll(async () => {
  h = await createExtrasHarness();
});
afterAll(async () => h?.close());

type Tx = Record<string, unknown>;
interface Result {
  status: string;
  transaction_data: Record<string, unknown>;
}

const IN_PERIOD = '2026-01-10';
const lineItem = (o: Tx = {}): Tx => ({ start_date: '2025-12-01', end_date: '2025-12-31', number_of_units: '310.5', net_amount: '93.15', ...o });
const taxItem = (o: Tx = {}): Tx => ({ amount: '4.66', tax_type: 'VAT', value_taxed: '93.15', rate: '0.05', unit_type: 'PROPORTION', ...o });

const TX: Record<string, (id: string, o?: Tx) => Tx> = {
  CHARGE: (id, o = {}) => ({ transaction_id: id, transaction_date: IN_PERIOD, amount: '12.34', type: 'CHARGE', reason: 'IMPORTED_CHARGE', ...o }),
  CREDIT: (id, o = {}) => ({ transaction_id: id, transaction_date: IN_PERIOD, amount: '5.00', type: 'CREDIT', reason: 'IMPORTED_CREDIT', ...o }),
  PAYMENT: (id, o = {}) => ({ transaction_id: id, transaction_date: IN_PERIOD, amount: '50', type: 'PAYMENT', ...o }),
  REPAYMENT: (id, o = {}) => ({ transaction_id: id, transaction_date: IN_PERIOD, amount: '20', type: 'REPAYMENT', ...o }),
  SUPPLY_CHARGE: (id, o = {}) => ({
    transaction_id: id,
    transaction_date: IN_PERIOD,
    amount: '97.81',
    type: 'SUPPLY_CHARGE',
    product_code: 'E-1R-VAR-22-11-01-C',
    line_items: [lineItem()],
    ...o,
  }),
};
const charge = TX.CHARGE!;

const without = (o: Tx, key: string): Tx => {
  const copy = { ...o };
  delete copy[key];
  return copy;
};

const postTx = async (ext: string, transactions: unknown[], query?: string) =>
  h.post(URLS.transactions, { import_supplier: S, external_account_number: ext, transactions }, query === undefined ? {} : { query });

function results(res: { statusCode: number; body: string; json(): unknown }): Result[] {
  expect(res.statusCode, res.body).toBe(201);
  const body = res.json() as { results: Result[] };
  expect(Object.keys(body)).toEqual(['results']);
  for (const r of body.results) expect(Object.keys(r).sort()).toEqual(['status', 'transaction_data']);
  return body.results;
}

async function txRows(ext: string) {
  const accountId = await h.accountId(ext);
  return h.rows<{
    transaction_id: string;
    type: string;
    reason: string | null;
    payment_type: string | null;
    amount: string;
    transaction_date: string;
    original_transaction_date: string | null;
    description: string | null;
  }>(
    `SELECT transaction_id, type, reason, payment_type, amount::text AS amount, transaction_date::text AS transaction_date,
            original_transaction_date::text AS original_transaction_date, description
       FROM account_transactions WHERE account_id = $1 ORDER BY id`,
    [accountId],
  );
}

async function movedNotes(ext: string) {
  const accountId = await h.accountId(ext);
  return h.ctx.deps.db
    .selectFrom('account_notes')
    .select(['body', 'is_pinned', 'origin', 'created_at'])
    .where('account_id', '=', accountId)
    .where('origin', '=', 'TRANSACTIONS_MOVED')
    .orderBy('id')
    .execute();
}

describe('transactions: required fields by type', () => {
  beforeAll(async () => {
    await h.importAccount('T-REQ');
  });

  const cases: Array<[string, Tx, string]> = [
    ['CHARGE without reason', without(TX.CHARGE!('R-1'), 'reason'), 'reason'],
    ['CREDIT without reason', without(TX.CREDIT!('R-1'), 'reason'), 'reason'],
    ['SUPPLY_CHARGE without product_code', without(TX.SUPPLY_CHARGE!('R-1'), 'product_code'), 'product_code'],
    ['SUPPLY_CHARGE without line_items', without(TX.SUPPLY_CHARGE!('R-1'), 'line_items'), 'line_items'],
  ];
  for (const type of Object.keys(TX)) {
    for (const field of ['transaction_id', 'transaction_date', 'amount', 'type']) {
      cases.push([`${type} without ${field}`, without(TX[type]!('R-1'), field), field]);
    }
  }
  for (const field of ['start_date', 'end_date', 'number_of_units', 'net_amount']) {
    cases.push([`a line item without ${field}`, TX.SUPPLY_CHARGE!('R-1', { line_items: [without(lineItem(), field)] }), `line_items.0.${field}`]);
  }
  for (const field of ['amount', 'tax_type', 'value_taxed', 'rate', 'unit_type']) {
    cases.push([`a tax item without ${field}`, TX.SUPPLY_CHARGE!('R-1', { tax_items: [without(taxItem(), field)] }), `tax_items.0.${field}`]);
  }

  it.each(cases)('%s: 400 required at transactions.1.<field>, nothing written', async (_what, bad, field) => {
    const res = await postTx('T-REQ', [charge('R-0'), bad]);
    const body = expectTransactionError(res, 'required', `transactions.1.${field}`);
    expect(body.transaction_data).toEqual(bad);
    expect(await txRows('T-REQ')).toEqual([]);
  });

  it('SUPPLY_CHARGE with an empty line_items list: 400 at transactions.0.line_items', async () => {
    const bad = TX.SUPPLY_CHARGE!('R-1', { line_items: [] });
    const res = await postTx('T-REQ', [bad]);
    expectTransactionError(res, 'min_items', 'transactions.0.line_items');
    expect(await txRows('T-REQ')).toEqual([]);
  });

  it('PAYMENT and REPAYMENT need no reason, reference or payment_type; SUPPLY_CHARGE needs no reason or tax_items', async () => {
    await h.importAccount('T-OPT');
    const txs = [TX.PAYMENT!('O-1'), TX.REPAYMENT!('O-2'), TX.SUPPLY_CHARGE!('O-3'), TX.SUPPLY_CHARGE!('O-4', { tax_items: [taxItem()] })];
    const res = await postTx('T-OPT', txs);
    expect(results(res).map((r) => r.status)).toEqual(Array(4).fill('TRANSACTION_ADDED_TO_ACCOUNT'));
    expect((await txRows('T-OPT')).map((r) => [r.transaction_id, r.type, r.reason])).toEqual([
      ['O-1', 'PAYMENT', null],
      ['O-2', 'REPAYMENT', null],
      ['O-3', 'SUPPLY_CHARGE', null],
      ['O-4', 'SUPPLY_CHARGE', null],
    ]);
  });
});

describe('transactions: enumerations (decisions §6)', () => {
  const REASONS: Record<string, string[]> = {
    CHARGE: ['IMPORTED_CHARGE', 'BALANCE_TRANSFER', 'DATA_IMPORT_BALANCE_TRANSFER', 'DEPOSIT', 'LATE_PAYMENT_FEE_CHARGE', 'REVERSED_ACCOUNT_CREDIT', 'DEFAULT'],
    CREDIT: [
      'IMPORTED_CREDIT',
      'BALANCE_ADJUSTMENT',
      'BALANCE_TRANSFER',
      'DATA_IMPORT_BALANCE_TRANSFER',
      'CUSTOMER_SERVICE_GESTURE',
      'GOODWILL_PAYMENT',
      'JOINING_REWARD',
      'LOYALTY_REWARD',
      'REVERSED_ACCOUNT_CHARGE',
      'GENERAL_CREDIT',
    ],
    PAYMENT: [
      'ACCOUNT_CHARGE_PAYMENT',
      'BALANCE_ADJUSTMENT',
      'GENERAL_CREDIT',
      'DEBT_REPAYMENT',
      'DEPOSIT',
      'SETTLEMENT',
      'PAYMENT_PLAN',
      'REGULAR_SCHEDULE',
      'REPAYMENT_CORRECTION',
    ],
    REPAYMENT: [
      'FULL_CREDIT_REFUND',
      'PARTIAL_CREDIT_REFUND',
      'FINAL_BALANCE_SETTLEMENT',
      'MISTAKEN_PAYMENT_TAKEN',
      'PAYMENT_CORRECTION',
      'COMPLAINT_COMPENSATION',
      'FAILED_PAYMENT',
      'DEPOSIT_RETURN',
      'CHARGEBACK',
    ],
  };
  /** A value valid for another type (or for none), so the set is per type, not global. */
  const WRONG_REASON: Record<string, string> = {
    CHARGE: 'IMPORTED_CREDIT',
    CREDIT: 'IMPORTED_CHARGE',
    PAYMENT: 'FULL_CREDIT_REFUND',
    REPAYMENT: 'ACCOUNT_CHARGE_PAYMENT',
  };
  const PAYMENT_TYPES: Record<string, string[]> = {
    PAYMENT: [
      'DD_FIRST_COLLECTION',
      'DD_REGULAR_COLLECTION',
      'DD_RE_PRESENTATION',
      'DD_FINAL_COLLECTION',
      'CREDIT_CARD',
      'DEBIT_CARD',
      'CHEQUE',
      'BACS_DEPOSIT',
      'PAYPOINT_CASH',
      'PAYPOINT_CARD',
      'POST_OFFICE_CASH',
      'CASH',
      'DIRECT_CREDIT',
    ],
    REPAYMENT: ['DIRECT_CREDIT', 'CARD_REFUND', 'BACS', 'CHEQUE'],
  };
  const WRONG_PAYMENT_TYPE: Record<string, string> = { PAYMENT: 'CARD_REFUND', REPAYMENT: 'DEBIT_CARD' };

  let n = 0;
  const nextId = () => `EN-${++n}`;

  beforeAll(async () => {
    await h.importAccount('T-ENUM');
  });

  it('accepts every transaction type', async () => {
    const txs = Object.keys(TX).map((type) => TX[type]!(nextId()));
    const rs = results(await postTx('T-ENUM', txs));
    expect(rs.map((r) => [r.status, r.transaction_data.type])).toEqual(Object.keys(TX).map((t) => ['TRANSACTION_ADDED_TO_ACCOUNT', t]));
  });

  it.each([['REFUND'], ['charge'], ['']])('refuses type %j with invalid_choice at transactions.0.type', async (type) => {
    const res = await postTx('T-ENUM', [charge(nextId(), { type })]);
    expectTransactionError(res, 'invalid_choice', 'transactions.0.type');
  });

  it.each(Object.keys(REASONS))('accepts every %s reason and stores it', async (type) => {
    const txs = REASONS[type]!.map((reason) => TX[type]!(nextId(), { reason }));
    const rs = results(await postTx('T-ENUM', txs));
    expect(rs.map((r) => r.status)).toEqual(txs.map(() => 'TRANSACTION_ADDED_TO_ACCOUNT'));
    const stored = new Map((await txRows('T-ENUM')).map((r) => [r.transaction_id, r.reason]));
    expect(txs.map((t) => stored.get(t.transaction_id as string))).toEqual(REASONS[type]);
  });

  it.each(Object.keys(REASONS).flatMap((type) => [[type, WRONG_REASON[type]!], [type, 'NOT_A_REASON']]))(
    'refuses a %s with reason %s: invalid_choice at transactions.1.reason',
    async (type, reason) => {
      const before = (await txRows('T-ENUM')).length;
      const res = await postTx('T-ENUM', [charge(nextId()), TX[type]!(nextId(), { reason })]);
      expectTransactionError(res, 'invalid_choice', 'transactions.1.reason');
      expect((await txRows('T-ENUM')).length).toBe(before);
    },
  );

  it.each(Object.keys(PAYMENT_TYPES))('accepts every %s payment_type and stores it', async (type) => {
    const txs = PAYMENT_TYPES[type]!.map((payment_type) => TX[type]!(nextId(), { payment_type, reference: `REF-${payment_type}` }));
    const rs = results(await postTx('T-ENUM', txs));
    expect(rs.map((r) => r.status)).toEqual(txs.map(() => 'TRANSACTION_ADDED_TO_ACCOUNT'));
    const stored = new Map((await txRows('T-ENUM')).map((r) => [r.transaction_id, r.payment_type]));
    expect(txs.map((t) => stored.get(t.transaction_id as string))).toEqual(PAYMENT_TYPES[type]);
  });

  it.each(Object.keys(PAYMENT_TYPES).flatMap((type) => [[type, WRONG_PAYMENT_TYPE[type]!], [type, 'BITCOIN']]))(
    'refuses a %s with payment_type %s: invalid_choice at transactions.0.payment_type',
    async (type, payment_type) => {
      const res = await postTx('T-ENUM', [TX[type]!(nextId(), { payment_type })]);
      expectTransactionError(res, 'invalid_choice', 'transactions.0.payment_type');
    },
  );

  const itemEnums: Array<[string, 'line_items' | 'tax_items', string[], string]> = [
    ['rate_band', 'line_items', ['CONSUMPTION_STANDARD', 'CONSUMPTION_DAY', 'CONSUMPTION_NIGHT', 'STANDING_CHARGE'], 'CONSUMPTION_PEAK'],
    ['tax_type', 'tax_items', ['VAT', 'CCL'], 'GST'],
    ['unit_type', 'tax_items', ['PROPORTION', 'CURRENCY_PER_KWH'], 'PERCENT'],
  ];

  it.each(itemEnums)('accepts every %s and stores it', async (field, list, valid) => {
    const make = list === 'line_items' ? lineItem : taxItem;
    const tx = TX.SUPPLY_CHARGE!(nextId(), { [list]: valid.map((v) => make({ [field]: v })) });
    expect(results(await postTx('T-ENUM', [tx])).map((r) => r.status)).toEqual(['TRANSACTION_ADDED_TO_ACCOUNT']);
    const table = list === 'line_items' ? 'transaction_line_items' : 'transaction_tax_items';
    const stored = await h.rows<{ v: string }>(
      `SELECT i.${field} AS v FROM ${table} i JOIN account_transactions t ON t.id = i.transaction_row_id
        WHERE t.transaction_id = $1 ORDER BY i.position`,
      [tx.transaction_id],
    );
    expect(stored.map((r) => r.v)).toEqual(valid);
  });

  it.each(itemEnums)('refuses an unknown %s with invalid_choice at its path', async (field, list, valid, invalid) => {
    const make = list === 'line_items' ? lineItem : taxItem;
    const tx = TX.SUPPLY_CHARGE!(nextId(), { [list]: [make({ [field]: valid[0] }), make({ [field]: invalid })] });
    const res = await postTx('T-ENUM', [tx]);
    expectTransactionError(res, 'invalid_choice', `transactions.0.${list}.1.${field}`);
  });
});

describe('transactions: the first failing transaction', () => {
  beforeAll(async () => {
    await h.importAccount('T-FIRST');
  });

  it('describes the first failing transaction in input order when several fail', async () => {
    const txs = [
      charge('F-1'),
      charge('F-2', { reason: 'NOT_A_REASON' }),
      charge('F-3', { type: 'NOPE' }),
      without(charge('F-4'), 'amount'),
    ];
    const body = expectTransactionError(await postTx('T-FIRST', txs), 'invalid_choice', 'transactions.1.reason');
    expect(body.transaction_data).toEqual(txs[1]);
  });

  it('a rule checked against the account (date in the future) before a field error later in the request', async () => {
    const txs = [charge('F-5'), charge('F-6'), charge('F-7', { transaction_date: '2026-06-16' }), without(charge('F-8'), 'reason')];
    const body = expectTransactionError(await postTx('T-FIRST', txs), 'date_in_future', 'transactions.2.transaction_date');
    expect(body.transaction_data).toMatchObject({ transaction_id: 'F-7', transaction_date: '2026-06-16' });
  });

  it('a field error before a rule checked against the account later in the request', async () => {
    const txs = [charge('F-9'), without(charge('F-10'), 'reason'), charge('F-11', { transaction_date: '2026-06-16' })];
    const body = expectTransactionError(await postTx('T-FIRST', txs), 'required', 'transactions.1.reason');
    expect(body.transaction_data).toEqual(txs[1]);
  });

  it('a transaction outside the open period (force off) before a later duplicate id', async () => {
    const txs = [charge('F-12'), charge('F-13', { transaction_date: '2025-10-31' }), charge('F-12')];
    const body = expectTransactionError(
      await postTx('T-FIRST', txs, 'force_add_to_current_statement=false'),
      'transaction_outside_open_statement_period',
      'transactions.1.transaction_date',
    );
    expect(body.transaction_data).toMatchObject({ transaction_id: 'F-13' });
  });

  it('wrote nothing for any of these requests', async () => {
    expect(await txRows('T-FIRST')).toEqual([]);
  });
});

describe('transactions: the open statement period', () => {
  const description = (d: string) => `Originally dated ${d}; moved into the current statement period on import`;

  beforeAll(async () => {
    await h.importAccount('T-PERIOD', { last_statement_closing_date: '2026-03-31' });
    await h.importAccount('T-STRICT', { last_statement_closing_date: '2026-03-31' });
    await h.importAccount('T-FUTURE');
  });

  it('moves transactions before the period to its first day, keeps the original date, and pins ONE note per request', async () => {
    const txs = [
      charge('P-1', { transaction_date: '2026-02-10' }),
      TX.PAYMENT!('P-2', { transaction_date: '2026-03-31' }),
      charge('P-3', { transaction_date: '2026-04-01' }),
      TX.CREDIT!('P-4', { transaction_date: '2026-06-15' }),
      TX.SUPPLY_CHARGE!('P-5', { transaction_date: '2024-12-25' }),
    ];
    const rs = results(await postTx('T-PERIOD', txs));
    expect(rs.map((r) => r.status)).toEqual(Array(5).fill('TRANSACTION_ADDED_TO_ACCOUNT'));
    expect(rs[0]!.transaction_data).toMatchObject({
      transaction_id: 'P-1',
      transaction_date: '2026-04-01',
      original_transaction_date: '2026-02-10',
      description: description('2026-02-10'),
    });
    expect(rs[1]!.transaction_data).toMatchObject({ transaction_id: 'P-2', transaction_date: '2026-04-01', original_transaction_date: '2026-03-31' });
    expect(rs[2]!.transaction_data).toMatchObject({ transaction_id: 'P-3', transaction_date: '2026-04-01' });
    expect(rs[3]!.transaction_data).toMatchObject({ transaction_id: 'P-4', transaction_date: '2026-06-15' });
    expect(rs[4]!.transaction_data).toMatchObject({ transaction_id: 'P-5', transaction_date: '2026-04-01', original_transaction_date: '2024-12-25' });

    expect((await txRows('T-PERIOD')).map((r) => [r.transaction_id, r.transaction_date, r.original_transaction_date, r.description])).toEqual([
      ['P-1', '2026-04-01', '2026-02-10', description('2026-02-10')],
      ['P-2', '2026-04-01', '2026-03-31', description('2026-03-31')],
      ['P-3', '2026-04-01', null, null],
      ['P-4', '2026-06-15', null, null],
      ['P-5', '2026-04-01', '2024-12-25', description('2024-12-25')],
    ]);

    const notes = await movedNotes('T-PERIOD');
    expect(notes).toHaveLength(1);
    expect(notes[0]!.is_pinned).toBe(true);
    for (const id of ['P-1', 'P-2', 'P-5']) expect(notes[0]!.body).toContain(id);
    for (const id of ['P-3', 'P-4']) expect(notes[0]!.body).not.toMatch(new RegExp(`\\b${id}\\b`));
  });

  it('force_add_to_current_statement=true behaves as the default; a request that moves nothing pins nothing', async () => {
    const rs = results(await postTx('T-PERIOD', [charge('P-6', { transaction_date: '2025-12-01' })], 'force_add_to_current_statement=true'));
    expect(rs[0]!.transaction_data).toMatchObject({ transaction_date: '2026-04-01', original_transaction_date: '2025-12-01' });
    expect(await movedNotes('T-PERIOD')).toHaveLength(2);
    results(await postTx('T-PERIOD', [charge('P-7', { transaction_date: '2026-05-01' })]));
    expect(await movedNotes('T-PERIOD')).toHaveLength(2);
  });

  it('with force_add_to_current_statement=false: 400 transaction_outside_open_statement_period, nothing written', async () => {
    const before = await h.ctx.tableCounts();
    const res = await postTx('T-STRICT', [charge('S-1', { transaction_date: '2026-05-01' }), charge('S-2', { transaction_date: '2026-03-31' })], 'force_add_to_current_statement=false');
    const body = expectTransactionError(res, 'transaction_outside_open_statement_period', 'transactions.1.transaction_date');
    expect(body.transaction_data).toMatchObject({ transaction_id: 'S-2', transaction_date: '2026-03-31' });
    expect(await h.ctx.tableCounts()).toEqual(before);

    // Inside the period the flag changes nothing.
    const ok = results(await postTx('T-STRICT', [charge('S-1', { transaction_date: '2026-04-01' }), charge('S-3', { transaction_date: '2026-06-15' })], 'force_add_to_current_statement=false'));
    expect(ok.map((r) => r.transaction_data.transaction_date)).toEqual(['2026-04-01', '2026-06-15']);
    expect((await txRows('T-STRICT')).map((r) => [r.transaction_id, r.transaction_date, r.original_transaction_date])).toEqual([
      ['S-1', '2026-04-01', null],
      ['S-3', '2026-06-15', null],
    ]);
    expect(await movedNotes('T-STRICT')).toEqual([]);
  });

  it.each([[undefined], ['force_add_to_current_statement=true'], ['force_add_to_current_statement=false']])(
    'a date in the future is always date_in_future (query %s)',
    async (query) => {
      const before = await h.ctx.tableCounts();
      const res = await postTx('T-FUTURE', [charge('FU-0'), charge('FU-1', { transaction_date: '2026-06-16' })], query);
      expectTransactionError(res, 'date_in_future', 'transactions.1.transaction_date');
      expect(await h.ctx.tableCounts()).toEqual(before);
    },
  );

  it('judges "today" by the UTC calendar date of the clock', async () => {
    try {
      await h.setClock(new Date('2026-06-15T23:59:59Z'));
      expectTransactionError(await postTx('T-FUTURE', [charge('FU-2', { transaction_date: '2026-06-16' })]), 'date_in_future', 'transactions.0.transaction_date');
      await h.setClock(new Date('2026-06-16T00:00:00Z'));
      const rs = results(await postTx('T-FUTURE', [charge('FU-2', { transaction_date: '2026-06-16' })]));
      expect(rs[0]!.transaction_data).toMatchObject({ transaction_date: '2026-06-16' });
    } finally {
      await h.setClock(NOW);
    }
    expect((await txRows('T-FUTURE')).map((r) => [r.transaction_id, r.transaction_date])).toEqual([['FU-2', '2026-06-16']]);
  });

  it('without a last statement closing date the period starts on the account creation date', async () => {
    try {
      await h.setClock(new Date('2026-05-20T08:00:00Z'));
      await h.importAccount('T-NOCLOSE', { last_statement_closing_date: undefined });
    } finally {
      await h.setClock(NOW);
    }
    const strict = await postTx('T-NOCLOSE', [charge('NC-1', { transaction_date: '2026-05-19' })], 'force_add_to_current_statement=false');
    expectTransactionError(strict, 'transaction_outside_open_statement_period', 'transactions.0.transaction_date');
    const rs = results(await postTx('T-NOCLOSE', [charge('NC-1', { transaction_date: '2026-05-19' }), charge('NC-2', { transaction_date: '2026-05-20' })]));
    expect(rs.map((r) => r.transaction_data.transaction_date)).toEqual(['2026-05-20', '2026-05-20']);
    expect((await txRows('T-NOCLOSE')).map((r) => [r.transaction_id, r.transaction_date, r.original_transaction_date])).toEqual([
      ['NC-1', '2026-05-20', '2026-05-19'],
      ['NC-2', '2026-05-20', null],
    ]);
  });

  it('imported historical statements move the period start to the day after the latest bill_period_to_date', async () => {
    await h.importAccount('T-HIST');
    const st = await h.post(URLS.statements, {
      import_supplier: S,
      external_account_number: 'T-HIST',
      statements: [
        { statement_id: 'H-OLD', bill_period_from_date: '2024-01-01', bill_period_to_date: '2024-01-31', issued_date: '2024-02-02', number: '1', gross_amount: '1' },
        { statement_id: 'H-NEW', bill_period_from_date: '2025-11-01', bill_period_to_date: '2026-01-31', issued_date: '2026-02-03', number: '2', gross_amount: '2' },
      ],
    });
    expect(st.statusCode, st.body).toBe(201);
    // Before the statements the period started 2025-11-01; now it starts 2026-02-01.
    expectTransactionError(
      await postTx('T-HIST', [charge('H-1', { transaction_date: '2026-01-31' })], 'force_add_to_current_statement=false'),
      'transaction_outside_open_statement_period',
      'transactions.0.transaction_date',
    );
    const ok = results(await postTx('T-HIST', [charge('H-2', { transaction_date: '2026-02-01' })], 'force_add_to_current_statement=false'));
    expect(ok[0]!.transaction_data).toMatchObject({ transaction_date: '2026-02-01' });
    const moved = results(await postTx('T-HIST', [charge('H-3', { transaction_date: '2026-01-15' })]));
    expect(moved[0]!.transaction_data).toMatchObject({ transaction_date: '2026-02-01', original_transaction_date: '2026-01-15' });
  });

  it('a historical statement older than the last closing date does not move the period start back', async () => {
    await h.importAccount('T-HIST-OLD');
    const st = await h.post(URLS.statements, {
      import_supplier: S,
      external_account_number: 'T-HIST-OLD',
      statements: [{ statement_id: 'HO-1', bill_period_from_date: '2025-01-01', bill_period_to_date: '2025-01-31', issued_date: '2025-02-02', number: '1', gross_amount: '1' }],
    });
    expect(st.statusCode, st.body).toBe(201);
    expectTransactionError(
      await postTx('T-HIST-OLD', [charge('HO-1', { transaction_date: '2025-10-31' })], 'force_add_to_current_statement=false'),
      'transaction_outside_open_statement_period',
      'transactions.0.transaction_date',
    );
    results(await postTx('T-HIST-OLD', [charge('HO-2', { transaction_date: '2025-11-01' })], 'force_add_to_current_statement=false'));
  });
});

describe('transactions: check_previously_added', () => {
  beforeAll(async () => {
    await h.importAccount('T-CHECK');
    await h.importAccount('T-NOCHECK');
    await h.importAccount('T-DUPIDS');
  });

  it('default (true): a transaction_id already on the account is TRANSACTION_ALREADY_EXISTS and not written again', async () => {
    expect(results(await postTx('T-CHECK', [charge('C-1'), charge('C-2')])).map((r) => r.status)).toEqual([
      'TRANSACTION_ADDED_TO_ACCOUNT',
      'TRANSACTION_ADDED_TO_ACCOUNT',
    ]);
    const rs = results(await postTx('T-CHECK', [charge('C-3'), charge('C-1'), charge('C-2', { amount: '999' })]));
    expect(rs.map((r) => [r.status, r.transaction_data.transaction_id])).toEqual([
      ['TRANSACTION_ADDED_TO_ACCOUNT', 'C-3'],
      ['TRANSACTION_ALREADY_EXISTS', 'C-1'],
      ['TRANSACTION_ALREADY_EXISTS', 'C-2'],
    ]);
    const again = results(await postTx('T-CHECK', [charge('C-1'), charge('C-3')], 'check_previously_added=true'));
    expect(again.map((r) => r.status)).toEqual(['TRANSACTION_ALREADY_EXISTS', 'TRANSACTION_ALREADY_EXISTS']);
    expect((await txRows('T-CHECK')).map((r) => [r.transaction_id, r.amount])).toEqual([
      ['C-1', '12.34'],
      ['C-2', '12.34'],
      ['C-3', '12.34'],
    ]);
  });

  it('false: a repeated transaction_id is 400 duplicate_transaction_id and nothing of that request is written', async () => {
    results(await postTx('T-NOCHECK', [charge('X-1')], 'check_previously_added=false'));
    const before = await h.ctx.tableCounts();
    const res = await postTx('T-NOCHECK', [charge('X-2'), charge('X-1')], 'check_previously_added=false');
    const body = expectTransactionError(res, 'duplicate_transaction_id', 'transactions.1.transaction_id');
    expect(body.transaction_data).toMatchObject({ transaction_id: 'X-1' });
    expect(await h.ctx.tableCounts()).toEqual(before);
    expect((await txRows('T-NOCHECK')).map((r) => r.transaction_id)).toEqual(['X-1']);
    // New ids are added as usual.
    expect(results(await postTx('T-NOCHECK', [charge('X-2')], 'check_previously_added=false')).map((r) => r.status)).toEqual(['TRANSACTION_ADDED_TO_ACCOUNT']);
  });

  // decisions §3: "the 400 describes the first failing one"; with check_previously_added=false a
  // repeated transaction_id is an error. Transaction 0 (a repeat) fails before transaction 2 (no reason).
  it('false: a repeat is the first failure even when a later transaction has a field error', async () => {
    const res = await postTx('T-NOCHECK', [charge('X-1'), charge('X-3'), without(charge('X-4'), 'reason')], 'check_previously_added=false');
    expectTransactionError(res, 'duplicate_transaction_id', 'transactions.0.transaction_id');
  });

  it.each([[undefined], ['check_previously_added=false']])('repeated ids inside one request: duplicate_transaction_ids (query %s)', async (query) => {
    const before = await h.ctx.tableCounts();
    const res = await postTx('T-DUPIDS', [charge('D-1'), charge('D-2'), charge('D-1', { amount: '1' })], query);
    const body = expectTransactionError(res, 'duplicate_transaction_ids', 'transactions.2.transaction_id');
    expect(body.transaction_data).toMatchObject({ transaction_id: 'D-1' });
    expect(await h.ctx.tableCounts()).toEqual(before);
  });

  it('repeated ids inside one request are refused even when the id is already on the account', async () => {
    results(await postTx('T-DUPIDS', [charge('D-9')]));
    const res = await postTx('T-DUPIDS', [charge('D-9'), charge('D-9')]);
    expectTransactionError(res, 'duplicate_transaction_ids', 'transactions.1.transaction_id');
    expect((await txRows('T-DUPIDS')).map((r) => r.transaction_id)).toEqual(['D-9']);
  });

  it.each([
    ['check_previously_added=maybe', 'check_previously_added'],
    ['force_add_to_current_statement=sometimes', 'force_add_to_current_statement'],
  ])('a bad query parameter (%s) is the invalid_request envelope', async (query, attr) => {
    const before = await h.ctx.tableCounts();
    const res = await postTx('T-CHECK', [charge('Q-1')], query);
    const errors = expectEnvelope(res, 400, 'invalid_request');
    expect(errors.map((e) => e.attr)).toEqual([attr]);
    expect(await h.ctx.tableCounts()).toEqual(before);
  });
});

describe('transactions: all or nothing', () => {
  beforeAll(async () => {
    await h.importAccount('T-ATOMIC');
  });

  it('a request with three good transactions and one bad one writes nothing at all', async () => {
    const good = [
      charge('A-1', { transaction_date: '2025-06-01' }), // would be moved, with a pinned note
      TX.SUPPLY_CHARGE!('A-2', { tax_items: [taxItem()], line_items: [lineItem(), lineItem({ rate_band: 'STANDING_CHARGE' })] }),
      TX.PAYMENT!('A-3', { payment_type: 'DEBIT_CARD', reference: 'R-1' }),
    ];
    for (const [bad, code, attr] of [
      [TX.REPAYMENT!('A-4', { payment_type: 'DEBIT_CARD' }), 'invalid_choice', 'transactions.3.payment_type'],
      [charge('A-4', { transaction_date: '2027-01-01' }), 'date_in_future', 'transactions.3.transaction_date'],
      [charge('A-1'), 'duplicate_transaction_ids', 'transactions.3.transaction_id'],
    ] as Array<[Tx, string, string]>) {
      const before = await h.ctx.tableCounts();
      expectTransactionError(await postTx('T-ATOMIC', [...good, bad]), code, attr);
      expect(await h.ctx.tableCounts()).toEqual(before);
    }
    // None of them was half-written: all three are new now.
    const rs = results(await postTx('T-ATOMIC', good));
    expect(rs.map((r) => r.status)).toEqual(Array(3).fill('TRANSACTION_ADDED_TO_ACCOUNT'));
    expect(await movedNotes('T-ATOMIC')).toHaveLength(1);
  });
});

describe('transactions: exact amounts', () => {
  beforeAll(async () => {
    await h.importAccount('T-EXACT');
  });

  const raw = (transactions: string[]) =>
    `{"import_supplier":"${S}","external_account_number":"T-EXACT","transactions":[${transactions.join(',')}]}`;
  const rawCharge = (id: string, amountLiteral: string) =>
    `{"transaction_id":"${id}","transaction_date":"${IN_PERIOD}","amount":${amountLiteral},"type":"CHARGE","reason":"IMPORTED_CHARGE"}`;

  it('keeps every digit of amounts sent as JSON numbers or strings, in the response and in the database', async () => {
    const amounts: Array<[string, string, string]> = [
      ['E-1', '0.1', '0.1'],
      ['E-2', '0.2', '0.2'],
      ['E-3', '1234567890.0123456789', '1234567890.0123456789'],
      ['E-4', '9999999999.9999999999', '9999999999.9999999999'],
      ['E-5', '"0.0000000001"', '0.0000000001'],
      ['E-6', '"-1234567890.0123456789"', '-1234567890.0123456789'],
      ['E-7', '100', '100'],
    ];
    const res = await h.post(URLS.transactions, raw(amounts.map(([id, literal]) => rawCharge(id, literal))));
    const rs = results(res);
    expect(rs.map((r) => r.transaction_data.amount)).toEqual(amounts.map(([, , want]) => want));
    expect((await txRows('T-EXACT')).map((r) => [r.transaction_id, r.amount])).toEqual(amounts.map(([id, , want]) => [id, want]));
    const [sum] = await h.rows<{ s: string }>(
      `SELECT sum(amount)::text AS s FROM account_transactions WHERE transaction_id IN ('E-1', 'E-2') AND account_id = $1`,
      [await h.accountId('T-EXACT')],
    );
    expect(sum!.s).toBe('0.3');
  });

  it.each([
    ['0.30000000000000004', '17 fraction digits'],
    ['"0.00000000001"', '11 fraction digits'],
    ['12345678901', '11 integer digits'],
    ['"12.3.4"', 'not a number'],
  ])('refuses amount %s (%s) with invalid_decimal rather than rounding it', async (literal) => {
    const before = await h.ctx.tableCounts();
    const res = await h.post(URLS.transactions, raw([rawCharge('E-OK', '1'), rawCharge('E-BAD', literal)]));
    expectTransactionError(res, 'invalid_decimal', 'transactions.1.amount');
    expect(await h.ctx.tableCounts()).toEqual(before);
  });

  it('stores line items and tax items with exact numerics, in order', async () => {
    const supply = `{"transaction_id":"E-SC","transaction_date":"${IN_PERIOD}","amount":0.1,"type":"SUPPLY_CHARGE","product_code":"E-1R",
      "line_items":[
        {"rate_band":"CONSUMPTION_DAY","start_date":"2025-12-01","end_date":"2025-12-31","number_of_units":1234.567890123456,"net_amount":0.1,"price_per_unit":0.000123456789,"units":[0.1,0.2,1234.567890123456]},
        {"rate_band":"STANDING_CHARGE","start_date":"2025-12-01","end_date":"2025-12-31","number_of_units":31,"net_amount":"9999999999.9999999999"}
      ],
      "tax_items":[{"amount":0.2,"tax_type":"VAT","value_taxed":1234567890.0123456789,"rate":0.05,"unit_type":"PROPORTION"},
                   {"amount":"0.0000000001","tax_type":"CCL","value_taxed":0.1,"rate":0.000775,"unit_type":"CURRENCY_PER_KWH"}]}`;
    const rs = results(await h.post(URLS.transactions, raw([supply])));
    expect(rs[0]!.transaction_data.amount).toBe('0.1');
    const lines = await h.rows(
      `SELECT i.position, i.rate_band, i.start_date::text AS start_date, i.end_date::text AS end_date, i.number_of_units::text AS number_of_units,
              i.net_amount::text AS net_amount, i.price_per_unit::text AS price_per_unit, i.units::text AS units
         FROM transaction_line_items i JOIN account_transactions t ON t.id = i.transaction_row_id
        WHERE t.transaction_id = 'E-SC' ORDER BY i.position`,
    );
    expect(lines).toEqual([
      {
        position: 0,
        rate_band: 'CONSUMPTION_DAY',
        start_date: '2025-12-01',
        end_date: '2025-12-31',
        number_of_units: '1234.567890123456',
        net_amount: '0.1',
        price_per_unit: '0.000123456789',
        units: '{0.1,0.2,1234.567890123456}',
      },
      {
        position: 1,
        rate_band: 'STANDING_CHARGE',
        start_date: '2025-12-01',
        end_date: '2025-12-31',
        number_of_units: '31',
        net_amount: '9999999999.9999999999',
        price_per_unit: null,
        units: null,
      },
    ]);
    const taxes = await h.rows(
      `SELECT i.position, i.amount::text AS amount, i.tax_type, i.value_taxed::text AS value_taxed, i.rate::text AS rate, i.unit_type
         FROM transaction_tax_items i JOIN account_transactions t ON t.id = i.transaction_row_id
        WHERE t.transaction_id = 'E-SC' ORDER BY i.position`,
    );
    expect(taxes).toEqual([
      { position: 0, amount: '0.2', tax_type: 'VAT', value_taxed: '1234567890.0123456789', rate: '0.05', unit_type: 'PROPORTION' },
      { position: 1, amount: '0.0000000001', tax_type: 'CCL', value_taxed: '0.1', rate: '0.000775', unit_type: 'CURRENCY_PER_KWH' },
    ]);
  });
});

describe('transactions: outer shape', () => {
  it('an empty transactions array is the invalid_request envelope', async () => {
    await h.importAccount('T-SHAPE');
    const res = await postTx('T-SHAPE', []);
    const errors = expectEnvelope(res, 400, 'invalid_request');
    expect(pairs(errors)).toEqual(['min_items@transactions']);
  });

  it('a transaction that is not an object is reported as that transaction', async () => {
    const res = await postTx('T-SHAPE', [charge('SH-1'), 'not a transaction']);
    expectTransactionError(res, 'invalid_type', 'transactions.1');
    expect(await txRows('T-SHAPE')).toEqual([]);
  });
});

describe('transactions: request size limits (decisions §7)', () => {
  beforeAll(async () => {
    await h.importAccount('T-LIMIT');
    await h.importAccount('T-LIMIT-ITEMS');
  });

  it('accepts 5,000 transactions in one request and refuses 5,001 with too_many_items', async () => {
    const make = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => charge(`${prefix}-${i}`, { amount: '1.01' }));
    const before = await h.ctx.tableCounts();
    const over = await postTx('T-LIMIT', make(5001, 'OV'));
    expect(pairs(expectEnvelope(over, 400, 'invalid_request'))).toEqual(['too_many_items@transactions']);
    expect(await h.ctx.tableCounts()).toEqual(before);

    const rs = results(await postTx('T-LIMIT', make(5000, 'LIM')));
    expect(rs).toHaveLength(5000);
    expect(rs.every((r) => r.status === 'TRANSACTION_ADDED_TO_ACCOUNT')).toBe(true);
    const [row] = await h.rows<{ n: string; total: string }>(
      'SELECT count(*)::text AS n, sum(amount)::text AS total FROM account_transactions WHERE account_id = $1',
      [await h.accountId('T-LIMIT')],
    );
    expect(row).toEqual({ n: '5000', total: '5050.00' });
  });

  // decisions §7 limits a request to 5,000 transactions and sets no limit on line items, so this
  // request (3,700 SUPPLY_CHARGEs with two line items each, ~0.9 MB) is valid and must be imported.
  // Written in one statement, its 7,400 line items (9 bind parameters each) would pass PostgreSQL's
  // 65,535-parameter limit; inserts are chunked so a valid request is never refused for it.
  it('imports a valid request whose line items exceed one INSERT statement\u2019s parameter limit', async () => {
    const li = { start_date: '2026-01-01', end_date: '2026-01-31', number_of_units: '1', net_amount: '1' };
    const txs = Array.from({ length: 3700 }, (_, i) => TX.SUPPLY_CHARGE!(`LI-${i}`, { line_items: [li, { ...li, rate_band: 'STANDING_CHARGE' }] }));
    const rs = results(await postTx('T-LIMIT-ITEMS', txs));
    expect(rs).toHaveLength(3700);
    const [row] = await h.rows<{ n: string }>(
      `SELECT count(*)::text AS n FROM transaction_line_items i JOIN account_transactions t ON t.id = i.transaction_row_id WHERE t.account_id = $1`,
      [await h.accountId('T-LIMIT-ITEMS')],
    );
    expect(row!.n).toBe('7400');
  });
});
