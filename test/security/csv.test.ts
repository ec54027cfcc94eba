import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { csvRecords } from '../queue/helpers.js';
import { describeResponse } from './helpers.js';

/**
 * Issue 10, item 11: the batch items CSV (Accept: text/csv) never hands a spreadsheet a cell it would
 * run as a formula. A cell starting with = + - @, with a space or an invisible character a spreadsheet
 * trims before looking (tab, CR, LF, space, no-break space, zero-width space, BOM, ideographic space…),
 * or with a full-width or other compatibility form of = + - @ is prefixed with `'`; every other cell is
 * exactly what was uploaded. The cells here are external account numbers of lines that are not account
 * bundles (failed items, stage parse), which keep the number exactly as the line carried it.
 */

const S = 'CSV_CO';
const TEAM = 'CSV Team';

/** [what, the uploaded value, the cell the CSV must hold]. */
const CASES: Array<[string, string, string]> = [
  // The ASCII triggers (the behaviour before issue 10).
  ['equals', '=HYPERLINK("http://x","y")', `'=HYPERLINK("http://x","y")`],
  ['plus', '+1+cmd', `'+1+cmd`],
  ['minus', '-2+3', `'-2+3`],
  ['at', '@SUM(1)', `'@SUM(1)`],
  ['DDE', "=cmd|' /C calc'!A0", `'=cmd|' /C calc'!A0`],
  ['tab', '\t=1+1', `'\t=1+1`],
  ['carriage return', '\r=1+1', `'\r=1+1`],
  // Spaces and invisible characters a spreadsheet trims before deciding that a cell is a formula.
  ['line feed', '\n=1+1', `'\n=1+1`],
  ['space', ' =1+1', `' =1+1`],
  ['spaces and a tab', '  \t =1+1', `'  \t =1+1`],
  ['no-break space', '\u00a0=1+1', `'\u00a0=1+1`],
  ['zero-width space', '\u200b=1+1', `'\u200b=1+1`],
  ['byte-order mark', '\ufeff=1+1', `'\ufeff=1+1`],
  ['word joiner', '\u2060+1', `'\u2060+1`],
  ['ideographic space', '\u3000@SUM(1)', `'\u3000@SUM(1)`],
  ['em space', '\u2003-1', `'\u2003-1`],
  ['line separator', '\u2028=1', `'\u2028=1`],
  ['vertical tab', '\u000b=1', `'\u000b=1`],
  ['leading space before plain text', ' ACC-1', `' ACC-1`],
  // Full-width and other compatibility forms of = + - @.
  ['full-width equals', '\uff1d1+1', `'\uff1d1+1`],
  ['full-width plus', '\uff0b1', `'\uff0b1`],
  ['full-width minus', '\uff0d1', `'\uff0d1`],
  ['full-width at', '\uff20SUM(1)', `'\uff20SUM(1)`],
  ['small equals', '\ufe661', `'\ufe661`],
  ['small plus', '\ufe621', `'\ufe621`],
  ['superscript plus', '\u207a1', `'\u207a1`],
  ['full-width after a no-break space', '\u00a0\uff1d1', `'\u00a0\uff1d1`],
  // Controls: nothing to neutralise, so the cell is exactly what was uploaded.
  ['plain', 'ACC-1', 'ACC-1'],
  ['a trigger later in the cell', 'a=b+c-d@e', 'a=b+c-d@e'],
  ['digits and a dash', '1-2', '1-2'],
  ['a trailing space', 'ACC-2 ', 'ACC-2 '],
  ['non-Latin letters', 'Zoë 李小龍', 'Zoë 李小龍'],
  ['an apostrophe already', "'=1", "'=1"],
  ['a quote', '"=1"', '"=1"'],
  ['a full-width letter', '\uff21CC', '\uff21CC'],
];

let ctx: TestContext;
let auth: { authorization: string };
let batchId: string;

beforeAll(async () => {
  ctx = await createTestContext();
  await ctx.createSupplier(S);
  await ctx.createTeam(TEAM);
  auth = await ctx.authHeaders();
  // Not account bundles (notes is not a list): each line is a failed item at once (stage parse), no workers needed.
  const ndjson = CASES.map(([, value]) => JSON.stringify({ account: { external_account_number: value }, notes: 'not a list' })).join('\n');
  const res = await ctx.app.inject({
    method: 'POST',
    url: `/v1/data-import/batches/?import_supplier=${S}&operations_team_name=${encodeURIComponent(TEAM)}`,
    payload: `${ndjson}\n`,
    headers: { ...auth, 'content-type': 'application/x-ndjson' },
  });
  expect(res.statusCode, describeResponse(res)).toBe(202);
  batchId = (res.json() as { batch_id: string }).batch_id;
});
afterAll(async () => ctx?.close());

describe('the batch items CSV neutralises every cell a spreadsheet could run as a formula', () => {
  let records: Array<Record<string, string>>;
  let header: string[];

  beforeAll(async () => {
    const res = await ctx.app.inject({ method: 'GET', url: `/v1/data-import/batches/${batchId}/items/?state=failed`, headers: { ...auth, accept: 'text/csv' } });
    expect(res.statusCode, describeResponse(res)).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/csv/);
    ({ header, records } = csvRecords(res.body));
  });

  it('keeps the header and one row per line', () => {
    expect(header).toEqual(['line', 'external_account_number', 'stage', 'state', 'code', 'attr', 'detail']);
    expect(records.map((r) => r.line)).toEqual(CASES.map((_, i) => String(i + 1)));
  });

  it.each(CASES.map(([what, value, cell], i) => ({ what, shown: `${JSON.stringify(value)} → ${JSON.stringify(cell)}`, cell, line: i + 1 })))('$what: $shown', ({ cell, line }) => {
    const row = records[line - 1]!;
    expect(row.line).toBe(String(line));
    expect(row.external_account_number).toBe(cell);
    // The other cells of the row are the service's own words, left alone.
    expect(row).toMatchObject({ stage: 'parse', state: 'failed', code: 'invalid_type', attr: 'notes' });
  });

  it('the JSON items answer every number exactly as uploaded (only the CSV is neutralised)', async () => {
    const res = await ctx.app.inject({ method: 'GET', url: `/v1/data-import/batches/${batchId}/items/`, headers: auth });
    expect(res.statusCode).toBe(200);
    expect((res.json() as Array<{ external_account_number: string }>).map((i) => i.external_account_number)).toEqual(CASES.map(([, value]) => value));
  });
});
