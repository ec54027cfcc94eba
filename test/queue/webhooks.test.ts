import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookEventType } from '../../src/db/database.js';
import { QUEUE_NAMES } from '../../src/queue/contract.js';
import { startWorkers, type WorkerSet } from '../../src/queue/workers.js';
import { listDeliveries, type DeliveryRow } from '../../src/webhooks/deliveries.repository.js';
import { RESPONSE_EXCERPT_BYTES, sendWebhook } from '../../src/webhooks/send.js';
import { addWebhook, disableSupplierWebhook, supplierIdOf } from '../../src/webhooks/webhooks.service.js';
import { pollUntil } from '../helpers/poll.js';
import { LONG, SMALL_POOL, batchItems, ndjsonOf } from './helpers.js';
import { createPipelineContext, type PipelineContext } from './setup.js';

// Completion webhooks (issue 13) against a real HTTP receiver on loopback, which checks every
// signature with standardwebhooks' own verify. Deliveries run through the real webhooks queue.

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}
/** How the receiver answers, by the first segment of the path. */
type Mode = 'ok' | 'flaky' | 'gone' | 'slow' | 'redirect';

const TEAM = 'Hook Team';
/** Short enough for a test: a slow receiver times out, and a retry follows within a second. */
const SETTINGS = { attempts: 3, backoffMs: 100, timeoutMs: 400, sweepIntervalMs: 0, concurrency: 5 };

