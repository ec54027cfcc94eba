import { sql } from 'kysely';
import type { Executor } from '../db/database.js';
import { eventOutcome, isEventType, MARKABLE, OPEN_STATUSES, WITHDRAWABLE, type MeterPointStatus } from './states.js';
import type { GatewayEvent, RegistrationRequest } from './gateway-client.js';

// Every statement on the registration tables and on meter_points' registration columns.

export interface MarkResult {
  meter_point_id: string;
  mpxn: string;
  /** The status after marking: UNDERGOING_REGISTRATION when this call started an attempt. */
  status: MeterPointStatus;
  /** The new attempt's request id when this call started one; null when it started nothing. */
  request_id: string | null;
}

/**
 * Marks every meter point of these accounts for registration, in one statement: each in a status
 * that allows a new attempt (MARKABLE) gets one (a new request id, UNDERGOING_REGISTRATION, a row in
 * registration_attempts and its history line), or only those in `from` (a subset of MARKABLE: a re-send
 * of the failed ones); the others are answered as they are. The rows are
 * locked while this runs, so two markings at once start one attempt, never two.
 */
export async function markMeterPoints(ex: Executor, accountIds: readonly string[], from: readonly MeterPointStatus[] = MARKABLE): Promise<MarkResult[]> {
  if (accountIds.length === 0) return [];
  const { rows } = await sql<MarkResult & { account_id: string }>`
    WITH target AS (
      SELECT id, account_id, identifier, registration_status FROM meter_points
      WHERE account_id = ANY(${[...accountIds]}::bigint[])
      ORDER BY id
      FOR UPDATE
    ), marked AS (
      UPDATE meter_points m SET registration_status = 'UNDERGOING_REGISTRATION', registration_request_id = gen_random_uuid(),
        registration_error = NULL, registration_updated_at = now()
      FROM target t
      WHERE m.id = t.id AND t.registration_status = ANY(${MARKABLE.filter((s) => from.includes(s))}::text[])
      RETURNING m.id, m.registration_request_id, t.registration_status AS was
    ), attempts AS (
      INSERT INTO registration_attempts (request_id, meter_point_id, attempt)
      SELECT k.registration_request_id, k.id, coalesce((SELECT max(a.attempt) FROM registration_attempts a WHERE a.meter_point_id = k.id), 0) + 1
      FROM marked k
    ), history AS (
      INSERT INTO registration_history (meter_point_id, request_id, cause, from_status, to_status, applied)
      SELECT k.id, k.registration_request_id, 'marked', k.was, 'UNDERGOING_REGISTRATION', true FROM marked k
    )
    SELECT t.id::text AS meter_point_id, t.account_id::text AS account_id, t.identifier AS mpxn,
      CASE WHEN k.id IS NULL THEN t.registration_status ELSE 'UNDERGOING_REGISTRATION' END AS status,
      k.registration_request_id::text AS request_id
    FROM target t LEFT JOIN marked k ON k.id = t.id
    ORDER BY t.id`.execute(ex);
  return rows.map(({ account_id: _, ...r }) => r);
}

/** An attempt with what its request carries, and where its meter point stands now. */
export interface AttemptToSend {
  request: RegistrationRequest;
  meter_point_id: string;
  status: MeterPointStatus;
  current_request_id: string | null;
  send_started_at: Date | null;
  answered_at: Date | null;
}

