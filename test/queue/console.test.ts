import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operatorSession, type ConsoleSession } from '../helpers/console.js';
import { pollUntil } from '../helpers/poll.js';
import { LONG, linesOf, ndjsonOf } from './helpers.js';
import { createPipelineContext, type PipelineContext } from './setup.js';

// The console's batch pages and actions (issue 13, part 2) on a batch really migrated by the workers:
// what an operator sees, and what their retry, cancel and upload do to the rows.

const SUPPLIER = 'CONS';
const TEAM = 'Console Team';
let ctx: PipelineContext;
let op: ConsoleSession & { name: string };
let batchId: string;
const PLANTED = { billing: 'CN-BAD-EMAIL', currency: 'CN-BAD-ANOTHER' };

const items = async (id: string) =>
  ctx.deps.db.selectFrom('batch_items').select(['line', 'external_account_number', 'state', 'round', 'error']).where('batch_id', '=', id).orderBy('line').execute();

beforeAll(async () => {
  ctx = await createPipelineContext();
  await ctx.createSupplier(SUPPLIER, { documentsRoot: 'console' });
  await ctx.createTeam(TEAM);
  ctx.startWorkers();
  op = await operatorSession(ctx.app, ctx.deps.db, 'operator');
  const { ndjson } = await ctx.cohort({ count: 6, supplier: SUPPLIER, prefix: 'CN', seed: 5 });
  const lines = linesOf(ndjson);
  // Two planted mistakes with one code between them, and one line that is not JSON.
  const spoil = (ext: string) => {
    const b = JSON.parse(lines[0]!) as { account: Record<string, unknown> };
    b.account.external_account_number = ext;
    b.account.billing_email = 'not an e-mail';
    return JSON.stringify(b);
  };
  ({ batch_id: batchId } = await ctx.upload(ndjsonOf([...lines, spoil(PLANTED.billing), spoil(PLANTED.currency), '{not json']), { supplier: SUPPLIER, team: TEAM }));
  expect(await ctx.waitForEnd(batchId, LONG)).toMatchObject({ state: 'COMPLETED_WITH_ERRORS', succeeded: 6, failed: 3 });
}, LONG);
afterAll(async () => ctx?.close());

