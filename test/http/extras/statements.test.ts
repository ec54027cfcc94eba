import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createExtrasHarness, expectEnvelope, pairs, S, URLS, type ExtrasHarness } from './setup.js';

let h: ExtrasHarness;

beforeAll(async () => {
  h = await createExtrasHarness();
  await h.putDocument('statements/2025-01.pdf', '%PDF-1.4\n%âãÏÓ\n1 0 obj\n<<>>\nendobj\n');
  await h.putDocument('statements/2025-02.pdf', Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(64, 0xff)]));
  await h.putDocument('statements/not-a-pdf.pdf', '<html>%PDF later</html>');
  await h.putDocument('statements/short.pdf', '%PD');
  await h.putDocument('statements/empty.pdf', '');
});
afterAll(async () => h?.close());

type Statement = Record<string, unknown>;
const statement = (id: string, from: string, to: string, o: Statement = {}): Statement => ({
  statement_id: id,
  bill_period_from_date: from,
  bill_period_to_date: to,
  issued_date: '2026-01-05',
  number: `NUM-${id}`,
  gross_amount: '123.45',
  ...o,
});

const postStatements = async (ext: string, statements: unknown[]) =>
  h.post(URLS.statements, { import_supplier: S, external_account_number: ext, statements });

async function statementRows(ext: string) {
  return h.rows<Record<string, string | null>>(
    `SELECT statement_id, bill_period_from_date::text AS from, bill_period_to_date::text AS to, issued_date::text AS issued,
            number, gross_amount::text AS gross_amount, statement_path
       FROM historical_statements WHERE account_id = $1 ORDER BY id`,
    [await h.accountId(ext)],
  );
}

describe('historical statements: creation', () => {
  beforeAll(async () => {
    await h.importAccount('H-OK');
  });

  it('answers 201 with the validated data and stores each statement exactly', async () => {
    const sent = [
      statement('S-1', '2025-01-01', '2025-01-31', { statement_path: 'statements/2025-01.pdf', gross_amount: '1234567890.0123456789' }),
      statement('S-2', '2025-02-01', '2025-02-28', { gross_amount: '-0.1' }),
      // A one-day period is a period.
      statement('S-3', '2025-03-01', '2025-03-01'),
    ];
    const res = await postStatements('H-OK', sent);
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json() as { import_supplier: string; external_account_number: string; statements: Statement[] };
    expect(body.import_supplier).toBe(S);
    expect(body.external_account_number).toBe('H-OK');
    expect(body.statements).toHaveLength(3);
    body.statements.forEach((s, i) => {
      expect(s).toMatchObject(sent[i]!);
      expect(s.status).toBe('STATEMENT_CREATED');
    });
    expect(await statementRows('H-OK')).toEqual([
      { statement_id: 'S-1', from: '2025-01-01', to: '2025-01-31', issued: '2026-01-05', number: 'NUM-S-1', gross_amount: '1234567890.0123456789', statement_path: 'statements/2025-01.pdf' },
      { statement_id: 'S-2', from: '2025-02-01', to: '2025-02-28', issued: '2026-01-05', number: 'NUM-S-2', gross_amount: '-0.1', statement_path: null },
      { statement_id: 'S-3', from: '2025-03-01', to: '2025-03-01', issued: '2026-01-05', number: 'NUM-S-3', gross_amount: '123.45', statement_path: null },
    ]);
  });

  it('skips and reports a statement_id the account already has, without writing it again', async () => {
    const before = await h.ctx.tableCounts();
    // The repeat would overlap its own stored period: it is skipped, so that is not an error.
    const res = await postStatements('H-OK', [statement('S-2', '2025-02-01', '2025-02-28', { gross_amount: '999' }), statement('S-4', '2025-04-01', '2025-04-30')]);
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json() as { statements: Statement[] };
    expect(body.statements.map((s) => [s.statement_id, s.status])).toEqual([
      ['S-2', 'STATEMENT_ALREADY_EXISTS'],
      ['S-4', 'STATEMENT_CREATED'],
    ]);
    const after = await h.ctx.tableCounts();
    expect(after.historical_statements).toBe(before.historical_statements! + 1);
    const rows = await statementRows('H-OK');
    expect(rows.map((r) => r.statement_id)).toEqual(['S-1', 'S-2', 'S-3', 'S-4']);
    expect(rows.find((r) => r.statement_id === 'S-2')!.gross_amount).toBe('-0.1');
  });

  it('accepts gross_amount as a JSON number without losing digits', async () => {
    const raw = `{"import_supplier":"${S}","external_account_number":"H-OK","statements":[{"statement_id":"S-5","bill_period_from_date":"2025-05-01","bill_period_to_date":"2025-05-31","issued_date":"2025-06-02","number":"5","gross_amount":1234567890.0123456789}]}`;
    const res = await h.post(URLS.statements, raw);
    expect(res.statusCode, res.body).toBe(201);
    expect((await statementRows('H-OK')).find((r) => r.statement_id === 'S-5')!.gross_amount).toBe('1234567890.0123456789');
  });
});