export async function findAttempt(ex: Executor, requestId: string): Promise<AttemptToSend | undefined> {
  const { rows } = await sql<{
    meter_point_id: string;
    mpxn: string;
    supply_type: string;
    mpid: string | null;
    shipper_mpid: string | null;
    supply_start_date: string;
    status: MeterPointStatus;
    current_request_id: string | null;
    send_started_at: Date | null;
    answered_at: Date | null;
    external_account_number: string;
    number: string;
    code: string;
  }>`
    SELECT m.id::text AS meter_point_id, m.identifier AS mpxn, m.supply_type, m.mpid, m.shipper_mpid, to_char(m.supply_start_date, 'YYYY-MM-DD') AS supply_start_date,
      m.registration_status AS status, m.registration_request_id::text AS current_request_id, a.send_started_at, a.answered_at,
      acc.external_account_number, acc.number, s.code
    FROM registration_attempts a
    JOIN meter_points m ON m.id = a.meter_point_id
    JOIN accounts acc ON acc.id = m.account_id
    JOIN import_suppliers s ON s.id = acc.import_supplier_id
    WHERE a.request_id = ${requestId}::uuid`.execute(ex);
  const r = rows[0];
  if (!r) return undefined;
  return {
    request: {
      request_id: requestId,
      mpxn: r.mpxn,
      supply_type: r.supply_type,
      mpid: r.mpid,
      ...(r.supply_type === 'GAS' ? { shipper_mpid: r.shipper_mpid } : {}),
      supply_start_date: r.supply_start_date,
      import_supplier: r.code,
      external_account_number: r.external_account_number,
      service_account_number: r.number,
    },
    meter_point_id: r.meter_point_id,
    status: r.status,
    current_request_id: r.current_request_id,
    send_started_at: r.send_started_at,
    answered_at: r.answered_at,
  };
}

/** Notes, in its own committed statement, that the attempt's request is about to go out. */
export async function noteSendStarted(ex: Executor, requestId: string): Promise<void> {
  await sql`UPDATE registration_attempts SET send_started_at = coalesce(send_started_at, now()) WHERE request_id = ${requestId}::uuid`.execute(ex);
}

/**
 * Records the gateway's answer to the attempt's request: taken (REGISTRATION_REQUESTED) or refused
 * (UNABLE_TO_REGISTER with the reason). Moves the meter point only while this attempt is its current
 * one and still UNDERGOING_REGISTRATION; answers whether it moved.
 */
export async function recordRequestAnswer(ex: Executor, requestId: string, answer: { taken: true } | { taken: false; reason: string }): Promise<boolean> {
  const to = answer.taken ? 'REGISTRATION_REQUESTED' : 'UNABLE_TO_REGISTER';
  const reason = answer.taken ? null : answer.reason;
  const { rows } = await sql<{ id: string }>`
    WITH attempt AS (
      UPDATE registration_attempts SET answered_at = now(), taken = ${answer.taken} WHERE request_id = ${requestId}::uuid AND answered_at IS NULL RETURNING meter_point_id
    ), moved AS (
      UPDATE meter_points m SET registration_status = ${to}, registration_error = ${reason}, registration_updated_at = now()
      FROM attempt a
      -- IS TRUE keeps the status test out of the index conditions: planned from statistics taken before
      -- a large marking, PostgreSQL would otherwise walk every UNDERGOING_REGISTRATION row of the status
      -- index for each answer (4.9 ms instead of 0.4 ms in the bench) instead of the meter point's key.
      WHERE m.id = a.meter_point_id AND m.registration_request_id = ${requestId}::uuid AND (m.registration_status = 'UNDERGOING_REGISTRATION') IS TRUE
      RETURNING m.id
    ), history AS (
      INSERT INTO registration_history (meter_point_id, request_id, cause, from_status, to_status, applied, reason)
      SELECT id, ${requestId}::uuid, ${answer.taken ? 'taken' : 'refused'}, 'UNDERGOING_REGISTRATION', ${to}, true, ${reason} FROM moved
    )
    SELECT id::text AS id FROM moved`.execute(ex);
  return rows.length > 0;
}

export interface MeterPointRegistration {
  mpxn: string;
  status: MeterPointStatus;
}

/** The account's meter points and their statuses, in the order they were created. */
export async function statusesOfAccount(ex: Executor, accountId: string): Promise<MeterPointRegistration[]> {
  return ex
    .selectFrom('meter_points')
    .select(['identifier as mpxn', 'registration_status as status'])
    .where('account_id', '=', accountId)
    .orderBy('id')
    .execute() as Promise<MeterPointRegistration[]>;
}

