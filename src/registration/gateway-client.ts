import { printable } from '../json.js';

/**
 * The registration gateway's protocol (decisions.md §8), as the service calls it: registration and
 * withdrawal requests, and the event feed. Node's own fetch, a bounded time per call, redirects not
 * followed, answers read only up to a bound.
 */

export interface GatewayConfig {
  url: string;
  key: string;
  /** Per call; a gateway that does not answer in time is retried like a 5xx. */
  timeoutMs?: number;
}

export interface RegistrationRequest {
  request_id: string;
  mpxn: string;
  supply_type: string;
  mpid: string | null;
  shipper_mpid?: string | null;
  supply_start_date: string;
  import_supplier: string;
  external_account_number: string;
  service_account_number: string;
}

/** How the gateway answered a request or a withdrawal. */
export type GatewayAnswer =
  | { kind: 'taken'; status: number }
  | { kind: 'refused'; status: number; reason: string }
  /** Try again later: 408, 429, 5xx, 401/403 (our key refused), a timeout or no connection. */
  | { kind: 'retry'; status: number | null; error: string; retryAfterMs?: number; keyRefused?: boolean };

export interface GatewayEvent {
  event_id: string;
  request_id: string;
  mpxn: string;
  type: string;
  occurred_at: string;
  detail?: unknown;
}

const MAX_ANSWER_BYTES = 4 * 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 10_000;

/** Retry-After as seconds or an HTTP date, in milliseconds from now; undefined when absent or unreadable. */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (header === null) return undefined;
  const s = header.trim();
  if (/^\d+$/.test(s)) return Number(s) * 1000;
  const at = Date.parse(s);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

async function readBounded(res: Response, max: number): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > max) {
      await reader.cancel();
      throw new Error(`the gateway's answer is larger than ${max} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function classify(status: number, text: string, headers: Headers): GatewayAnswer {
  if (status === 202 || status === 409 || (status >= 200 && status < 300)) return { kind: 'taken', status };
  if (status === 400 || status === 422) {
    let reason = '';
    try {
      const body = JSON.parse(text) as { reason?: unknown };
      if (typeof body.reason === 'string') reason = body.reason;
    } catch {
      // not JSON: the text itself, shortened below
    }
    return { kind: 'refused', status, reason: printable((reason || text || `refused with ${status}`).slice(0, 1000)) };
  }
  const after = retryAfterMs(headers.get('retry-after'));
  return {
    kind: 'retry',
    status,
    error: `the gateway answered ${status}`,
    ...(after !== undefined ? { retryAfterMs: after } : {}),
    ...(status === 401 || status === 403 ? { keyRefused: true } : {}),
  };
}

async function post(gw: GatewayConfig, path: string, idempotencyKey: string, body: unknown): Promise<GatewayAnswer> {
  try {
    const res = await fetch(`${gw.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.key}`, 'idempotency-key': idempotencyKey, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(body),
      redirect: 'manual',
      signal: AbortSignal.timeout(gw.timeoutMs ?? DEFAULT_TIMEOUT_MS),
    });
    const text = await readBounded(res, 64 * 1024);
    return classify(res.status, text, res.headers);
  } catch (err) {
    return { kind: 'retry', status: null, error: printable(err instanceof Error ? `${err.name}: ${err.message}` : String(err)) };
  }
}

export const sendRegistration = (gw: GatewayConfig, r: RegistrationRequest): Promise<GatewayAnswer> => post(gw, '/registrations', r.request_id, r);

export const sendWithdrawal = (gw: GatewayConfig, requestId: string): Promise<GatewayAnswer> =>
  post(gw, `/registrations/${encodeURIComponent(requestId)}/withdrawal`, requestId, { request_id: requestId });

export class GatewayUnavailable extends Error {
  override readonly name = 'GatewayUnavailable';
  constructor(
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

/** One page of events after `cursor` (from the start without one). Throws GatewayUnavailable on anything but a well-formed 200. */
export async function readEvents(gw: GatewayConfig, cursor: string | null, limit: number): Promise<{ events: GatewayEvent[]; cursor: string | null }> {
  const q = new URLSearchParams({ limit: String(limit), ...(cursor !== null ? { after: cursor } : {}) });
  let res: Response;
  let text: string;
  try {
    res = await fetch(`${gw.url}/events?${q.toString()}`, {
      headers: { authorization: `Bearer ${gw.key}`, accept: 'application/json' },
      redirect: 'manual',
      signal: AbortSignal.timeout(gw.timeoutMs ?? DEFAULT_TIMEOUT_MS),
    });
    text = await readBounded(res, MAX_ANSWER_BYTES);
  } catch (err) {
    throw new GatewayUnavailable(`the gateway's events could not be read: ${printable(err instanceof Error ? err.message : String(err))}`);
  }
  if (res.status !== 200) throw new GatewayUnavailable(`the gateway's events answered ${res.status}`, retryAfterMs(res.headers.get('retry-after')));
  let body: { events?: unknown; cursor?: unknown };
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    throw new GatewayUnavailable("the gateway's events are not JSON");
  }
  if (!Array.isArray(body.events)) throw new GatewayUnavailable("the gateway's events answer has no events list");
  const events = body.events.filter(
    (e): e is GatewayEvent =>
      e !== null && typeof e === 'object' && typeof (e as GatewayEvent).event_id === 'string' && typeof (e as GatewayEvent).request_id === 'string' && typeof (e as GatewayEvent).type === 'string',
  );
  if (events.length !== body.events.length) throw new GatewayUnavailable("the gateway's events answer has an event without event_id, request_id or type");
  const next = typeof body.cursor === 'string' ? body.cursor : typeof body.cursor === 'number' ? String(body.cursor) : cursor;
  return { events, cursor: next };
}