describe('historical statements: validation', () => {
  beforeAll(async () => {
    await h.importAccount('H-VAL');
    const res = await postStatements('H-VAL', [statement('E-1', '2025-01-01', '2025-01-31')]);
    expect(res.statusCode, res.body).toBe(201);
  });

  it('refuses a period overlapping a stored statement: overlapping_statement_periods at statements.N', async () => {
    const before = await h.ctx.tableCounts();
    const res = await postStatements('H-VAL', [statement('E-2', '2025-02-01', '2025-02-28'), statement('E-3', '2025-01-31', '2025-03-15')]);
    const errors = expectEnvelope(res, 400, 'invalid_request');
    expect(pairs(errors)).toEqual(['overlapping_statement_periods@statements.1']);
    expect(await h.ctx.tableCounts()).toEqual(before);
  });

  it('refuses periods overlapping each other within one request', async () => {
    const before = await h.ctx.tableCounts();
    const res = await postStatements('H-VAL', [
      statement('E-4', '2025-03-01', '2025-03-31'),
      statement('E-5', '2025-05-01', '2025-05-31'),
      statement('E-6', '2025-03-15', '2025-04-14'),
    ]);
    const errors = expectEnvelope(res, 400, 'invalid_request');
    expect(pairs(errors)).toEqual(['overlapping_statement_periods@statements.2']);
    expect(await h.ctx.tableCounts()).toEqual(before);
  });

  it('accepts adjacent periods (one ends the day before the next starts)', async () => {
    const res = await postStatements('H-VAL', [statement('E-7', '2024-12-01', '2024-12-31'), statement('E-8', '2025-02-01', '2025-02-28')]);
    expect(res.statusCode, res.body).toBe(201);
  });

  it('refuses bill_period_to_date before bill_period_from_date at statements.N.bill_period_to_date', async () => {
    const before = await h.ctx.tableCounts();
    const res = await postStatements('H-VAL', [statement('E-9', '2023-01-01', '2023-01-31'), statement('E-10', '2023-03-31', '2023-03-01')]);
    const errors = expectEnvelope(res, 400, 'invalid_request');
    expect(pairs(errors)).toEqual(['start_date_later_than_end_date@statements.1.bill_period_to_date']);
    expect(await h.ctx.tableCounts()).toEqual(before);
  });

  // Decisions §3, as published: issued_date, number, gross_amount and statement_path are optional.
  it('requires bill_period_from_date, bill_period_to_date and statement_id', async () => {
    const fields = ['statement_id', 'bill_period_from_date', 'bill_period_to_date'];
    const sent = fields.map((f, i) => {
      const s = statement(`R-${i}`, `2022-0${i + 1}-01`, `2022-0${i + 1}-10`);
      delete s[f];
      return s;
    });
    const res = await postStatements('H-VAL', sent);
    const errors = expectEnvelope(res, 400, 'invalid_request');
    expect(pairs(errors).sort()).toEqual(fields.map((f, i) => `required@statements.${i}.${f}`).sort());
  });

  it('reports an invalid date and an unknown field with their attrs', async () => {
    const res = await postStatements('H-VAL', [statement('V-1', '2021-02-30', '2021-03-10'), statement('V-2', '2021-04-01', '2021-04-30', { colour: 'red' })]);
    const errors = expectEnvelope(res, 400, 'invalid_request');
    expect(pairs(errors).sort()).toEqual(['invalid_date@statements.0.bill_period_from_date', 'unknown_field@statements.1.colour'].sort());
  });
});