/** Whether any meter point's registration is open (the poller reads events only then). */
export async function anyOpenRegistration(ex: Executor): Promise<boolean> {
  const row = await ex.selectFrom('meter_points').select('id').where('registration_status', 'in', OPEN_STATUSES).limit(1).executeTakeFirst();
  return row !== undefined;
}

/** Attempts marked but never answered, with no request sent since `olderThan`: their jobs may have been lost. */
export async function unansweredAttempts(ex: Executor, olderThan: Date, limit: number): Promise<string[]> {
  const rows = await ex
    .selectFrom('registration_attempts as a')
    .innerJoin('meter_points as m', (j) => j.onRef('m.id', '=', 'a.meter_point_id').onRef('m.registration_request_id', '=', 'a.request_id'))
    .select('a.request_id')
    .where('m.registration_status', '=', 'UNDERGOING_REGISTRATION')
    .where('a.answered_at', 'is', null)
    .where('a.marked_at', '<', olderThan)
    .orderBy('a.marked_at')
    .limit(limit)
    .execute();
  return rows.map((r) => r.request_id);
}

export interface AppliedPage {
  received: number;
  /** New events (not seen before). */
  fresh: number;
  applied: number;
  /** Events naming a request id this service never sent. */
  unknown: number;
  /** For each acceptance applied: seconds from the gateway taking the request to its acceptance (the metrics' histogram). */
  acceptedAfterSeconds: number[];
}

/**
 * Applies one page of the gateway's events and saves the cursor after it, in one transaction (the
 * caller's): an event already seen (by event_id) is skipped; each new one is kept in its meter
 * point's history, applied or not with the reason, and applied in the page's order, so several
 * events for one meter point in a page move it step by step. The meter points concerned are locked
 * for the page, so markings and answers recorded meanwhile wait rather than interleave.
 */
