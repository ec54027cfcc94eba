import type { Executor } from '../db/database.js';
import { PACKAGE_VERSION } from '../project-root.js';
import { findDeliveryToSend, giveUpDelivery, recordAttempt } from './deliveries.repository.js';
import { sendWebhook } from './send.js';

// One attempt at one delivery, recorded on its row: what the queue's webhook processor runs. The row
// is the truth; the job only says which row and which attempt.

export type AttemptOutcome =
  /** 2xx: delivered. */
  | { kind: 'delivered' }
  /** Nothing to do: delivered or given up already (a repeated job), or gone. */
  | { kind: 'skipped' }
  /** Failed for good: refused by the receiver, its webhook disabled, or the last attempt failed. */
  | { kind: 'failed'; error: string }
  /** Failed this time; another attempt follows. */
  | { kind: 'retry'; error: string };

export interface AttemptOptions {
  timeoutMs: number;
  /** No attempt follows this one: a retryable failure fails the delivery. */
  lastAttempt: boolean;
  now: () => Date;
}

export async function attemptDelivery(db: Executor, deliveryId: string, opts: AttemptOptions): Promise<AttemptOutcome> {
  const d = await findDeliveryToSend(db, deliveryId);
  if (!d || d.state !== 'pending') return { kind: 'skipped' };
  if (d.disabled_at !== null) {
    await giveUpDelivery(db, d.id, 'webhook disabled before delivery');
    return { kind: 'failed', error: 'webhook disabled' };
  }
  const sent = await sendWebhook({
    url: d.url,
    secret: d.secret,
    eventId: d.event_id,
    // jsonb gives its keys back in one order, so a retry sends (and signs) the same bytes.
    body: JSON.stringify(d.payload),
    timeoutMs: opts.timeoutMs,
    now: opts.now(),
    userAgent: `data-import-service/${PACKAGE_VERSION} webhooks`,
  });
  const record = (state: 'pending' | 'delivered' | 'failed', error: string | null) =>
    recordAttempt(db, d.id, { state, statusCode: sent.statusCode, error, response: sent.response });
  switch (sent.kind) {
    case 'delivered':
      await record('delivered', null);
      return { kind: 'delivered' };
    case 'refused':
      await record('failed', sent.error);
      return { kind: 'failed', error: sent.error };
    case 'retry':
      await record(opts.lastAttempt ? 'failed' : 'pending', sent.error);
      return opts.lastAttempt ? { kind: 'failed', error: sent.error } : { kind: 'retry', error: sent.error };
  }
}
