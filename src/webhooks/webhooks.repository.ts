import type { Executor, WebhookEventType } from '../db/database.js';

// Every statement on supplier_webhooks. The secret is written here and read only by the delivery
// worker (deliveries.repository.ts): nothing that lists webhooks selects it.

/** A webhook as operators see it: never its secret. */
export interface WebhookRow {
  id: string;
  url: string;
  events: WebhookEventType[];
  created_at: Date;
  disabled_at: Date | null;
}

export async function insertWebhook(ex: Executor, w: { supplierId: string; url: string; secret: string; events: readonly WebhookEventType[] }): Promise<WebhookRow> {
  return ex
    .insertInto('supplier_webhooks')
    .values({ supplier_id: w.supplierId, url: w.url, secret: w.secret, events: [...w.events] })
    .returning(['id', 'url', 'events', 'created_at', 'disabled_at'])
    .executeTakeFirstOrThrow();
}

/** A supplier's webhooks, oldest first, enabled and disabled. */
export async function listWebhooks(db: Executor, supplierId: string): Promise<WebhookRow[]> {
  return db
    .selectFrom('supplier_webhooks')
    .select(['id', 'url', 'events', 'created_at', 'disabled_at'])
    .where('supplier_id', '=', supplierId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/**
 * Disables one of the supplier's webhooks: no new deliveries are written for it, and its pending
 * ones are given up when their job runs. Answers the webhook, or undefined when the supplier has no
 * enabled webhook with that id.
 */
export async function disableWebhook(ex: Executor, supplierId: string, id: string, now: Date): Promise<WebhookRow | undefined> {
  return ex
    .updateTable('supplier_webhooks')
    .set({ disabled_at: now })
    .where('id', '=', id)
    .where('supplier_id', '=', supplierId)
    .where('disabled_at', 'is', null)
    .returning(['id', 'url', 'events', 'created_at', 'disabled_at'])
    .executeTakeFirst();
}