export async function applyEventsPage(trx: Executor, events: readonly GatewayEvent[], cursor: string | null): Promise<AppliedPage> {
  const out: AppliedPage = { received: events.length, fresh: 0, applied: 0, unknown: 0, acceptedAfterSeconds: [] };
  if (events.length > 0) {
    // At most once: the ids this page is the first to bring (a repeat within the page counts once).
    const seen = new Set<string>();
    const unique = events.filter((e) => !seen.has(e.event_id) && seen.add(e.event_id));
    const { rows: inserted } = await sql<{ event_id: string }>`
      INSERT INTO registration_events (event_id, request_id, type)
      SELECT * FROM unnest(${unique.map((e) => e.event_id)}::text[], ${unique.map((e) => e.request_id)}::text[], ${unique.map((e) => e.type)}::text[])
      ON CONFLICT (event_id) DO NOTHING
      RETURNING event_id`.execute(trx);
    const fresh = new Set(inserted.map((r) => r.event_id));
    const todo = unique.filter((e) => fresh.has(e.event_id));
    out.fresh = todo.length;
    if (todo.length > 0) {
      const ids = [...new Set(todo.map((e) => e.request_id))].filter((id) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id));
      const { rows: points } = await sql<{ request_id: string; meter_point_id: string; status: MeterPointStatus; current: string | null }>`
        SELECT a.request_id::text AS request_id, m.id::text AS meter_point_id, m.registration_status AS status, m.registration_request_id::text AS current
        FROM registration_attempts a JOIN meter_points m ON m.id = a.meter_point_id
        WHERE a.request_id = ANY(${ids}::uuid[])
        ORDER BY m.id
        FOR UPDATE OF m`.execute(trx);
      const pointOf = new Map(points.map((p) => [p.request_id, p.meter_point_id]));
      const state = new Map(points.map((p) => [p.meter_point_id, { status: p.status, requestId: p.current, changed: false }]));
      const history: Array<{ mp: string; e: GatewayEvent; cause: 'event' | 'taken'; from: string; to: string | null; applied: boolean; reason: string | null }> = [];
      /** Attempts an event proved taken before their answer was recorded. */
      const impliedTaken: string[] = [];
      for (const e of todo) {
        const mp = pointOf.get(e.request_id);
        if (mp === undefined) {
          out.unknown++;
          continue;
        }
        const now = state.get(mp)!;
        // An event of the current attempt proves the gateway took its request, also when the answer
        // is not recorded yet (the worker died after sending, or the poller came between the 202 and
        // its commit): the meter point moves to REGISTRATION_REQUESTED first, so the event can apply.
        if (now.status === 'UNDERGOING_REGISTRATION' && now.requestId === e.request_id) {
          history.push({ mp, e, cause: 'taken', from: now.status, to: 'REGISTRATION_REQUESTED', applied: true, reason: `the gateway's event ${e.event_id} shows it has the request` });
          now.status = 'REGISTRATION_REQUESTED';
          now.changed = true;
          impliedTaken.push(e.request_id);
        }
        const outcome = isEventType(e.type) ? eventOutcome(now, { type: e.type, requestId: e.request_id }) : { applied: false as const, reason: `unknown event type ${e.type}` };
        if (outcome.applied) {
          history.push({ mp, e, cause: 'event', from: now.status, to: outcome.to, applied: true, reason: null });
          now.status = outcome.to;
          now.changed = true;
          out.applied++;
        } else {
          history.push({ mp, e, cause: 'event', from: now.status, to: null, applied: false, reason: outcome.reason });
        }
      }
      if (impliedTaken.length > 0) {
        // The answer the worker will record later finds it recorded, and does nothing.
        await sql`UPDATE registration_attempts SET answered_at = now(), taken = true WHERE request_id = ANY(${impliedTaken}::uuid[]) AND answered_at IS NULL`.execute(trx);
      }
      const changed = [...state.entries()].filter(([, s]) => s.changed);
      if (changed.length > 0) {
        await sql`
          UPDATE meter_points m SET registration_status = v.status, registration_updated_at = now(),
            registration_error = CASE WHEN v.status IN ('REGISTRATION_REJECTED', 'REGISTRATION_OBJECTED') THEN v.error ELSE NULL END
          FROM unnest(${changed.map(([id]) => id)}::bigint[], ${changed.map(([, s]) => s.status)}::text[], ${changed.map(([id]) => rejectionDetail(history, id))}::text[]) AS v(id, status, error)
          WHERE m.id = v.id`.execute(trx);
        const accepted = history.filter((h) => h.applied && h.to === 'REGISTRATION_ACCEPTED').map((h) => h.e.request_id);
        if (accepted.length > 0) {
          const { rows: times } = await sql<{ s: number | null }>`
            UPDATE registration_attempts SET accepted_at = coalesce(accepted_at, now()) WHERE request_id = ANY(${accepted}::uuid[])
            RETURNING extract(epoch FROM accepted_at - answered_at)::float8 AS s`.execute(trx);
          out.acceptedAfterSeconds = times.flatMap((t) => (t.s === null ? [] : [Math.max(0, t.s)]));
        }
      }
      if (history.length > 0) {
        await sql`
          INSERT INTO registration_history (meter_point_id, request_id, cause, event_id, event_type, occurred_at, from_status, to_status, applied, reason, detail)
          SELECT * FROM unnest(
            ${history.map((h) => h.mp)}::bigint[], ${history.map((h) => h.e.request_id)}::uuid[], ${history.map((h) => h.cause)}::text[],
            ${history.map((h) => (h.cause === 'event' ? h.e.event_id : null))}::text[], ${history.map((h) => (h.cause === 'event' ? h.e.type : null))}::text[], ${history.map((h) => (h.cause === 'event' ? validTime(h.e.occurred_at) : null))}::timestamptz[],
            ${history.map((h) => h.from)}::text[], ${history.map((h) => h.to)}::text[], ${history.map((h) => h.applied)}::boolean[],
            ${history.map((h) => h.reason)}::text[], ${history.map((h) => (h.cause === 'event' && h.e.detail !== undefined ? JSON.stringify(h.e.detail) : null))}::jsonb[])`.execute(trx);
      }
    }
  }
  await sql`UPDATE registration_cursor SET cursor = ${cursor}, updated_at = now() WHERE id = 1`.execute(trx);
  return out;
}

