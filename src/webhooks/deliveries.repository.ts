import { sql } from 'kysely';
import type { Executor, WebhookDeliveryState, WebhookEventType } from '../db/database.js';

// Every statement on webhook_deliveries but the outbox's inserts (outbox.ts, run by the pipeline).
// The console and importctl read through listWebhooks and listDeliveries.

export { listWebhooks, type WebhookRow } from './webhooks.repository.js';

/** A delivery as operators see it: the event, where it goes, and what its last attempt got back. */
export interface DeliveryRow {
  id: string;
  webhook_id: string;
  url: string;
  batch_id: string | null;
  event_id: string;
  event_type: WebhookEventType;
  state: WebhookDeliveryState;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  /** The start of the receiver's last answer (about 1 KB). */
  last_response: string | null;
  created_at: Date;
  last_attempt_at: Date | null;
  delivered_at: Date | null;
}

/** Deliveries newest first, of a supplier, of a batch, or both; at most `limit`. */
export async function listDeliveries(db: Executor, opts: { supplierId?: string; batchId?: string; limit: number }): Promise<DeliveryRow[]> {
  return db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('supplier_webhooks as w', 'w.id', 'd.webhook_id')
    .select([
      'd.id',
      'd.webhook_id',
      'w.url',
      'd.batch_id',
      'd.event_id',
      'd.event_type',
      'd.state',
      'd.attempts',
      'd.last_status_code',
      'd.last_error',
      'd.last_response',
      'd.created_at',
      'd.last_attempt_at',
      'd.delivered_at',
    ])
    .$if(opts.supplierId !== undefined, (q) => q.where('d.supplier_id', '=', opts.supplierId!))
    .$if(opts.batchId !== undefined, (q) => q.where('d.batch_id', '=', opts.batchId!))
    .orderBy('d.created_at', 'desc')
    .orderBy('d.id', 'desc')
    .limit(opts.limit)
    .execute();
}

/** What one attempt needs: the event and its webhook (with the secret: for signing only, never logged). */
export interface DeliveryToSend {
  id: string;
  state: WebhookDeliveryState;
  event_id: string;
  payload: unknown;
  url: string;
  secret: string;
  disabled_at: Date | null;
}

export async function findDeliveryToSend(db: Executor, id: string): Promise<DeliveryToSend | undefined> {
  return db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('supplier_webhooks as w', 'w.id', 'd.webhook_id')
    .select(['d.id', 'd.state', 'd.event_id', 'd.payload', 'w.url', 'w.secret', 'w.disabled_at'])
    .where('d.id', '=', id)
    .executeTakeFirst();
}

/** One attempt's outcome, as recorded on its delivery. */
export interface AttemptRecord {
  /** The delivery's state after this attempt: pending while a retry follows. */
  state: WebhookDeliveryState;
  statusCode: number | null;
  error: string | null;
  response: string | null;
}

/** Records an attempt on a pending delivery; answers false when it was not pending any more (another run settled it). */
export async function recordAttempt(db: Executor, id: string, a: AttemptRecord): Promise<boolean> {
  const r = await db
    .updateTable('webhook_deliveries')
    .set({
      state: a.state,
      attempts: sql`attempts + 1`,
      last_status_code: a.statusCode,
      last_error: a.error,
      last_response: a.response,
      last_attempt_at: sql`now()`,
      ...(a.state === 'delivered' ? { delivered_at: sql`now()` } : {}),
    })
    .where('id', '=', id)
    .where('state', '=', 'pending')
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

/** Gives up a pending delivery without sending it (its webhook was disabled meanwhile). */
export async function giveUpDelivery(db: Executor, id: string, reason: string): Promise<void> {
  await db.updateTable('webhook_deliveries').set({ state: 'failed', last_error: reason }).where('id', '=', id).where('state', '=', 'pending').execute();
}

/** Pending deliveries the relay has not handed to the queue yet, oldest first. */
export async function listUnenqueued(db: Executor, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('state', '=', 'pending')
    .where('enqueued_at', 'is', null)
    .orderBy('created_at')
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

export async function markEnqueued(db: Executor, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await db.updateTable('webhook_deliveries').set({ enqueued_at: sql`now()` }).where('id', 'in', [...ids]).where('enqueued_at', 'is', null).execute();
}

/** One page of every pending delivery, by id after `afterId` (the sweep's walk). */
export async function listPending(db: Executor, afterId: string | null, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('state', '=', 'pending')
    .$if(afterId !== null, (q) => q.where('id', '>', afterId!))
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}
