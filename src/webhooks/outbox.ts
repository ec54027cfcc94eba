import { sql, type RawBuilder } from 'kysely';
import type { Executor } from '../db/database.js';

// The webhook outbox: the INSERT … SELECT that writes an event's deliveries, one per enabled webhook
// of the supplier subscribed to it. They run inside the statement (or transaction) that records the
// event itself (src/pipeline/items.repository.ts), so an event that committed has its deliveries and
// one rolled back has none; the relay sends them after the commit (src/queue/webhook-relay.ts).
// Each is one statement for a whole set, whatever its size. Dry-run batches send nothing.
//
// Event ids are deterministic, and (webhook_id, event_id) is unique: recording an event twice can
// never make a second delivery.

/** ISO 8601 in UTC with milliseconds, as the payloads carry times. */
const iso = (t: RawBuilder<unknown>) => sql`to_char(${t} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * batch.finished deliveries for the batches in `source` (a CTE of just-closed batches with id,
 * import_supplier_id, dry_run, state, total_items, created_at and finished_at). A batch finishes again
 * only after a retry, which raises some item's round: the sum of rounds tells its finishes apart.
 */
export const insertBatchFinishedDeliveries = (source: string): RawBuilder<unknown> => sql`
  INSERT INTO webhook_deliveries (webhook_id, supplier_id, batch_id, event_id, event_type, payload)
  SELECT w.id, f.import_supplier_id, f.id, e.event_id, 'batch.finished',
    jsonb_build_object(
      'id', e.event_id,
      'type', 'batch.finished',
      'timestamp', ${iso(sql`f.finished_at`)},
      'data', jsonb_build_object(
        'import_supplier', s.code,
        'batch_id', f.id,
        'state', f.state,
        'created_at', ${iso(sql`f.created_at`)},
        'finished_at', ${iso(sql`f.finished_at`)},
        'counts', jsonb_build_object('total', f.total_items, 'succeeded', c.succeeded, 'failed', c.failed, 'cancelled', c.cancelled)))
  FROM ${sql.table(source)} f
  JOIN import_suppliers s ON s.id = f.import_supplier_id
  JOIN supplier_webhooks w ON w.supplier_id = f.import_supplier_id AND w.disabled_at IS NULL AND 'batch.finished' = ANY (w.events)
  CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE i.state = 'succeeded')::int AS succeeded,
           count(*) FILTER (WHERE i.state = 'failed')::int AS failed,
           count(*) FILTER (WHERE i.state = 'cancelled')::int AS cancelled,
           coalesce(sum(i.round), 0) AS rounds
    FROM batch_items i WHERE i.batch_id = f.id) c
  CROSS JOIN LATERAL (SELECT 'batch.finished.' || f.id || '.' || c.rounds AS event_id) e
  WHERE NOT f.dry_run
  ON CONFLICT (webhook_id, event_id) DO NOTHING`;

/**
 * account.failed deliveries for the items in `source` (a CTE of just-recorded items with batch_id,
 * line, round, stage, state, external_account_number, error, import_supplier_id and dry_run): those
 * whose state is now failed. An item fails at most once a round, hence the event id.
 */
export const insertAccountFailedDeliveries = (source: string): RawBuilder<unknown> => sql`
  INSERT INTO webhook_deliveries (webhook_id, supplier_id, batch_id, event_id, event_type, payload)
  SELECT w.id, r.import_supplier_id, r.batch_id, e.event_id, 'account.failed',
    jsonb_build_object(
      'id', e.event_id,
      'type', 'account.failed',
      'timestamp', ${iso(sql`now()`)},
      'data', jsonb_build_object(
        'import_supplier', s.code,
        'batch_id', r.batch_id,
        'line', r.line,
        'external_account_number', r.external_account_number,
        'stage', r.stage,
        'error', r.error))
  FROM ${sql.table(source)} r
  JOIN import_suppliers s ON s.id = r.import_supplier_id
  JOIN supplier_webhooks w ON w.supplier_id = r.import_supplier_id AND w.disabled_at IS NULL AND 'account.failed' = ANY (w.events)
  CROSS JOIN LATERAL (SELECT 'account.failed.' || r.batch_id || '.' || r.line || '.' || r.round AS event_id) e
  WHERE r.state = 'failed' AND NOT r.dry_run
  ON CONFLICT (webhook_id, event_id) DO NOTHING`;

/**
 * account.failed deliveries for items already recorded failed, read back from batch_items: for the
 * paths that fail an item one at a time (a transient failure on its job's last attempt). Run it in
 * the transaction that failed them; a repeat adds nothing.
 */
export async function recordAccountFailedEvents(ex: Executor, items: ReadonlyArray<{ batchId: string; line: number; round: number }>): Promise<void> {
  if (items.length === 0) return;
  await sql`
    WITH failed AS (
      SELECT i.batch_id, i.line, i.round, i.stage, i.state, i.external_account_number, i.error, b.import_supplier_id, b.dry_run
      FROM unnest(${items.map((i) => i.batchId)}::uuid[], ${items.map((i) => i.line)}::int[], ${items.map((i) => i.round)}::int[]) AS v(batch_id, line, round)
      JOIN batch_items i ON i.batch_id = v.batch_id AND i.line = v.line AND i.round = v.round
      JOIN batches b ON b.id = i.batch_id
    )
    ${insertAccountFailedDeliveries('failed')}`.execute(ex);
}