const validTime = (s: string): string | null => (typeof s === 'string' && !Number.isNaN(Date.parse(s)) ? s : null);

/** The detail of the last rejection or objection applied to a meter point in this page, for its registration_error. */
function rejectionDetail(history: ReadonlyArray<{ mp: string; e: GatewayEvent; to: string | null; applied: boolean }>, mp: string): string | null {
  const last = history.filter((h) => h.mp === mp && h.applied && (h.to === 'REGISTRATION_REJECTED' || h.to === 'REGISTRATION_OBJECTED')).at(-1);
  if (!last) return null;
  const d = last.e.detail;
  return typeof d === 'string' ? d : d === undefined || d === null ? last.e.type : JSON.stringify(d);
}

export async function readCursor(ex: Executor): Promise<string | null> {
  const row = await ex.selectFrom('registration_cursor').select('cursor').where('id', '=', 1).executeTakeFirst();
  return row?.cursor ?? null;
}

/**
 * Records the gateway's answer to a withdrawal: when it took it and the attempt is still the meter
 * point's current one in a status that can be withdrawn, WITHDRAWAL_REQUESTED. Answers whether it moved.
 */
export async function recordWithdrawalAnswer(ex: Executor, requestId: string, answer: { taken: true } | { taken: false; reason: string }): Promise<boolean> {
  await sql`UPDATE registration_attempts SET withdrawal_answered_at = now() WHERE request_id = ${requestId}::uuid`.execute(ex);
  if (!answer.taken) {
    await sql`
      INSERT INTO registration_history (meter_point_id, request_id, cause, from_status, applied, reason)
      SELECT m.id, ${requestId}::uuid, 'withdrawal', m.registration_status, false, ${answer.reason}
      FROM meter_points m JOIN registration_attempts a ON a.meter_point_id = m.id WHERE a.request_id = ${requestId}::uuid`.execute(ex);
    return false;
  }
  const { rows } = await sql<{ id: string }>`
    WITH moved AS (
      UPDATE meter_points m SET registration_status = 'WITHDRAWAL_REQUESTED', registration_updated_at = now()
      FROM registration_attempts a, (SELECT id, registration_status AS was FROM meter_points) w
      WHERE a.request_id = ${requestId}::uuid AND m.id = a.meter_point_id AND w.id = m.id
        AND m.registration_request_id = a.request_id AND m.registration_status = ANY(${[...WITHDRAWABLE]}::text[])
      RETURNING m.id, w.was
    ), history AS (
      INSERT INTO registration_history (meter_point_id, request_id, cause, from_status, to_status, applied)
      SELECT id, ${requestId}::uuid, 'withdrawal', was, 'WITHDRAWAL_REQUESTED', true FROM moved
    )
    SELECT id::text AS id FROM moved`.execute(ex);
  return rows.length > 0;
}

/**
 * The current attempts of an account's meter points that may be withdrawn (optionally one mpxn),
 * noted as requested; answers each meter point with its request id when it may be withdrawn.
 */
export async function requestWithdrawals(ex: Executor, accountId: string, mpxn?: string): Promise<Array<{ mpxn: string; status: MeterPointStatus; request_id: string | null }>> {
  const { rows } = await sql<{ mpxn: string; status: MeterPointStatus; request_id: string | null }>`
    WITH target AS (
      SELECT id, identifier, registration_status, registration_request_id FROM meter_points
      WHERE account_id = ${accountId}::bigint AND (${mpxn ?? null}::text IS NULL OR identifier = ${mpxn ?? null}::text)
      ORDER BY id FOR UPDATE
    ), noted AS (
      UPDATE registration_attempts a SET withdrawal_requested_at = coalesce(a.withdrawal_requested_at, now())
      FROM target t WHERE a.request_id = t.registration_request_id AND t.registration_status = ANY(${[...WITHDRAWABLE]}::text[])
      RETURNING a.request_id
    )
    SELECT t.identifier AS mpxn, t.registration_status AS status, n.request_id::text AS request_id
    FROM target t LEFT JOIN noted n ON n.request_id = t.registration_request_id
    ORDER BY t.id`.execute(ex);
  return rows;
}

