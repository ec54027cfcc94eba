import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setSupplierDefaultTeam } from '../../src/imports/suppliers/supplier.service.js';
import { accountPayload } from '../helpers/fixtures.js';
import { pollUntil } from '../helpers/poll.js';
import { createPipelineContext, type PipelineContext } from '../queue/setup.js';

// The published interface's second version, from its shapes: ScheduleAccountCreation,
// TaskParameters, ValidateAccount and ImportStatusResponse. One account at a time, run by the same
// pipeline jobs as a cohort.

const TEAM = 'V2 Team';
const DAY = 24 * 3600 * 1000;
let ctx: PipelineContext;

beforeAll(async () => {
  ctx = await createPipelineContext();
  await ctx.createTeam(TEAM);
  for (const code of ['V2', 'V2OTHER']) {
    await ctx.createSupplier(code);
    await setSupplierDefaultTeam(ctx.deps.db, code, TEAM);
  }
  await ctx.createSupplier('NOTEAM');
  ctx.startWorkers();
});
afterAll(async () => ctx?.close());

const post = (url: string, body: unknown, headers: Record<string, string> = ctx.auth) =>
  ctx.app.inject({ method: 'POST', url, headers: { ...headers, 'content-type': 'application/json' }, payload: JSON.stringify(body) });
const get = (url: string, headers: Record<string, string> = ctx.auth) => ctx.app.inject({ method: 'GET', url, headers });
const schedule = (payload: unknown, taskParams: Record<string, unknown> = {}) => post('/v2/data-import/accounts/', { payload, task_params: taskParams });
const statusOf = (supplier: string, ext: string) => get(`/v2/data-import/accounts/${supplier}/${ext}/`);
const iso = (ms: number) => new Date(ctx.clock.now().getTime() + ms).toISOString();

/** Every answer of the status and schedule endpoints has the published ImportStatusResponse shape. */
function expectStatusShape(body: Record<string, unknown>): void {
  expect(Object.keys(body).sort()).toEqual(['created_at', 'kraken_identifier', 'latest_error', 'latest_event', 'modified_at', 'status']);
  expect(['PENDING', 'IN_PROGRESS', 'PROCESSED', 'ERRORED', 'CANCELLED', 'DRY_RUN_SUCCEEDED', 'DRY_RUN_ERRORED']).toContain(body.status);
  expect(typeof body.created_at).toBe('string');
  expect(Number.isNaN(Date.parse(body.created_at as string))).toBe(false);
  expect(Number.isNaN(Date.parse(body.modified_at as string))).toBe(false);
  const event = body.latest_event as Record<string, unknown>;
  expect(typeof event.event).toBe('string');
  expect(Number.isNaN(Date.parse(event.occurred_at as string))).toBe(false);
  expect('data' in event).toBe(true);
  if (body.kraken_identifier !== null) expect(typeof body.kraken_identifier).toBe('string');
}

async function untilStatus(supplier: string, ext: string, wanted: readonly string[]): Promise<Record<string, unknown>> {
  return pollUntil(
    async () => {
      const res = await statusOf(supplier, ext);
      if (res.statusCode !== 200) return null;
      const body = res.json() as Record<string, unknown>;
      return wanted.includes(body.status as string) ? body : null;
    },
    { timeoutMs: 60_000, what: `${supplier}/${ext} to be ${wanted.join(' or ')}` },
  );
}