let ctx: PipelineContext;
let workers: WorkerSet;
let receiver: Server;
let base: string;
const received: Received[] = [];
/** webhook-ids the flaky path has already refused once. */
const refusedOnce = new Set<string>();
const secrets = new Map<string, string>();

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    req.on('end', () => {
      const path = req.url ?? '';
      received.push({ path, headers: req.headers, body });
      const mode = path.split('/')[1] as Mode;
      const id = String(req.headers['webhook-id']);
      if (mode === 'ok') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('thanks');
      if (mode === 'gone') return void res.writeHead(410).end('this endpoint is gone');
      if (mode === 'redirect') return void res.writeHead(302, { location: `${base}/ok/elsewhere` }).end();
      if (mode === 'flaky') {
        if (refusedOnce.has(id)) return void res.writeHead(204).end();
        refusedOnce.add(id);
        return void res.writeHead(500).end('x'.repeat(5000));
      }
      // slow: answers after the sender has given up.
      setTimeout(() => res.writeHead(200).end('late'), 2_000).unref();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`;

  ctx = await createPipelineContext({ deps: { dbPoolSize: SMALL_POOL } });
  await ctx.createTeam(TEAM);
  workers = startWorkers(ctx.deps, ctx.built.services, { queues: QUEUE_NAMES, webhooks: SETTINGS });
}, 120_000);

afterAll(async () => {
  await workers?.close(5_000);
  await ctx?.close();
  receiver?.closeAllConnections();
  await new Promise<void>((resolve) => receiver?.close(() => resolve()));
});

/** A supplier with one webhook at `/<mode>/<code>` (none for mode null); answers the webhook's id. */
async function supplierWith(code: string, mode: Mode | null, events: WebhookEventType[] = ['batch.finished', 'account.failed']): Promise<string | null> {
  await ctx.createSupplier(code, { documentsRoot: code.toLowerCase() });
  if (mode === null) return null;
  const w = await addWebhook(ctx.deps.db, { supplierCode: code, url: `${base}/${mode}/${code}`, events, nodeEnv: 'test' });
  secrets.set(`/${mode}/${code}`, w.secret);
  return w.id;
}

/** Uploads `count` accounts of which the lines in `invalid` (1-based) fail validation; waits for the batch to end. */
async function runBatch(code: string, count: number, invalid: readonly number[], opts: { dryRun?: boolean } = {}) {
  const cohort = await ctx.cohort({ count, supplier: code, prefix: code, seed: 7 });
  const bundles = cohort.accounts.map((a) => a.bundle);
  for (const line of invalid) bundles[line - 1]!.account.billing_postcode = 'XX1 1XXX';
  const { batch_id } = await ctx.upload(ndjsonOf(bundles.map((b) => JSON.stringify(b))), { supplier: code, team: TEAM, ...(opts.dryRun ? { dryRun: true } : {}) });
  const status = await ctx.waitForEnd(batch_id, LONG);
  return { batchId: batch_id, status, bundles };
}

const deliveriesOf = async (batchId: string): Promise<DeliveryRow[]> => listDeliveries(ctx.deps.db, { batchId, limit: 1000 });

/** Waits until every delivery of the batch has settled (none pending), and answers them. */
const settled = (batchId: string, expected: number): Promise<DeliveryRow[]> =>
  pollUntil(
    async () => {
      const rows = await deliveriesOf(batchId);
      return rows.length === expected && rows.every((d) => d.state !== 'pending') ? rows : null;
    },
    { timeoutMs: LONG, intervalMs: 50, what: `the ${expected} deliveries of batch ${batchId} to settle` },
  );

/** What the receiver got at a path, each checked with the webhook's secret (throws on a bad signature). */
function receivedAt(path: string): Array<Received & { event: { id: string; type: string; timestamp: string; data: Record<string, unknown> } }> {
  const secret = secrets.get(path)!;
  return received
    .filter((r) => r.path === path)
    .map((r) => ({ ...r, event: new Webhook(secret).verify(r.body, r.headers as Record<string, string>) as never }));
}

describe('delivered events', () => {
  it('sends batch.finished once, with its state and counts, and account.failed for each failed account, all signed', { timeout: LONG }, async () => {
    await supplierWith('HOOKOK', 'ok');
    const invalid = [2, 5];
    const { batchId, status } = await runBatch('HOOKOK', 6, invalid);
    expect(status).toMatchObject({ state: 'COMPLETED_WITH_ERRORS', succeeded: 4, failed: 2 });
    const rows = await settled(batchId, 3);
    expect(rows.every((d) => d.state === 'delivered' && d.attempts === 1 && d.last_status_code === 200 && d.last_response === 'thanks')).toBe(true);
    expect(rows.every((d) => d.delivered_at !== null && d.url === `${base}/ok/HOOKOK`)).toBe(true);

    const got = receivedAt('/ok/HOOKOK');
    // Once each: no event twice.
    expect(got).toHaveLength(3);
    expect(new Set(got.map((g) => g.headers['webhook-id'])).size).toBe(3);
    for (const g of got) {
      expect(g.headers['content-type']).toBe('application/json');
      expect(g.headers['webhook-signature']).toMatch(/^v1,/);
      expect(g.event.id).toBe(g.headers['webhook-id']);
    }

    const finished = got.filter((g) => g.event.type === 'batch.finished');
    expect(finished).toHaveLength(1);
    expect(finished[0]!.event.data).toEqual({
      import_supplier: 'HOOKOK',
      batch_id: batchId,
      state: 'COMPLETED_WITH_ERRORS',
      created_at: expect.stringMatching(/Z$/),
      finished_at: expect.stringMatching(/Z$/),
      counts: { total: 6, succeeded: 4, failed: 2, cancelled: 0 },
    });
    expect(finished[0]!.event.timestamp).toBe(finished[0]!.event.data.finished_at);

    const failedItems = await batchItems(ctx, batchId, 'failed');
    const failed = got.filter((g) => g.event.type === 'account.failed').map((g) => g.event.data);
    expect(failed.map((d) => d.line).sort()).toEqual(invalid);
    for (const d of failed) {
      const item = failedItems.find((i) => i.line === d.line)!;
      expect(d).toEqual({ import_supplier: 'HOOKOK', batch_id: batchId, line: item.line, external_account_number: item.external_account_number, stage: 'validate', error: item.error });
      expect(item.error!.code).toBe('account_failed_validation');
    }
  });

  it('retries after a 500 and records both attempts; the same event id and a fresh signature each time', { timeout: LONG }, async () => {
    await supplierWith('HOOKFLAKY', 'flaky', ['batch.finished']);
    const { batchId } = await runBatch('HOOKFLAKY', 2, []);
    const [row] = await settled(batchId, 1);
    expect(row).toMatchObject({ event_type: 'batch.finished', state: 'delivered', attempts: 2, last_status_code: 204, last_error: null });
    const got = receivedAt('/flaky/HOOKFLAKY');
    expect(got).toHaveLength(2);
    expect(got[0]!.headers['webhook-id']).toBe(got[1]!.headers['webhook-id']);
    expect(got[0]!.body).toBe(got[1]!.body);
  });

  it('keeps only the first kilobyte of an answer, and does not follow redirects', async () => {
    const send = (url: string) =>
      sendWebhook({ url, secret: 'whsec_' + Buffer.from('k'.repeat(32)).toString('base64'), eventId: 'evt-excerpt', body: '{}', timeoutMs: 2_000, now: new Date(), userAgent: 'test' });
    // The flaky path answers 500 with 5,000 bytes the first time.
    expect(await send(`${base}/flaky/EXCERPT`)).toEqual({ kind: 'retry', statusCode: 500, response: 'x'.repeat(RESPONSE_EXCERPT_BYTES), error: 'HTTP 500' });
    expect(await send(`${base}/redirect/EXCERPT`)).toMatchObject({ kind: 'retry', statusCode: 302, error: 'HTTP 302 (redirects are not followed)' });
    expect(received.filter((r) => r.path.startsWith('/ok/elsewhere'))).toEqual([]);
  });
});

describe('failures', () => {
  it('gives up at once on a 410, with no retry', { timeout: LONG }, async () => {
    await supplierWith('HOOKGONE', 'gone', ['batch.finished']);
    const { batchId } = await runBatch('HOOKGONE', 1, []);
    const [row] = await settled(batchId, 1);
    expect(row).toMatchObject({ state: 'failed', attempts: 1, last_status_code: 410, last_error: 'HTTP 410', last_response: 'this endpoint is gone', delivered_at: null });
    const job = await ctx.deps.queues.webhooks.getJob(row!.id);
    expect(job?.attemptsMade).toBe(1);
    expect(await job?.getState()).toBe('failed');
    expect(received.filter((r) => r.path === '/gone/HOOKGONE')).toHaveLength(1);
  });

  it('retries a receiver that does not answer in time, then fails the delivery after the last attempt', { timeout: LONG }, async () => {
    await supplierWith('HOOKSLOW', 'slow', ['batch.finished']);
    const { batchId } = await runBatch('HOOKSLOW', 1, []);
    const [row] = await settled(batchId, 1);
    expect(row).toMatchObject({ state: 'failed', attempts: SETTINGS.attempts, last_status_code: null, last_error: `timed out after ${SETTINGS.timeoutMs} ms` });
    expect(received.filter((r) => r.path === '/slow/HOOKSLOW')).toHaveLength(SETTINGS.attempts);
  });
});

describe('nothing to send', () => {
  it('writes no delivery for a supplier without webhooks, a dry run, or a disabled webhook', { timeout: LONG }, async () => {
    await supplierWith('HOOKNONE', null);
    const none = await runBatch('HOOKNONE', 3, [1]);

    await supplierWith('HOOKDRY', 'ok');
    const dry = await runBatch('HOOKDRY', 3, [1], { dryRun: true });
    expect(dry.status).toMatchObject({ state: 'COMPLETED_WITH_ERRORS', failed: 1 });

    const disabledId = await supplierWith('HOOKOFF', 'ok');
    await disableSupplierWebhook(ctx.deps.db, { supplierCode: 'HOOKOFF', id: disabledId!, now: new Date() });
    const off = await runBatch('HOOKOFF', 3, [1]);

    for (const b of [none, dry, off]) expect(await deliveriesOf(b.batchId)).toEqual([]);
    for (const code of ['HOOKNONE', 'HOOKDRY', 'HOOKOFF']) {
      const s = await supplierIdOf(ctx.deps.db, code);
      expect(await listDeliveries(ctx.deps.db, { supplierId: s.id, limit: 10 }), code).toEqual([]);
    }
    expect(received.filter((r) => /HOOK(NONE|DRY|OFF)/.test(r.path))).toEqual([]);
  });
});

describe('the sweep', () => {
  it('enqueues a pending delivery whose job was lost, and it is delivered exactly once', { timeout: LONG }, async () => {
    const webhookId = (await supplierWith('HOOKSWEEP', 'ok', ['batch.finished']))!;
    const { batchId } = await runBatch('HOOKSWEEP', 1, []);
    await settled(batchId, 1);
    const supplier = await supplierIdOf(ctx.deps.db, 'HOOKSWEEP');
    // A delivery the relay handed to the queue whose job Redis then lost: enqueued, pending, no job.
    // (Written as the outbox would have, with its own event id, so it differs from the batch's.)
    const eventId = `batch.finished.${batchId}.lost`;
    const payload = { id: eventId, type: 'batch.finished', timestamp: new Date().toISOString(), data: { batch_id: batchId } };
    const { id } = await ctx.deps.db
      .insertInto('webhook_deliveries')
      .values({ webhook_id: webhookId, supplier_id: supplier.id, batch_id: batchId, event_id: eventId, event_type: 'batch.finished', payload: JSON.stringify(payload), enqueued_at: sql<Date>`now()` })
      .returning('id')
      .executeTakeFirstOrThrow();
    expect(await ctx.deps.queues.webhooks.getJob(id)).toBeUndefined();

    expect(await workers.webhookRelay!.sweep()).toBe(1);
    const rows = await settled(batchId, 2);
    expect(rows.find((r) => r.id === id)).toMatchObject({ state: 'delivered', attempts: 1 });
    // Swept again: nothing pending, nothing enqueued, nothing sent twice.
    expect(await workers.webhookRelay!.sweep()).toBe(0);
    const got = receivedAt('/ok/HOOKSWEEP');
    expect(got.filter((g) => g.event.id === eventId)).toHaveLength(1);
    expect(got).toHaveLength(2);
  });
});