describe('a finished batch, as the console shows it', () => {
  it('lists it newest first with its supplier, state, counts and a bar per stage, filtered by supplier and state', async () => {
    const page = await op.get('/admin/');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(batchId.slice(0, 8));
    expect(page.body).toContain('COMPLETED_WITH_ERRORS');
    expect(page.body.match(/<progress /g)?.length).toBe(4);
    expect((await op.get(`/admin/?supplier=${SUPPLIER}&state=COMPLETED_WITH_ERRORS`)).body).toContain(batchId.slice(0, 8));
    expect((await op.get(`/admin/?supplier=${SUPPLIER}&state=RUNNING`)).body).not.toContain(batchId.slice(0, 8));
  });

  it('groups its failures by code with counts and an example attr, and charts completions', async () => {
    const page = await op.get(`/admin/batches/${batchId}`);
    expect(page.statusCode).toBe(200);
    const rows = [...page.body.matchAll(/<tr data-code="([^"]*)">[\s\S]*?<td class="num">(\d+)<\/td>\s*<td><code>([^<]*)<\/code>/g)].map((m) => ({ code: m[1], count: Number(m[2]), attr: m[3] }));
    expect(rows).toContainEqual({ code: 'account_failed_validation', count: 2, attr: expect.stringContaining('billing_email') });
    expect(rows.some((r) => r.count === 1)).toBe(true); // the line that is not JSON
    expect(page.body).toMatch(/<polyline data-live="chart"[^>]* points="0\.0,160\.0 [^"]+"/);
    // A finished batch has no live stream.
    expect(page.body).not.toContain('data-events=');
  });

  it('finds items by the start of their external account number, and opens the account', async () => {
    const page = await op.get(`/admin/batches/${batchId}?search=CN-BAD&state=failed`);
    expect(page.body).toContain(PLANTED.billing);
    expect(page.body).toContain(PLANTED.currency);
    expect(page.body).not.toContain('CN-000');
    const done = (await items(batchId)).find((i) => i.state === 'succeeded')!;
    const account = await op.get(`/admin/accounts/${SUPPLIER}/${encodeURIComponent(done.external_account_number!)}`);
    expect(account.statusCode).toBe(200);
    const number = (await ctx.deps.db.selectFrom('accounts').select('number').where('external_account_number', '=', done.external_account_number!).executeTakeFirstOrThrow()).number;
    expect(account.body).toContain(`<dd data-testid="service-account-number">${number}</dd>`);
    expect(account.body).toContain(batchId.slice(0, 8));
    const failed = await op.get(`/admin/accounts/${SUPPLIER}/${PLANTED.billing}`);
    expect(failed.body).toContain('Not imported');
    expect(failed.body).toContain('<code>invalid_email</code> <code class="attr">billing_email</code>');
  });

  it('downloads the failures as CSV and shows the reconciliation, balanced', async () => {
    const csv = await op.get(`/admin/batches/${batchId}/failures.csv`);
    expect(csv.statusCode).toBe(200);
    expect(csv.headers['content-type']).toMatch(/^text\/csv/);
    const lines = csv.body.trim().split('\n');
    expect(lines[0]).toBe('line,external_account_number,stage,state,code,attr,detail');
    expect(lines).toHaveLength(4);
    const recon = await op.get(`/admin/batches/${batchId}/reconciliation`);
    expect(recon.statusCode).toBe(200);
    expect(recon.body).toContain('data-testid="verdict">Balanced');
    const diff = await op.get(`/admin/batches/${batchId}/reconciliation.csv`);
    expect(diff.statusCode).toBe(200);
    expect(diff.body.trim()).toBe('line,external_account_number,service_account_number,kind,identifier,problem,file,database');
  });

  it('streams live progress as server-sent events, ending with the batch', async () => {
    const res = await op.get(`/admin/batches/${batchId}/events`, { accept: 'text/event-stream' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    const event = /event: progress\ndata: (.*)\n\n/.exec(res.body);
    expect(JSON.parse(event![1]!)).toMatchObject({ state: 'COMPLETED_WITH_ERRORS', succeeded: 6, failed: 3, total: 9, finished: true, stages: { extras: { completed: 6 } } });
  });
});

describe('acting on a batch', () => {
  it('retries one code only, behind a confirmation, as the operator', async () => {
    const confirm = await op.get(`/admin/batches/${batchId}/retry?code=account_failed_validation`);
    expect(confirm.body).toContain('Retry the 2 failed item(s) with code account_failed_validation');
    const before = await items(batchId);
    const res = await op.post(`/admin/batches/${batchId}/retry`, { code: 'account_failed_validation' });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(`/admin/batches/${batchId}`);
    await ctx.waitForEnd(batchId, LONG);
    const after = await items(batchId);
    // The two with that code ran again (a new round, failing the same way); the unparsable line did not.
    const rounds = (list: typeof before, ext: string | null) => list.find((i) => i.external_account_number === ext)!.round;
    expect(rounds(after, PLANTED.billing)).toBe(rounds(before, PLANTED.billing) + 1);
    expect(rounds(after, PLANTED.currency)).toBe(rounds(before, PLANTED.currency) + 1);
    expect(after.filter((i) => i.external_account_number === null).map((i) => i.round)).toEqual(before.filter((i) => i.external_account_number === null).map((i) => i.round));
    const line = await ctx.deps.db.selectFrom('audit_log').selectAll().where('action', '=', 'batch.retry').where('target', '=', batchId).executeTakeFirstOrThrow();
    expect(line).toMatchObject({ actor_kind: 'operator', actor: op.name, detail: { requeued: 2, code: 'account_failed_validation' } });
  });

  it('uploads a cohort from the form, refuses one without the form token, and cancels behind a confirmation', async () => {
    const { ndjson } = await ctx.cohort({ count: 3, supplier: SUPPLIER, prefix: 'UP', seed: 9 });
    const multipart = (csrf: string | undefined) => {
      const boundary = '----console-test';
      const part = (name: string, value: string) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
      const body =
        (csrf === undefined ? '' : part('_csrf', csrf)) +
        part('import_supplier', SUPPLIER) +
        part('operations_team_name', TEAM) +
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="cohort.ndjson"\r\nContent-Type: application/x-ndjson\r\n\r\n${ndjson}\r\n--${boundary}--\r\n`;
      return { payload: body, headers: { cookie: op.cookie, 'content-type': `multipart/form-data; boundary=${boundary}`, accept: 'text/html' } };
    };
    const batchesBefore = await ctx.deps.db.selectFrom('batches').select('id').execute();
    const refused = await ctx.app.inject({ method: 'POST', url: '/admin/batches', ...multipart(undefined) });
    expect(refused.statusCode).toBe(403);
    expect(await ctx.deps.db.selectFrom('batches').select('id').execute()).toHaveLength(batchesBefore.length);

    const res = await ctx.app.inject({ method: 'POST', url: '/admin/batches', ...multipart(await op.token('/admin/batches/new')) });
    expect(res.statusCode).toBe(303);
    const id = /\/admin\/batches\/([0-9a-f-]{36})$/.exec(res.headers.location as string)![1]!;
    expect(await ctx.waitForEnd(id, LONG)).toMatchObject({ state: 'COMPLETED', succeeded: 3, total_items: 3 });
    const upload = await ctx.deps.db.selectFrom('audit_log').selectAll().where('action', '=', 'batch.upload').where('target', '=', id).executeTakeFirstOrThrow();
    expect(upload).toMatchObject({ actor_kind: 'operator', actor: op.name });

    // Over a real connection, a file far larger than a socket's buffers (the form is read as it arrives).
    const { ndjson: big } = await ctx.cohort({ count: 24, supplier: SUPPLIER, prefix: 'BG', seed: 11 });
    expect(Buffer.byteLength(big)).toBeGreaterThan(128 * 1024);
    const base = await ctx.app.listen({ host: '127.0.0.1', port: 0 });
    const form = new FormData();
    form.set('_csrf', await op.token('/admin/batches/new'));
    form.set('import_supplier', SUPPLIER);
    form.set('operations_team_name', TEAM);
    form.set('file', new Blob([big], { type: 'application/x-ndjson' }), 'big.ndjson');
    const sent = await fetch(`${base}/admin/batches`, { method: 'POST', body: form, headers: { cookie: op.cookie }, redirect: 'manual', signal: AbortSignal.timeout(20_000) });
    expect(sent.status).toBe(303);
    const bigId = /([0-9a-f-]{36})$/.exec(sent.headers.get('location')!)![1]!;
    expect(await ctx.waitForEnd(bigId, LONG)).toMatchObject({ state: 'COMPLETED', succeeded: 24, total_items: 24 });

    // Cancel a batch whose workers are stopped, so it is still running when the operator confirms.
    const { ndjson: more } = await ctx.cohort({ count: 2, supplier: SUPPLIER, prefix: 'CX', seed: 10 });
    const paused = ctx.deps.queues.validate;
    await paused.pause();
    try {
      const { batch_id: running } = await ctx.upload(more, { supplier: SUPPLIER, team: TEAM });
      expect((await op.get(`/admin/batches/${running}`)).body).toContain(`data-events="/admin/batches/${running}/events"`);
      expect((await op.get(`/admin/batches/${running}/cancel`)).body).toContain(`Cancel batch ${running}?`);
      expect((await op.post(`/admin/batches/${running}/cancel`, {})).statusCode).toBe(303);
      await pollUntil(async () => (await ctx.status(running)).state === 'CANCELLED', { timeoutMs: LONG, what: 'the batch to be cancelled' });
    } finally {
      await paused.resume();
    }
  });
});