describe('POST /v2/data-import/accounts/ (schedule)', () => {
  it('answers 201 with the import, then runs validate, stage, process and extras: PROCESSED with the account number as kraken_identifier', async () => {
    const res = await schedule(accountPayload('V2', 'V2-1'), { is_dry_run: false });
    expect(res.statusCode, res.body).toBe(201);
    const first = res.json() as Record<string, unknown>;
    expectStatusShape(first);
    expect(['PENDING', 'IN_PROGRESS', 'PROCESSED']).toContain(first.status);

    const done = await untilStatus('V2', 'V2-1', ['PROCESSED', 'ERRORED']);
    expectStatusShape(done);
    expect(done).toMatchObject({ status: 'PROCESSED', latest_error: null, latest_event: { event: 'EVENT_ACCOUNT_IMPORT_PROCESS_PROCESSED', data: null } });
    const v1 = await get('/v1/data-import/account-transfer-status/V2/V2-1/');
    expect(v1.json()).toEqual({ status: 'COMPLETED', service_account_number: done.kraken_identifier, kraken_account_number: done.kraken_identifier });
    expect(done.created_at).toBe(first.created_at);
    expect(Date.parse(done.modified_at as string)).toBeGreaterThanOrEqual(Date.parse(first.modified_at as string));
  });

  it('a dry run ends DRY_RUN_SUCCEEDED and creates nothing', async () => {
    const res = await schedule(accountPayload('V2', 'V2-DRY'), { is_dry_run: true });
    expect(res.statusCode, res.body).toBe(201);
    const done = await untilStatus('V2', 'V2-DRY', ['DRY_RUN_SUCCEEDED', 'DRY_RUN_ERRORED']);
    expect(done).toMatchObject({ status: 'DRY_RUN_SUCCEEDED', kraken_identifier: null, latest_event: { event: 'EVENT_ACCOUNT_IMPORT_PROCESS_DRY_RUN_SUCCEEDED' } });
    expect((await get('/v1/data-import/account-transfer-status/V2/V2-DRY/')).statusCode).toBe(404);
  });

  it('an invalid payload is refused at once: 400 import_process_failed_validation with every problem, and nothing is scheduled', async () => {
    const before = await ctx.tableCounts();
    const res = await schedule(accountPayload('V2', 'V2-BAD', { billing_postcode: 'not a postcode', customers: [] }));
    expect(res.statusCode, res.body).toBe(400);
    const body = res.json() as { code: string; detail: string; errors: Array<{ code: string; attr: string | null; detail: string }> };
    expect(body.code).toBe('import_process_failed_validation');
    expect(body.errors.length).toBeGreaterThan(0);
    expect(body.errors.map((e) => e.attr)).toContain('billing_postcode');
    expect((await statusOf('V2', 'V2-BAD')).statusCode).toBe(404);
    const after = await ctx.tableCounts();
    expect(after.batches).toBe(before.batches);
    expect(after.scheduled_imports).toBe(before.scheduled_imports);
  });

  it('checks task_params with the published codes, at task_params.<field>', async () => {
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ schedule_window_start: iso(-3600_000) }, 'schedule_window_start_in_past', 'task_params.schedule_window_start'],
      [{ schedule_window_end: iso(5 * DAY) }, 'schedule_window_end_too_far_in_future', 'task_params.schedule_window_end'],
      [{ schedule_window_start: iso(2 * DAY), schedule_window_end: iso(DAY) }, 'schedule_window_start__after_end', 'task_params.schedule_window_start'],
      [{ schedule_window_start: 'tomorrow' }, 'invalid_datetime', 'task_params.schedule_window_start'],
      [{ is_dry_run: 'yes' }, 'invalid_type', 'task_params.is_dry_run'],
      [{ surprise: 1 }, 'unknown_field', 'task_params.surprise'],
    ];
    for (const [params, code, attr] of cases) {
      const res = await schedule(accountPayload('V2', 'V2-TP'), params);
      expect(res.statusCode, JSON.stringify(params)).toBe(400);
      expect(res.json().errors, JSON.stringify(params)).toContainEqual(expect.objectContaining({ code, attr }));
    }
    // A start a few seconds in the past is a clock's skew, not the past; a window may end exactly 4 days ahead.
    const ok = await schedule(accountPayload('V2', 'V2-SKEW'), { schedule_window_start: iso(-5_000), schedule_window_end: iso(4 * DAY) });
    expect(ok.statusCode, ok.body).toBe(201);
    // task_params itself is required, as published.
    const missing = await post('/v2/data-import/accounts/', { payload: accountPayload('V2', 'V2-TP') });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().errors).toContainEqual(expect.objectContaining({ code: 'required', attr: 'task_params' }));
    expect((await statusOf('V2', 'V2-TP')).statusCode).toBe(404);
  });

  it('holds the account until its window opens: PENDING before, created once the clock reaches the start', async () => {
    // Half an hour ahead: the clock then moves less than a token's hour, so this file's token stays valid.
    const res = await schedule(accountPayload('V2', 'V2-LATER'), { schedule_window_start: iso(1800_000), schedule_window_end: iso(3600_000) });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ status: 'PENDING', latest_event: { event: 'EVENT_ACCOUNT_IMPORT_PROCESS_CREATED' } });
    // The job has been looked at and put back to wait for its window.
    const batch = await ctx.deps.pool.query<{ batch_id: string }>(
      "SELECT si.batch_id FROM scheduled_imports si JOIN import_suppliers s ON s.id = si.import_supplier_id WHERE s.code = 'V2' AND si.external_account_number = 'V2-LATER'",
    );
    const jobId = `${batch.rows[0]!.batch_id}.1.validate.0`;
    await pollUntil(async () => (await ctx.deps.queues.validate.getJob(jobId).then((j) => j?.getState())) === 'delayed' || null, { what: 'the job to wait for its window' });
    expect((await statusOf('V2', 'V2-LATER')).json()).toMatchObject({ status: 'PENDING' });
    expect((await get('/v1/data-import/account-transfer-status/V2/V2-LATER/')).statusCode).toBe(404);

    // The window opens (the service's clock), and the queue's wait ends (promoted rather than waited for).
    ctx.clock.advance(1800_000 + 1_000);
    try {
      await (await ctx.deps.queues.validate.getJob(jobId))!.promote();
      const done = await untilStatus('V2', 'V2-LATER', ['PROCESSED', 'ERRORED']);
      expect(done.status).toBe('PROCESSED');
    } finally {
      ctx.clock.set(new Date());
    }
  });

  it('fails an account whose window ended before it ran: ERRORED schedule_window_elapsed, no account', async () => {
    // Its job waits for the window's start, and is looked at again only after the window is over (the clock moved on).
    const res = await schedule(accountPayload('V2', 'V2-LATE'), { schedule_window_start: iso(600_000), schedule_window_end: iso(1200_000) });
    expect(res.statusCode, res.body).toBe(201);
    const batch = await ctx.deps.pool.query<{ batch_id: string }>(
      "SELECT si.batch_id FROM scheduled_imports si JOIN import_suppliers s ON s.id = si.import_supplier_id WHERE s.code = 'V2' AND si.external_account_number = 'V2-LATE'",
    );
    const jobId = `${batch.rows[0]!.batch_id}.1.validate.0`;
    await pollUntil(async () => (await ctx.deps.queues.validate.getJob(jobId).then((j) => j?.getState())) === 'delayed' || null, { what: 'the job to wait for its window' });
    ctx.clock.advance(1800_000);
    try {
      await (await ctx.deps.queues.validate.getJob(jobId))!.promote();
      const done = await untilStatus('V2', 'V2-LATE', ['ERRORED', 'PROCESSED']);
      expectStatusShape(done);
      expect(done).toMatchObject({
        status: 'ERRORED',
        kraken_identifier: null,
        latest_error: { code: 'schedule_window_elapsed', domain: 'import_process' },
        latest_event: { event: 'EVENT_ACCOUNT_IMPORT_PROCESS_ERRORED', data: { code: 'schedule_window_elapsed' } },
      });
      expect((await get('/v1/data-import/account-transfer-status/V2/V2-LATE/')).statusCode).toBe(404);
    } finally {
      ctx.clock.set(new Date());
    }
    // Scheduling it again, with a window that is open, creates it.
    const again = await schedule(accountPayload('V2', 'V2-LATE'));
    expect(again.statusCode, again.body).toBe(201);
    expect((await untilStatus('V2', 'V2-LATE', ['PROCESSED', 'ERRORED'])).status).toBe('PROCESSED');
  });

  it('the same request again while its import is open is the same import; a different one is refused', async () => {
    const start = iso(3600_000);
    const body = accountPayload('V2', 'V2-TWICE');
    const a = await schedule(body, { schedule_window_start: start });
    const b = await schedule(body, { schedule_window_start: start });
    expect(a.statusCode, a.body).toBe(201);
    expect(b.statusCode, b.body).toBe(201);
    expect(b.json().created_at).toBe(a.json().created_at);
    const rows = await ctx.deps.pool.query("SELECT 1 FROM scheduled_imports si WHERE si.external_account_number = 'V2-TWICE'");
    expect(rows.rowCount).toBe(1);
    const different = await schedule(accountPayload('V2', 'V2-TWICE', { billing_name: 'Someone Else' }), { schedule_window_start: start });
    expect(different.statusCode).toBe(400);
    expect(different.json()).toMatchObject({ code: 'account_import_process_already_scheduled' });
  });

  it('an account already imported answers 400 account_import_process_already_imported with account_id', async () => {
    const done = await untilStatus('V2', 'V2-1', ['PROCESSED']);
    const res = await schedule(accountPayload('V2', 'V2-1'));
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'account_import_process_already_imported', account_id: done.kraken_identifier });
  });

  it('a supplier without a default operations team answers 400 operations_team_not_found', async () => {
    const res = await schedule(accountPayload('NOTEAM', 'NT-1'));
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'operations_team_not_found' });
  });
});

