import { randomBytes } from 'node:crypto';
import { recordAudit } from '../audit/audit-log.js';
import type { Executor, WebhookEventType } from '../db/database.js';
import { badRequest, notFound } from '../errors.js';
import { findSupplierByCode } from '../imports/suppliers/supplier.repository.js';
import { disableWebhook, insertWebhook, listWebhooks, type WebhookRow } from './webhooks.repository.js';

// A supplier's webhooks: the rules for adding one (its URL, its events, its secret) and disabling
// it, each change with its audit line in the caller's transaction. docs/operators.md, "Webhooks".

export const WEBHOOK_EVENTS = ['batch.finished', 'account.failed'] as const satisfies readonly WebhookEventType[];
export const isWebhookEvent = (s: string): s is WebhookEventType => (WEBHOOK_EVENTS as readonly string[]).includes(s);

/** Long enough for any real endpoint with a token in its path; the table's CHECK says the same. */
export const MAX_WEBHOOK_URL_LENGTH = 2048;

/**
 * What is wrong with a webhook URL, or null: absolute http(s) with a host, no credentials (they would
 * be shown in every listing), at most 2,048 characters. Production sends only over https: the
 * payloads name accounts, and the signature proves who sent them, not that nobody read them.
 */
export function webhookUrlProblem(url: string, nodeEnv: string): string | null {
  if (url.length > MAX_WEBHOOK_URL_LENGTH) return `a webhook URL is at most ${MAX_WEBHOOK_URL_LENGTH} characters`;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `'${url}' is not an absolute URL`;
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return 'a webhook URL must be http:// or https://';
  if (nodeEnv === 'production' && u.protocol !== 'https:') return 'in production a webhook URL must be https://';
  if (u.username !== '' || u.password !== '') return 'a webhook URL must not carry credentials; put a token in its path or query instead';
  if (u.hostname === '') return 'a webhook URL needs a host';
  return null;
}

/** The events named in a comma-separated list (duplicates dropped), or a problem. */
export function parseWebhookEvents(list: string): { events: WebhookEventType[] } | { problem: string } {
  const names = [...new Set(list.split(',').map((s) => s.trim()).filter((s) => s !== ''))];
  const unknown = names.filter((n) => !isWebhookEvent(n));
  if (names.length === 0 || unknown.length > 0) return { problem: `events are ${WEBHOOK_EVENTS.join(', ')} (comma-separated)${unknown.length > 0 ? `, not ${unknown.join(', ')}` : ''}` };
  return { events: names as WebhookEventType[] };
}

/** A Standard Webhooks signing secret: 32 random bytes, `whsec_<base64>`. */
export const generateWebhookSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

/** The supplier's id by its code; 404 import_supplier_not_found otherwise. */
export async function supplierIdOf(ex: Executor, code: string): Promise<{ id: string; code: string }> {
  const s = await findSupplierByCode(ex, code);
  if (!s) throw notFound('import_supplier_not_found', `Import supplier '${code}' does not exist.`);
  return s;
}

/** Adds a webhook and its audit line; answers it with its secret, which is never shown again. */
export async function addWebhook(
  trx: Executor,
  input: { supplierCode: string; url: string; events: readonly WebhookEventType[]; nodeEnv: string },
): Promise<WebhookRow & { secret: string }> {
  const problem = webhookUrlProblem(input.url, input.nodeEnv);
  if (problem) throw badRequest('invalid_webhook_url', problem, 'url');
  if (input.events.length === 0) throw badRequest('invalid_webhook_events', 'a webhook needs at least one event', 'events');
  const supplier = await supplierIdOf(trx, input.supplierCode);
  const secret = generateWebhookSecret();
  const row = await insertWebhook(trx, { supplierId: supplier.id, url: input.url, secret, events: input.events });
  // Its URL and events, never its secret.
  await recordAudit(trx, { action: 'supplier.webhook_add', targetKind: 'supplier', target: supplier.code, detail: { webhook_id: row.id, url: row.url, events: row.events } });
  return { ...row, secret };
}

/** Disables one of the supplier's enabled webhooks, with its audit line. */
export async function disableSupplierWebhook(trx: Executor, input: { supplierCode: string; id: string; now: Date }): Promise<WebhookRow> {
  const supplier = await supplierIdOf(trx, input.supplierCode);
  const row = /^[0-9a-f-]{36}$/i.test(input.id) ? await disableWebhook(trx, supplier.id, input.id, input.now) : undefined;
  if (!row) throw notFound('webhook_not_found', `Supplier '${supplier.code}' has no enabled webhook '${input.id}'.`);
  await recordAudit(trx, { action: 'supplier.webhook_disable', targetKind: 'supplier', target: supplier.code, detail: { webhook_id: row.id, url: row.url } });
  return row;
}

/** A supplier's webhooks by its code. */
export async function supplierWebhooks(db: Executor, supplierCode: string): Promise<WebhookRow[]> {
  return listWebhooks(db, (await supplierIdOf(db, supplierCode)).id);
}
