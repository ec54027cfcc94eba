import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GeneratedAccount, Mistake } from '../../src/cohort/generate.js';
import { ALSO_REPORTED } from '../../src/cohort/mistakes.js';
import { addDaysUtc } from '../../src/clock.js';
import {
  LONG,
  SMALL_POOL,
  STAGE_NAMES,
  accountHoldings,
  api,
  batchItems,
  batchStatus,
  csvRecords,
  importTableCounts,
  linesOf,
  ndjsonOf,
  pickSeeded,
  totalOf,
  waitForEndSampling,
  type BatchItem,
  type BatchStatusBody,
} from './helpers.js';
import { createPipelineContext, type PipelineContext } from './setup.js';

const SUPPLIER = 'COH';
const TEAM = 'Cohort Team';
const COUNT = 300;
// Seed 2 spoils 16 of 300 lines; the kinds take turns, so every kind is planted at least once.
const SEED = 2;

const ELEC = 'supply_addresses.0.meter_points.0';
const GAS = 'supply_addresses.0.meter_points.1';
/** Where each planted mistake is reported: the attr a client would be told to fix. */
const MISTAKE_ATTR: Record<Mistake, string> = {
  required: 'supply_addresses.0.supply_postcode',
  invalid_postcode: 'billing_postcode',
  invalid_phone_number: 'customers.0.landline',
  invalid_mpan: `${ELEC}.identifier`,
  date_in_future: 'customers.0.date_of_birth',
  unknown_field: 'loyalty_points',
  customer_family_name_required: 'customers.0.family_name',
  registers_have_duplicate_tprs: `${ELEC}.meters.0.registers.1.tpr`,
  meter_with_duplicate_register_ids: `${ELEC}.meters.0.registers.1.register_id`,
  account_billing_options_provided_for_domestic_accounts: 'account_billing_options',
  transfer_reading_dates_must_match_last_billed_to_date: `${GAS}.meters.0.transfer_readings.0.reading_date`,
  billed_reading_after_last_billed_to_date: `${GAS}.meters.0.reading_history.0.reading_date`,
  missing_eacs_for_active_register_tpr: `${ELEC}.meters.0.registers.0.tpr`,
  psr_industry_code_not_provided: 'customers.0.psr.0',
};

/** Six ways a line can fail to be JSON; one is the line it replaces, cut in half (an interrupted export). */
const MALFORMED: ReadonlyArray<(original: string) => string> = [
  () => '{"account": ',
  () => 'not json',
  (original) => original.slice(0, Math.floor(original.length / 2)),
  () => "{'account': {'import_supplier': 'COH'}}",
  () => '{"account": {"external_account_number": "X",}}',
  () => '[1, 2',
];

let ctx: PipelineContext;
let accounts: GeneratedAccount[];
let ndjson: string;
/** Line number (1-based) → what was planted there. */
const malformedAt = new Map<number, string>();
const mistakeAt = new Map<number, Mistake>();
const validAt = new Map<number, GeneratedAccount>();
let first: { batch_id: string; total_items: number };
let firstEnd: BatchStatusBody;
let firstSamples: BatchStatusBody[];
let firstItems: BatchItem[];

beforeAll(async () => {
  ctx = await createPipelineContext({ deps: { dbPoolSize: SMALL_POOL } });
  await ctx.createSupplier(SUPPLIER, { documentsRoot: 'cohort' });
  await ctx.createTeam(TEAM);
  ctx.startWorkers();

  const cohort = await ctx.cohort({ count: COUNT, supplier: SUPPLIER, prefix: SUPPLIER, invalidRate: 0.05, seed: SEED });
  accounts = cohort.accounts;
  const lines = linesOf(cohort.ndjson);
  expect(lines).toHaveLength(COUNT);
  // Malformed lines replace valid ones only, so every planted mistake stays a validation failure.
  const validLines = accounts.flatMap((a, i) => (a.mistake ? [] : [i + 1]));
  const chosen = pickSeeded(validLines, MALFORMED.length, 20251122);
  chosen.forEach((line, k) => {
    lines[line - 1] = MALFORMED[k]!(lines[line - 1]!);
    malformedAt.set(line, lines[line - 1]!);
  });
  accounts.forEach((a, i) => {
    if (a.mistake) mistakeAt.set(i + 1, a.mistake);
    else if (!malformedAt.has(i + 1)) validAt.set(i + 1, a);
  });
  ndjson = ndjsonOf(lines);

  first = await ctx.upload(ndjson, { supplier: SUPPLIER, team: TEAM });
  // Alone this takes ~15 s; the deadline is for a machine shared with other suites.
  ({ end: firstEnd, samples: firstSamples } = await waitForEndSampling(ctx, first.batch_id, 240_000));
  firstItems = await batchItems(ctx, first.batch_id);
}, 300_000);