describe('GET /v2/data-import/accounts/{import_supplier_code}/{external_identifier}/ (status)', () => {
  it('404 not_found for a pair with no scheduled import, in the envelope', async () => {
    const res = await statusOf('V2', 'NOBODY');
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ detail: 'The requested resource was not found.', code: 'not_found', errors: [] });
  });

  it('a key scoped to another supplier sees nothing: 404, and cannot schedule for it', async () => {
    await untilStatus('V2', 'V2-1', ['PROCESSED']);
    const other = await ctx.authHeaders({ suppliers: ['V2OTHER'] });
    const res = await get('/v2/data-import/accounts/V2/V2-1/', other);
    expect(res.statusCode).toBe(404);
    const scheduled = await post('/v2/data-import/accounts/', { payload: accountPayload('V2', 'V2-SCOPE'), task_params: {} }, other);
    expect(scheduled.statusCode).toBe(400);
    expect(scheduled.json().errors).toContainEqual(expect.objectContaining({ code: 'import_supplier_not_found', attr: 'import_supplier' }));
  });

  it('401 without a token, on every v2 route', async () => {
    expect((await get('/v2/data-import/accounts/V2/V2-1/', {})).statusCode).toBe(401);
    expect((await post('/v2/data-import/accounts/', { payload: {}, task_params: {} }, {})).statusCode).toBe(401);
    expect((await post('/v2/data-import/accounts/validate/', { payload: {} }, {})).statusCode).toBe(401);
  });
});