/** Where a registration attempt ended without the meter point being registered: what a re-send retries. */
export const FAILED_REGISTRATION: readonly MeterPointStatus[] = ['UNABLE_TO_REGISTER', 'REGISTRATION_REJECTED', 'REGISTRATION_OBJECTED'];

/** Accounts of a batch (its succeeded items) or of a supplier with a meter point whose registration failed. */
export async function accountsWithFailedRegistration(ex: Executor, scope: { batchId: string } | { supplierId: string }): Promise<string[]> {
  const { rows } = await sql<{ id: string }>`
    SELECT DISTINCT a.id::text AS id
    FROM accounts a JOIN meter_points m ON m.account_id = a.id
    WHERE m.registration_status = ANY(${[...FAILED_REGISTRATION]}::text[])
      AND ${
        'batchId' in scope
          ? sql`EXISTS (SELECT 1 FROM batch_items i WHERE i.batch_id = ${scope.batchId}::uuid AND i.state = 'succeeded' AND i.service_account_number = a.number AND i.external_account_number = a.external_account_number)`
          : sql`a.import_supplier_id = ${scope.supplierId}::bigint`
      }`.execute(ex);
  return rows.map((r) => r.id);
}

/** A page of a batch's succeeded items' accounts, in line order after `afterLine`. */
export async function accountsOfBatch(ex: Executor, batchId: string, afterLine: number, limit: number): Promise<Array<{ line: number; account_id: string }>> {
  const { rows } = await sql<{ line: number; account_id: string }>`
    SELECT i.line, a.id::text AS account_id
    FROM batch_items i JOIN accounts a ON a.number = i.service_account_number AND a.external_account_number = i.external_account_number
    WHERE i.batch_id = ${batchId}::uuid AND i.state = 'succeeded' AND i.line > ${afterLine}
    ORDER BY i.line LIMIT ${limit}`.execute(ex);
  return rows;
}

/**
 * Accounts whose meter points were asked to be registered and never were (no attempt yet): created
 * since their supplier turned automatic registration on, or succeeded in a batch uploaded with
 * register=true (of the last 30 days). The events poller's sweep marks them, at most `limit` a run.
 */
export async function accountsAwaitingRegistration(ex: Executor, limit: number): Promise<string[]> {
  const { rows } = await sql<{ id: string }>`
    SELECT id::text AS id FROM (
      SELECT a.id FROM import_suppliers s
      JOIN accounts a ON a.import_supplier_id = s.id AND a.created_at >= s.auto_register_since
      WHERE s.auto_register_since IS NOT NULL
        AND EXISTS (SELECT 1 FROM meter_points m WHERE m.account_id = a.id AND m.registration_status = 'PRE_REGISTRATION' AND m.registration_request_id IS NULL)
      UNION
      SELECT a.id FROM batches b
      JOIN batch_items i ON i.batch_id = b.id AND i.state = 'succeeded'
      JOIN accounts a ON a.number = i.service_account_number AND a.external_account_number = i.external_account_number
      WHERE b.register AND NOT b.dry_run AND b.created_at > now() - interval '30 days'
        AND EXISTS (SELECT 1 FROM meter_points m WHERE m.account_id = a.id AND m.registration_status = 'PRE_REGISTRATION' AND m.registration_request_id IS NULL)
    ) awaiting
    ORDER BY id LIMIT ${limit}`.execute(ex);
  return rows.map((r) => r.id);
}