afterAll(async () => ctx?.close());

describe('a 300-account cohort with 5% invalid and 2% malformed lines', () => {
  it('plants every kind of mistake and six malformed lines', () => {
    expect(new Set(mistakeAt.values())).toEqual(new Set(Object.keys(MISTAKE_ATTR)));
    expect(malformedAt.size).toBe(6);
    expect(validAt.size).toBe(COUNT - mistakeAt.size - 6);
  });

  it('ends with exact succeeded and failed counts', () => {
    expect(first.total_items).toBe(COUNT);
    expect(firstEnd).toMatchObject({
      batch_id: first.batch_id,
      import_supplier: SUPPLIER,
      operations_team_name: TEAM,
      dry_run: false,
      state: 'COMPLETED_WITH_ERRORS',
      total_items: COUNT,
      succeeded: validAt.size,
      failed: mistakeAt.size + 6,
    });
    expect(typeof firstEnd.created_at).toBe('string');
    expect(typeof firstEnd.finished_at).toBe('string');
    expect(firstItems).toHaveLength(COUNT);
    expect(firstItems.map((i) => i.line)).toEqual(Array.from({ length: COUNT }, (_, i) => i + 1));
  });

  it('pages the items in line order with Link headers', async () => {
    const seen: BatchItem[] = [];
    let url: string | null = `/v1/data-import/batches/${first.batch_id}/items/?state=failed&page_size=7`;
    let pages = 0;
    while (url) {
      const res = await api(ctx).get(url);
      expect(res.statusCode).toBe(200);
      const page = res.json() as BatchItem[];
      expect(page.length).toBeLessThanOrEqual(7);
      seen.push(...page);
      pages++;
      const link = res.headers.link as string | undefined;
      url = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1]! : null;
    }
    expect(pages).toBe(Math.ceil((mistakeAt.size + malformedAt.size) / 7));
    expect(seen).toEqual(firstItems.filter((i) => i.state === 'failed'));
    expect(await batchItems(ctx, first.batch_id, 'pending')).toEqual([]);
    expect(await batchItems(ctx, first.batch_id, 'succeeded')).toHaveLength(validAt.size);
  });

  it('reports each malformed line as a parse failure at its line, code invalid_json', async () => {
    const failed = await batchItems(ctx, first.batch_id, 'failed');
    const parse = failed.filter((i) => i.stage === 'parse');
    expect(parse.map((i) => i.line).sort((a, b) => a - b)).toEqual([...malformedAt.keys()].sort((a, b) => a - b));
    for (const item of parse) {
      expect(item).toMatchObject({ stage: 'parse', state: 'failed', external_account_number: null, service_account_number: null, attempts: 0 });
      expect(item.error).toMatchObject({ code: 'invalid_json', errors: [] });
      expect(String(item.error!.detail)).toContain(`Line ${item.line} `);
    }
  });

  it('fails each planted mistake at validate with account_failed_validation and the mistake at its attr, as the REST endpoint would', async () => {
    const failed = await batchItems(ctx, first.batch_id, 'failed');
    const validateFailures = failed.filter((i) => i.stage !== 'parse');
    expect(validateFailures.map((i) => i.line)).toEqual([...mistakeAt.keys()]);
    for (const item of validateFailures) {
      const mistake = mistakeAt.get(item.line)!;
      const account = accounts[item.line - 1]!;
      expect(item, `line ${item.line} (${mistake})`).toMatchObject({
        stage: 'validate',
        state: 'failed',
        external_account_number: account.bundle.account.external_account_number,
        service_account_number: null,
      });
      expect(item.error!.code).toBe('account_failed_validation');
      // The mistake's code at its attr, and nothing else but what the document reports for the same fault there.
      const expected = [mistake, ...(ALSO_REPORTED[mistake] ?? [])].map((code) => expect.objectContaining({ code, attr: MISTAKE_ATTR[mistake] }));
      expect(item.error!.errors, `line ${item.line} (${mistake})`).toEqual(expect.arrayContaining(expected));
      expect(item.error!.errors, `line ${item.line} (${mistake})`).toHaveLength(expected.length);
      // The same envelope the validate-account endpoint answers for this account.
      const rest = await ctx.app.inject({ method: 'POST', url: '/v1/data-import/validate-account/', payload: account.bundle.account, headers: ctx.auth });
      expect(rest.statusCode).toBe(400);
      expect(item.error).toEqual(rest.json());
    }
  });

  it('creates every valid account exactly once, with all its extras', async () => {
    const holdings = await accountHoldings(ctx, SUPPLIER);
    expect(holdings.size).toBe(validAt.size);
    const byLine = new Map(firstItems.map((i) => [i.line, i]));
    for (const [line, a] of validAt) {
      const ext = a.bundle.account.external_account_number as string;
      const rows = holdings.get(ext);
      expect(rows, ext).toHaveLength(1);
      const h = rows![0]!;
      // Transactions dated before the open period are moved into it, and one pinned note says so.
      const openStart = addDaysUtc(a.bundle.account.last_statement_closing_date as string, 1);
      const moved = (a.bundle.transactions ?? []).some((t) => (t.transaction_date as string) < openStart);
      expect(h, ext).toMatchObject({
        imported_notes: a.bundle.notes!.length,
        moved_notes: moved ? 1 : 0,
        pinned_moved_notes: moved ? 1 : 0,
        transactions: a.bundle.transactions!.length,
        statements: a.bundle.statements!.length,
        payment_instructions: a.bundle.payment_instruction ? 1 : 0,
      });
      expect([h.imported_notes, h.transactions, h.statements]).toEqual([3, 10, 2]);
      expect(byLine.get(line)).toMatchObject({ state: 'succeeded', stage: 'extras', external_account_number: ext, service_account_number: h.number, error: null });
    }
    // Nothing was created for a line that failed.
    const counts = await importTableCounts(ctx);
    expect(counts.accounts).toBe(validAt.size);
    expect(counts.account_import_processes).toBe(validAt.size);
  });

  it('reports stage counts that add up, in flight and at the end', () => {
    const parseFailures = malformedAt.size;
    expect(firstSamples.length).toBeGreaterThan(0);
    for (const s of [...firstSamples, firstEnd]) {
      expect(Object.keys(s.stages).sort()).toEqual([...STAGE_NAMES].sort());
      // Every line that parsed is somewhere in validate's counts; later stages see only what got that far.
      expect(totalOf(s.stages.validate) + parseFailures).toBe(COUNT);
      for (let k = 1; k < STAGE_NAMES.length; k++) {
        const here = s.stages[STAGE_NAMES[k]!];
        const before = s.stages[STAGE_NAMES[k - 1]!];
        expect(totalOf(here)).toBe(before.completed);
      }
      expect(s.succeeded).toBe(s.stages.extras.completed);
      expect(s.failed).toBe(parseFailures + STAGE_NAMES.reduce((a, st) => a + s.stages[st].failed, 0));
    }
    const valid = validAt.size;
    expect(firstEnd.stages).toEqual({
      validate: { waiting: 0, active: 0, delayed: 0, completed: valid, failed: mistakeAt.size },
      stage: { waiting: 0, active: 0, delayed: 0, completed: valid, failed: 0 },
      process: { waiting: 0, active: 0, delayed: 0, completed: valid, failed: 0 },
      extras: { waiting: 0, active: 0, delayed: 0, completed: valid, failed: 0 },
    });
  });

  it('answers the failures as CSV: a header and one row per failed item with code and attr', async () => {
    const res = await api(ctx).get(`/v1/data-import/batches/${first.batch_id}/items/?state=failed`, { accept: 'text/csv' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/csv/);
    const { header, records } = csvRecords(res.body);
    expect(header).toEqual(['line', 'external_account_number', 'stage', 'state', 'code', 'attr', 'detail']);
    expect(records).toHaveLength(mistakeAt.size + malformedAt.size);
    expect(records.map((r) => Number(r.line))).toEqual([...mistakeAt.keys(), ...malformedAt.keys()].sort((a, b) => a - b));
    for (const r of records) {
      const line = Number(r.line);
      expect(r.state).toBe('failed');
      if (malformedAt.has(line)) {
        expect(r).toMatchObject({ external_account_number: '', stage: 'parse', code: 'invalid_json', attr: '' });
        expect(r.detail).toContain(`Line ${line} `);
      } else {
        const mistake = mistakeAt.get(line)!;
        expect(r).toMatchObject({
          external_account_number: accounts[line - 1]!.bundle.account.external_account_number,
          stage: 'validate',
        });
        // A row lists every error of its item, joined with '; '.
        expect(r.code!.split('; ').sort()).toEqual([mistake, ...(ALSO_REPORTED[mistake] ?? [])].sort());
        expect(new Set(r.attr!.split('; '))).toEqual(new Set([MISTAKE_ATTR[mistake]]));
        expect(r.detail).not.toBe('');
      }
    }
  });

  describe('the same NDJSON uploaded again', () => {
    let second: { batch_id: string; total_items: number };
    let before: Record<string, number>;

    beforeAll(async () => {
      before = await importTableCounts(ctx);
      second = await ctx.upload(ndjson, { supplier: SUPPLIER, team: TEAM });
      await waitForEndSampling(ctx, second.batch_id, 240_000);
    }, 300_000);

    it('duplicates nothing anywhere', async () => {
      const after = await importTableCounts(ctx);
      expect(after).toEqual(before);
      const holdings = await accountHoldings(ctx, SUPPLIER);
      expect(holdings.size).toBe(validAt.size);
      for (const rows of holdings.values()) expect(rows).toHaveLength(1);
    });

    it('succeeds every valid item with the account number the first batch created, and fails the same lines the same way', async () => {
      const status = await batchStatus(ctx, second.batch_id);
      expect(second.total_items).toBe(COUNT);
      expect(status).toMatchObject({ state: 'COMPLETED_WITH_ERRORS', total_items: COUNT, succeeded: validAt.size, failed: mistakeAt.size + malformedAt.size });
      const items = await batchItems(ctx, second.batch_id);
      const firstByLine = new Map(firstItems.map((i) => [i.line, i]));
      for (const item of items) {
        const was = firstByLine.get(item.line)!;
        if (validAt.has(item.line)) {
          expect(item).toMatchObject({ state: 'succeeded', stage: 'extras', error: null });
          expect(item.service_account_number).toBe(was.service_account_number);
          expect(item.service_account_number).toMatch(/^A-[0-9A-F]{8}$/);
        } else {
          expect(item).toMatchObject({ state: 'failed', stage: was.stage, error: { code: was.error!.code } });
        }
      }
    });

    it("lists the supplier's batches newest first", async () => {
      const res = await api(ctx).get(`/v1/data-import/batches/?import_supplier=${SUPPLIER}`);
      expect(res.statusCode).toBe(200);
      const list = res.json() as Array<Record<string, unknown>>;
      const ids = list.map((b) => b.batch_id);
      expect(ids).toContain(first.batch_id);
      expect(ids).toContain(second.batch_id);
      expect(ids.indexOf(second.batch_id)).toBeLessThan(ids.indexOf(first.batch_id));
      const createdAt = list.map((b) => Date.parse(b.created_at as string));
      expect([...createdAt].sort((a, b) => b - a)).toEqual(createdAt);
      expect(list.find((b) => b.batch_id === first.batch_id)).toMatchObject({
        import_supplier: SUPPLIER,
        operations_team_name: TEAM,
        state: 'COMPLETED_WITH_ERRORS',
        total_items: COUNT,
        succeeded: validAt.size,
        failed: mistakeAt.size + malformedAt.size,
      });
    });
  });
});