describe('POST /v2/data-import/accounts/validate/', () => {
  it('200 for a valid payload and nothing stored; 400 account_failed_validation at the account\'s own paths otherwise', async () => {
    const before = await ctx.tableCounts();
    const ok = await post('/v2/data-import/accounts/validate/', { payload: accountPayload('V2', 'V2-VAL') });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json()).toEqual({});
    const bad = await post('/v2/data-import/accounts/validate/', { payload: accountPayload('V2', 'V2-VAL', { billing_postcode: 'nope' }) });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ code: 'account_failed_validation' });
    expect(bad.json().errors).toContainEqual(expect.objectContaining({ attr: 'billing_postcode' }));
    const params = await post('/v2/data-import/accounts/validate/', { payload: accountPayload('V2', 'V2-VAL'), task_params: { schedule_window_end: iso(9 * DAY) } });
    expect(params.statusCode).toBe(400);
    expect(params.json().errors).toContainEqual(expect.objectContaining({ code: 'schedule_window_end_too_far_in_future', attr: 'task_params.schedule_window_end' }));
    const missing = await post('/v2/data-import/accounts/validate/', {});
    expect(missing.statusCode).toBe(400);
    expect(missing.json().errors).toContainEqual(expect.objectContaining({ code: 'required', attr: 'payload' }));
    expect(await ctx.tableCounts()).toEqual(before);
  });
});