describe('historical statements: documents', () => {
  beforeAll(async () => {
    await h.importAccount('H-DOC');
  });

  it('refuses a statement_path that is not in storage: document_not_found', async () => {
    const before = await h.ctx.tableCounts();
    const res = await postStatements('H-DOC', [
      statement('D-1', '2025-01-01', '2025-01-31', { statement_path: 'statements/2025-01.pdf' }),
      statement('D-2', '2025-02-01', '2025-02-28', { statement_path: 'statements/missing.pdf' }),
    ]);
    const errors = expectEnvelope(res, 400, 'invalid_request');
    expect(pairs(errors)).toEqual(['document_not_found@statements.1.statement_path']);
    expect(await h.ctx.tableCounts()).toEqual(before);
  });

  it.each([
    ['text that is not a PDF', 'statements/not-a-pdf.pdf'],
    ['a file shorter than the PDF signature', 'statements/short.pdf'],
    ['an empty file', 'statements/empty.pdf'],
  ])('refuses %s: document_not_pdf', async (_what, path) => {
    const before = await h.ctx.tableCounts();
    const res = await postStatements('H-DOC', [statement('D-3', '2025-03-01', '2025-03-31', { statement_path: path })]);
    const errors = expectEnvelope(res, 400, 'invalid_request');
    expect(pairs(errors)).toEqual(['document_not_pdf@statements.0.statement_path']);
    expect(await h.ctx.tableCounts()).toEqual(before);
  });

  it.each([['../x.pdf'], ['//etc/passwd'], ['/../x.pdf'], ['statements/../statements/2025-01.pdf']])('refuses the path %s: invalid_document_path', async (path) => {
    const res = await postStatements('H-DOC', [statement('D-4', '2025-04-01', '2025-04-30', { statement_path: path })]);
    const errors = expectEnvelope(res, 400, 'invalid_request');
    expect(pairs(errors)).toEqual(['invalid_document_path@statements.0.statement_path']);
  });

  it('creates statements whose PDFs are in storage', async () => {
    const res = await postStatements('H-DOC', [
      statement('D-5', '2025-01-01', '2025-01-31', { statement_path: 'statements/2025-01.pdf' }),
      statement('D-6', '2025-02-01', '2025-02-28', { statement_path: 'statements/2025-02.pdf' }),
    ]);
    expect(res.statusCode, res.body).toBe(201);
    expect((await statementRows('H-DOC')).map((r) => [r.statement_id, r.statement_path])).toEqual([
      ['D-5', 'statements/2025-01.pdf'],
      ['D-6', 'statements/2025-02.pdf'],
    ]);
  });

  it('reports storage problems and overlaps of one request together', async () => {
    const before = await h.ctx.tableCounts();
    const res = await postStatements('H-DOC', [
      statement('D-7', '2025-03-01', '2025-03-31', { statement_path: 'statements/gone.pdf' }),
      statement('D-8', '2025-02-15', '2025-03-10'),
      statement('D-9', '2025-05-01', '2025-05-31', { statement_path: 'statements/not-a-pdf.pdf' }),
    ]);
    const errors = expectEnvelope(res, 400, 'invalid_request');
    expect(pairs(errors).sort()).toEqual(
      ['document_not_found@statements.0.statement_path', 'overlapping_statement_periods@statements.1', 'document_not_pdf@statements.2.statement_path'].sort(),
    );
    expect(await h.ctx.tableCounts()).toEqual(before);
  });

  // decisions §3: "one item per problem". A period ending before it starts and a missing PDF in the
  // same request are two problems; both must be reported, not only the field one.
  it('reports a field problem and a storage problem of the same request together', async () => {
    const res = await postStatements('H-DOC', [
      statement('D-10', '2024-03-31', '2024-03-01'),
      statement('D-11', '2024-05-01', '2024-05-31', { statement_path: 'statements/gone.pdf' }),
    ]);
    const errors = expectEnvelope(res, 400, 'invalid_request');
    expect(pairs(errors).sort()).toEqual(
      ['start_date_later_than_end_date@statements.0.bill_period_to_date', 'document_not_found@statements.1.statement_path'].sort(),
    );
  });
});

describe('historical statements: all or nothing', () => {
  it('one bad statement among good ones writes nothing; the good ones go in afterwards', async () => {
    await h.importAccount('H-ATOMIC');
    const good = [statement('A-1', '2025-01-01', '2025-01-31'), statement('A-2', '2025-02-01', '2025-02-28'), statement('A-3', '2025-03-01', '2025-03-31')];
    for (const bad of [
      statement('A-4', '2025-03-20', '2025-04-20'),
      statement('A-4', '2025-04-01', '2025-04-30', { statement_path: 'statements/gone.pdf' }),
      statement('A-4', '2025-04-01', '2025-04-30', { issued_date: 'soon' }),
    ]) {
      const before = await h.ctx.tableCounts();
      const res = await postStatements('H-ATOMIC', [...good, bad]);
      expectEnvelope(res, 400, 'invalid_request');
      expect(await h.ctx.tableCounts()).toEqual(before);
    }
    const res = await postStatements('H-ATOMIC', good);
    expect(res.statusCode, res.body).toBe(201);
    expect((res.json() as { statements: Statement[] }).statements.map((s) => s.status)).toEqual(Array(3).fill('STATEMENT_CREATED'));
  });

  it('an empty statements array is refused', async () => {
    const res = await postStatements('H-ATOMIC', []);
    expect(pairs(expectEnvelope(res, 400, 'invalid_request'))).toEqual(['min_items@statements']);
  });
});

describe('historical statements: request size limits (decisions §7)', () => {
  it('accepts 500 statements in one request and refuses 501 with too_many_items', async () => {
    await h.importAccount('H-LIMIT');
    // One-day periods from 2020-01-01 on, none overlapping.
    const day = (i: number) => new Date(Date.UTC(2020, 0, 1 + i)).toISOString().slice(0, 10);
    const make = (n: number) => Array.from({ length: n }, (_, i) => statement(`L-${i}`, day(i), day(i), { issued_date: '2022-01-01' }));
    const before = await h.ctx.tableCounts();
    const over = await postStatements('H-LIMIT', make(501));
    expect(pairs(expectEnvelope(over, 400, 'invalid_request'))).toEqual(['too_many_items@statements']);
    expect(await h.ctx.tableCounts()).toEqual(before);
    const ok = await postStatements('H-LIMIT', make(500));
    expect(ok.statusCode, ok.body.slice(0, 500)).toBe(201);
    expect(await statementRows('H-LIMIT')).toHaveLength(500);
  });
});