describe('upload checks', () => {
  const jobTotal = async () => {
    let n = 0;
    for (const st of STAGE_NAMES) {
      const counts = await ctx.deps.queues[st].getJobCounts();
      n += Object.values(counts).reduce((a, b) => a + b, 0);
    }
    return n;
  };
  const batchRows = async () => Number((await ctx.deps.db.selectFrom('batches').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()).n);

  it('refuses an unknown supplier or team with a 400 envelope before anything is enqueued', async () => {
    const rows = await batchRows();
    const jobs = await jobTotal();
    const body = ndjsonOf(linesOf(ndjson).slice(0, 3));

    const noSupplier = await api(ctx).upload(body, `import_supplier=NOPE&operations_team_name=${encodeURIComponent(TEAM)}`);
    expect(noSupplier.statusCode).toBe(400);
    expect(noSupplier.json()).toEqual({
      detail: expect.any(String),
      code: 'import_supplier_not_found',
      errors: [{ code: 'import_supplier_not_found', attr: 'import_supplier', detail: expect.any(String) }],
    });

    const noTeam = await api(ctx).upload(body, `import_supplier=${SUPPLIER}&operations_team_name=No%20Such%20Team`);
    expect(noTeam.statusCode).toBe(400);
    expect(noTeam.json()).toEqual({
      detail: expect.any(String),
      code: 'operations_team_not_found',
      errors: [{ code: 'operations_team_not_found', attr: 'operations_team_name', detail: expect.any(String) }],
    });

    expect(await batchRows()).toBe(rows);
    expect(await jobTotal()).toBe(jobs);
  });

  it('answers the same batch for the same Idempotency-Key, with one batch row', async () => {
    const body = ndjsonOf(linesOf(ndjson).slice(0, 5));
    const key = 'cohort-upload-2025-11-22';
    const a = await ctx.upload(body, { supplier: SUPPLIER, team: TEAM }, { 'Idempotency-Key': key });
    const b = await ctx.upload(body, { supplier: SUPPLIER, team: TEAM }, { 'Idempotency-Key': key });
    expect(b).toEqual(a);
    expect(a.total_items).toBe(5);
    const rows = await ctx.deps.db.selectFrom('batches').select('id').where('idempotency_key', '=', key).execute();
    expect(rows).toEqual([{ id: a.batch_id }]);
    expect(await batchItems(ctx, a.batch_id)).toHaveLength(5);
    await ctx.waitForEnd(a.batch_id, LONG);
  }, 120_000);

  it('turns a JSON line that is not a bundle into a parse failure, never aborting the batch', async () => {
    const valid = linesOf(ndjson)[[...validAt.keys()][0]! - 1]!;
    const notBundle = JSON.stringify({ account: { external_account_number: 'COH-NOT-A-BUNDLE' }, loyalty: [] });
    const up = await ctx.upload(ndjsonOf([notBundle, '', valid]), { supplier: SUPPLIER, team: TEAM });
    expect(up.total_items).toBe(2);
    const end = await ctx.waitForEnd(up.batch_id, LONG);
    expect(end).toMatchObject({ state: 'COMPLETED_WITH_ERRORS', succeeded: 1, failed: 1 });
    const items = await batchItems(ctx, up.batch_id);
    expect(items[0]).toMatchObject({ line: 1, stage: 'parse', state: 'failed', external_account_number: 'COH-NOT-A-BUNDLE', error: { code: 'invalid_request' } });
    expect(items[0]!.error!.errors).toContainEqual(expect.objectContaining({ code: 'unknown_field', attr: 'loyalty' }));
    // Blank lines are skipped but counted: the bundle is on physical line 3.
    expect(items[1]).toMatchObject({ line: 3, state: 'succeeded' });

    // A batch of nothing but bad lines has nothing to run: it has ended by the time the upload answers.
    const bad = await ctx.upload('not json\r\n{"account": \r\n', { supplier: SUPPLIER, team: TEAM });
    expect(bad.total_items).toBe(2);
    expect(await batchStatus(ctx, bad.batch_id)).toMatchObject({ state: 'COMPLETED_WITH_ERRORS', succeeded: 0, failed: 2 });
    expect((await batchItems(ctx, bad.batch_id)).map((i) => [i.line, i.stage, i.error!.code])).toEqual([
      [1, 'parse', 'invalid_json'],
      [2, 'parse', 'invalid_json'],
    ]);
  }, 120_000);
});
