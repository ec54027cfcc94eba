import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { listenOnLoopback } from '../dev/loopback-server.js';
import { utcDate } from '../clock.js';

/*
 * The registration gateway protocol of decisions §8, served over real HTTP on 127.0.0.1.
 *
 * Three parts (each could be a file of its own): the protocol server (`serveGateway`: routes,
 * bearer key, body limit, validation; it asks a policy how to answer), an in-memory event feed
 * (`GatewayEventLog`: ids, opaque cursors, pages), and the development sandbox built from the two
 * (`startSandboxGateway`). test/helpers/fake-gateway.ts builds the scriptable test gateway from the
 * same two parts, so the sandbox and the tests' gateway speak exactly one protocol.
 */

// ---------------------------------------------------------------------------------------------------
// The protocol's shapes

export const GATEWAY_EVENT_TYPES = [
  'ACCEPTED',
  'REJECTED',
  'OBJECTION_RECEIVED',
  'OBJECTION_UPHELD',
  'OBJECTION_WITHDRAWN',
  'WITHDRAWN',
  'SUPPLY_STARTED',
] as const;

export type GatewayEventType = (typeof GATEWAY_EVENT_TYPES)[number];

/** One entry of `GET /events`. `detail` (a reason, for REJECTED and objections) is absent when there is none. */
export interface GatewayEvent {
  readonly event_id: string;
  readonly request_id: string;
  readonly mpxn: string;
  readonly type: GatewayEventType;
  /** An ISO 8601 instant in UTC. */
  readonly occurred_at: string;
  readonly detail?: string;
}

/** The body of `POST /registrations`, as the gateway checks it (decisions §8). */
export interface RegistrationRequest {
  readonly request_id: string;
  readonly mpxn: string;
  readonly supply_type: 'ELECTRICITY' | 'GAS';
  readonly mpid: string;
  /** Gas only (required there); absent or null for electricity. */
  readonly shipper_mpid?: string | null;
  /** YYYY-MM-DD. */
  readonly supply_start_date: string;
  readonly import_supplier: string;
  readonly external_account_number: string;
  readonly service_account_number: string;
}

/** The answer of `GET /events`. */
export interface GatewayEventsPage {
  readonly events: readonly GatewayEvent[];
  /** Opaque: give it back as `after` to read on from here. */
  readonly cursor: string;
}

/** Request bodies above this are refused with 413. */
export const GATEWAY_MAX_BODY_BYTES = 64 * 1024;
export const GATEWAY_DEFAULT_PAGE_LIMIT = 100;
export const GATEWAY_MAX_PAGE_LIMIT = 1000;
export const GATEWAY_DEFAULT_MAX_EVENTS = 1_000_000;

// ---------------------------------------------------------------------------------------------------
// The protocol server

/** A request as the gateway received it: what test recorders keep. */
export interface GatewayRequestRecord {
  readonly method: string;
  /** The path without the query string. */
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  /** Lower-case names (`authorization`, `idempotency-key`, ...), repeated headers joined with ", ". */
  readonly headers: Readonly<Record<string, string>>;
  /** Parsed JSON; the raw text when it is not JSON; undefined when empty or refused as too large. */
  readonly body: unknown;
  /** Epoch milliseconds at arrival. */
  readonly at: number;
  /** The status answered, once answered (never set for a dropped or unanswered request). */
  status?: number;
}

/** A request the server has routed, authenticated and checked, for the policy to answer. */
export type GatewayCall =
  | { readonly route: 'registration'; readonly request_id: string; readonly registration: RegistrationRequest }
  | { readonly route: 'withdrawal'; readonly request_id: string }
  | { readonly route: 'events'; readonly after: string | undefined; readonly limit: number };

/** How to answer one call. */
export interface GatewayAnswer {
  readonly status: number;
  /** JSON-encoded unless a string; no body when undefined. */
  readonly body?: unknown;
  readonly headers?: Readonly<Record<string, string>>;
  /** Answer this much later (a slow gateway). */
  readonly delayMs?: number;
  /** Never answer: the client's own timeout must fire. */
  readonly hang?: boolean;
  /** Drop the connection without answering (a gateway that died mid-request). */
  readonly drop?: boolean;
}

export interface GatewayServerOptions {
  readonly key: string;
  readonly host?: '127.0.0.1';
  /** 0 (any free port) by default. */
  readonly port?: number;
  /** Decides every call that passed the protocol's checks. Throwing answers 500. */
  readonly answer: (call: GatewayCall, record: GatewayRequestRecord) => GatewayAnswer;
  /** Sees every request, before any check (wrong key, bad body, unknown route included). */
  readonly onRequest?: (record: GatewayRequestRecord) => void;
}

export interface GatewayServer {
  /** `http://127.0.0.1:<port>`: the value for REGISTRATION_GATEWAY_URL. */
  readonly url: string;
  /** Stops at once: pending slow answers are dropped and open connections destroyed. Idempotent. */
  close(): Promise<void>;
}

const REGISTRATIONS = '/registrations';
const WITHDRAWAL = /^\/registrations\/([^/]+)\/withdrawal$/;
const EVENTS = '/events';
/** A body larger than the limit is read and discarded up to this, so the client can read the 413. */
const DRAIN_CAP_BYTES = 1024 * 1024;
const HEADERS_TIMEOUT_MS = 10_000;
const REQUEST_TIMEOUT_MS = 30_000;
const IDLE_SOCKET_TIMEOUT_MS = 120_000;

/** A reason for a refusal (400/401/404/405/413/422/503): the protocol's `{ reason }` body. */
const refusal = (status: number, reason: string, headers?: Record<string, string>): GatewayAnswer => ({ status, body: { reason }, ...(headers && { headers }) });

/**
 * Serves the gateway protocol: `POST /registrations`, `POST /registrations/{request_id}/withdrawal`,
 * `GET /events`. It answers by itself everything the protocol refuses whatever the policy: 401 for a
 * wrong bearer key, 413 above 64 KB, 400 for a body or query that is not the protocol's, 404/405 for
 * other routes. Everything else is the policy's (`answer`).
 */
export async function serveGateway(opts: GatewayServerOptions): Promise<GatewayServer> {
  const expectedAuth = Buffer.from(`Bearer ${opts.key}`);
  const timers = new Set<NodeJS.Timeout>();

  const write = (res: ServerResponse, record: GatewayRequestRecord, answer: GatewayAnswer): void => {
    if (res.destroyed || res.writableEnded) return;
    const text = answer.body === undefined ? '' : typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
    const type: Record<string, string> = text === '' ? {} : { 'content-type': 'application/json' };
    res.writeHead(answer.status, { ...type, 'content-length': String(Buffer.byteLength(text)), ...answer.headers });
    res.end(text);
    record.status = answer.status;
  };

  const deliver = (res: ServerResponse, record: GatewayRequestRecord, answer: GatewayAnswer): void => {
    if (answer.drop) {
      res.socket?.destroy();
      return;
    }
    if (answer.hang) return;
    if (answer.delayMs === undefined || answer.delayMs <= 0) {
      write(res, record, answer);
      return;
    }
    const timer = setTimeout(() => {
      timers.delete(timer);
      write(res, record, answer);
    }, answer.delayMs);
    timers.add(timer);
    // The client gave up: nothing to answer, and the timer must not outlive the exchange.
    res.on('close', () => {
      clearTimeout(timer);
      timers.delete(timer);
    });
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const at = Date.now();
    const url = new URL(req.url ?? '/', 'http://gateway');
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    const base = { method: req.method ?? 'GET', path: url.pathname, query: Object.fromEntries(url.searchParams), headers, at };

    const read = await readBody(req);
    if (read.kind === 'aborted') return;
    const record: GatewayRequestRecord = { ...base, body: read.kind === 'ok' ? parseBody(read.text) : undefined };
    opts.onRequest?.(record);
    if (read.kind === 'dropped') return;

    let answer: GatewayAnswer;
    try {
      answer = route(record, read.kind === 'too_large', req.headers.authorization);
    } catch (error) {
      answer = refusal(500, `the gateway failed: ${error instanceof Error ? error.message : String(error)}`);
    }
    deliver(res, record, answer);
  };

  const route = (record: GatewayRequestRecord, tooLarge: boolean, authorization: string | undefined): GatewayAnswer => {
    const withdrawal = WITHDRAWAL.exec(record.path);
    const isPost = record.path === REGISTRATIONS || withdrawal !== null;
    if (!isPost && record.path !== EVENTS) return refusal(404, `no such route: ${record.path}`);
    const allowed = isPost ? 'POST' : 'GET';
    if (record.method !== allowed) return refusal(405, `${record.path} answers ${allowed} only`, { allow: allowed });

    const given = Buffer.from(authorization ?? '');
    if (given.length !== expectedAuth.length || !timingSafeEqual(given, expectedAuth)) {
      return refusal(401, 'the bearer key is not this gateway’s', { 'www-authenticate': 'Bearer' });
    }
    if (tooLarge) return refusal(413, `request bodies are limited to ${GATEWAY_MAX_BODY_BYTES} bytes`);

    if (record.path === EVENTS) {
      const call = eventsCall(record.query);
      return typeof call === 'string' ? refusal(400, call) : opts.answer(call, record);
    }
    if (withdrawal !== null) {
      let requestId: string;
      try {
        requestId = decodeURIComponent(withdrawal[1] ?? '');
      } catch {
        return refusal(400, 'the request_id in the path is not valid percent-encoding');
      }
      return opts.answer({ route: 'withdrawal', request_id: requestId }, record);
    }
    const registration = checkRegistration(record.body);
    if (typeof registration === 'string') return refusal(400, registration);
    const idempotencyKey = record.headers['idempotency-key'];
    if (idempotencyKey === undefined) return refusal(400, 'the Idempotency-Key header is required (the request_id)');
    if (idempotencyKey !== registration.request_id) return refusal(400, 'the Idempotency-Key header differs from the body’s request_id');
    if (registration.supply_type === 'GAS' && !registration.shipper_mpid) return refusal(422, 'a gas registration needs a shipper_mpid');
    return opts.answer({ route: 'registration', request_id: registration.request_id, registration }, record);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  server.timeout = IDLE_SOCKET_TIMEOUT_MS;
  const listening = await listenOnLoopback(server, opts.port);

  return {
    url: listening.url,
    async close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      await listening.close();
    },
  };
}

/** `dropped`: above the drain cap, the connection is gone; `aborted`: the client went away mid-body. */
type BodyRead = { kind: 'ok'; text: string } | { kind: 'too_large' } | { kind: 'dropped' } | { kind: 'aborted' };

/**
 * The body, up to the limit. A larger one is read on and thrown away (up to the drain cap) so the
 * client, still writing, sees the 413 rather than a reset connection; beyond the cap the socket goes.
 */
function readBody(req: IncomingMessage): Promise<BodyRead> {
  return new Promise((resolve) => {
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > DRAIN_CAP_BYTES) {
      req.socket.destroy();
      resolve({ kind: 'dropped' });
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > DRAIN_CAP_BYTES) {
        resolve({ kind: 'dropped' });
        req.socket.destroy();
        return;
      }
      if (size <= GATEWAY_MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('end', () => resolve(size > GATEWAY_MAX_BODY_BYTES ? { kind: 'too_large' } : { kind: 'ok', text: Buffer.concat(chunks).toString('utf8') }));
    req.on('error', () => resolve({ kind: 'aborted' }));
    req.on('close', () => {
      if (!req.complete) resolve({ kind: 'aborted' });
    });
  });
}

function parseBody(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

const REQUIRED_TEXT = ['request_id', 'mpxn', 'mpid', 'import_supplier', 'external_account_number', 'service_account_number'] as const;

/** The registration, or why it is not one. */
function checkRegistration(body: unknown): RegistrationRequest | string {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'the body must be a JSON object';
  const b = body as Record<string, unknown>;
  for (const field of REQUIRED_TEXT) {
    if (typeof b[field] !== 'string' || b[field] === '') return `${field} must be a non-empty string`;
  }
  if (b.supply_type !== 'ELECTRICITY' && b.supply_type !== 'GAS') return 'supply_type must be ELECTRICITY or GAS';
  if (b.shipper_mpid !== undefined && b.shipper_mpid !== null && typeof b.shipper_mpid !== 'string') return 'shipper_mpid must be a string when given';
  if (typeof b.supply_start_date !== 'string' || !isDate(b.supply_start_date)) return 'supply_start_date must be a date (YYYY-MM-DD)';
  return b as unknown as RegistrationRequest;
}

function isDate(text: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return false;
  const d = new Date(`${text}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().startsWith(text);
}

/** The events call from `?after=&limit=`, or why the query is not the protocol's. */
function eventsCall(query: Readonly<Record<string, string>>): GatewayCall | string {
  const { after, limit } = query;
  if (after === '') return 'after must be a cursor from an earlier page (or absent, to read from the start)';
  if (limit === undefined) return { route: 'events', after, limit: GATEWAY_DEFAULT_PAGE_LIMIT };
  if (!/^[1-9]\d{0,9}$/.test(limit)) return 'limit must be a positive whole number';
  // Above the maximum is not an error: the page is simply the largest the gateway gives.
  return { route: 'events', after, limit: Math.min(Number(limit), GATEWAY_MAX_PAGE_LIMIT) };
}

// ---------------------------------------------------------------------------------------------------
// The event feed

export interface GatewayEventLogOptions {
  /** Appending beyond this throws `GatewayFull`. */
  readonly maxEvents?: number;
  /** Generated event ids are `<prefix><instance>-<n>`. */
  readonly eventIdPrefix: string;
  /**
   * A well-formed cursor of another log (an earlier run of this gateway, whose events died with it):
   * read from the start of this one (`'from-start'`: the sandbox after a restart, whose new events
   * all have new ids), or refuse it with 400 (`'refuse'`: tests want a client that mangles cursors
   * to fail loudly).
   */
  readonly foreignCursor: 'from-start' | 'refuse';
}

export class GatewayFull extends Error {
  override readonly name = 'GatewayFull';
}

/**
 * Events in memory, oldest first. The cursor is the count of events read, tagged with a random
 * instance id so a cursor (or event id) from an earlier run is never mistaken for one of this run's.
 */
export class GatewayEventLog {
  readonly instance = randomBytes(4).toString('hex');
  readonly maxEvents: number;
  private readonly entries: GatewayEvent[] = [];
  private sequence = 0;

  constructor(private readonly opts: GatewayEventLogOptions) {
    this.maxEvents = opts.maxEvents ?? GATEWAY_DEFAULT_MAX_EVENTS;
  }

  get size(): number {
    return this.entries.length;
  }

  /** Every event, in feed order. */
  get events(): readonly GatewayEvent[] {
    return this.entries;
  }

  /** Appends one event; `event_id` is generated unless given (a given one may repeat an earlier id). */
  append(event: Omit<GatewayEvent, 'event_id'> & { readonly event_id?: string }): GatewayEvent {
    if (this.entries.length >= this.maxEvents) throw new GatewayFull(`the gateway holds its maximum of ${this.maxEvents} events`);
    this.sequence += 1;
    const { event_id, detail, ...rest } = event;
    const entry: GatewayEvent = {
      event_id: event_id ?? `${this.opts.eventIdPrefix}${this.instance}-${this.sequence}`,
      ...rest,
      ...(detail !== undefined && { detail }),
    };
    this.entries.push(entry);
    return entry;
  }

  /** The page after `after` (from the start when undefined), or why the cursor is refused. */
  page(after: string | undefined, limit: number): GatewayEventsPage | { readonly refused: string } {
    let from = 0;
    if (after !== undefined) {
      const match = /^([0-9a-f]{8})\.(0|[1-9]\d{0,9})$/.exec(after);
      if (match === null) return { refused: 'after is not a cursor this gateway gave' };
      const index = Number(match[2]);
      if (match[1] === this.instance) {
        if (index > this.entries.length) return { refused: 'after is beyond the end of the feed' };
        from = index;
      } else if (this.opts.foreignCursor === 'refuse') {
        return { refused: 'after is a cursor of another gateway instance' };
      }
    }
    const events = this.entries.slice(from, from + limit);
    return { events, cursor: `${this.instance}.${from + events.length}` };
  }
}

/** The `GET /events` answer for a page or a refused cursor. */
export function eventsAnswer(log: GatewayEventLog, call: Extract<GatewayCall, { route: 'events' }>): GatewayAnswer {
  const page = log.page(call.after, call.limit);
  return 'refused' in page ? refusal(400, page.refused) : { status: 200, body: page };
}

// ---------------------------------------------------------------------------------------------------
// The development sandbox

export interface SandboxGatewayOptions {
  /** The bearer key it expects (REGISTRATION_GATEWAY_KEY). */
  readonly key: string;
  /** Decides when a supply start date has come; the system clock by default. */
  readonly clock?: () => Date;
  readonly host?: '127.0.0.1';
  /** 0 (any free port) by default. */
  readonly port?: number;
  /** At most this many events are kept; requests that would need more are refused with 503. 1,000,000 by default. */
  readonly maxEvents?: number;
}

export interface SandboxGateway {
  /** `http://127.0.0.1:<port>`: the value for REGISTRATION_GATEWAY_URL. */
  readonly url: string;
  readonly key: string;
  /** Stops at once (idempotent); its events are gone. */
  close(): Promise<void>;
}

type SandboxState = 'accepted' | 'withdrawn' | 'on_supply';

/** How often the sandbox looks for supply start dates that have come (it also looks on every request). */
const SUPPLY_CHECK_MS = 1000;

/**
 * The registration gateway in development (NODE_ENV=development, no REGISTRATION_GATEWAY_URL),
 * speaking decisions §8 on 127.0.0.1. It accepts every well-formed request: 202 and an `ACCEPTED`
 * event at once, then `SUPPLY_STARTED` once the clock's UTC date reaches the request's
 * `supply_start_date` (at once when that date has passed). The same request_id again answers 409
 * with no new effect. A withdrawal answers 202 and emits `WITHDRAWN` (the supply start then never
 * comes); 409 when already withdrawn, 422 for an unknown request_id or a meter point already on supply.
 *
 * Everything is in memory: a restart forgets registrations and events. Event ids and cursors carry
 * a per-run instance id, so after a restart the service's saved cursor reads the new feed from its
 * start and no new event shares an id with an old one. At most `maxEvents` events (503 beyond).
 */
export async function startSandboxGateway(opts: SandboxGatewayOptions): Promise<SandboxGateway> {
  const clock = opts.clock ?? (() => new Date());
  const log = new GatewayEventLog({ maxEvents: opts.maxEvents, eventIdPrefix: 'sbx-', foreignCursor: 'from-start' });
  const registrations = new Map<string, { readonly mpxn: string; state: SandboxState }>();
  /** request_ids waiting for their supply start, by date; `dates` is the sorted keys. */
  const dueOn = new Map<string, string[]>();
  const dates: string[] = [];
  let pending = 0;

  const emit = (request_id: string, mpxn: string, type: GatewayEventType): void => {
    log.append({ request_id, mpxn, type, occurred_at: clock().toISOString() });
  };

  /** Emits SUPPLY_STARTED for every accepted registration whose date has come. */
  const startSupplies = (): void => {
    const today = utcDate(clock());
    while (dates.length > 0 && (dates[0] as string) <= today) {
      const date = dates.shift() as string;
      for (const requestId of dueOn.get(date) ?? []) {
        pending -= 1;
        const registration = registrations.get(requestId);
        if (registration?.state !== 'accepted') continue;
        registration.state = 'on_supply';
        emit(requestId, registration.mpxn, 'SUPPLY_STARTED');
      }
      dueOn.delete(date);
    }
  };

  const schedule = (requestId: string, date: string): void => {
    const waiting = dueOn.get(date);
    if (waiting !== undefined) {
      waiting.push(requestId);
    } else {
      dueOn.set(date, [requestId]);
      let i = dates.length;
      while (i > 0 && (dates[i - 1] as string) > date) i -= 1;
      dates.splice(i, 0, date);
    }
    pending += 1;
  };

  /** Whether `n` more events fit, counting the supply starts already promised. */
  const fits = (n: number): boolean => log.size + pending + n <= log.maxEvents;
  const full = (): GatewayAnswer => refusal(503, `the sandbox gateway holds its maximum of ${log.maxEvents} events`, { 'retry-after': '60' });

  const answer = (call: GatewayCall): GatewayAnswer => {
    startSupplies();
    switch (call.route) {
      case 'events':
        return eventsAnswer(log, call);
      case 'registration': {
        const { request_id, mpxn, supply_start_date } = call.registration;
        if (registrations.has(request_id)) return { status: 409, body: { request_id, reason: 'this request_id has already been received' } };
        if (!fits(2)) return full();
        const registration: { readonly mpxn: string; state: SandboxState } = { mpxn, state: 'accepted' };
        registrations.set(request_id, registration);
        emit(request_id, mpxn, 'ACCEPTED');
        if (supply_start_date <= utcDate(clock())) {
          registration.state = 'on_supply';
          emit(request_id, mpxn, 'SUPPLY_STARTED');
        } else {
          schedule(request_id, supply_start_date);
        }
        return { status: 202, body: { request_id } };
      }
      case 'withdrawal': {
        const registration = registrations.get(call.request_id);
        if (registration === undefined) return refusal(422, 'no registration has this request_id');
        if (registration.state === 'withdrawn') return { status: 409, body: { request_id: call.request_id, reason: 'this registration is already withdrawn' } };
        if (registration.state === 'on_supply') return refusal(422, 'the meter point is already on supply: too late to withdraw');
        if (!fits(1)) return full();
        registration.state = 'withdrawn';
        emit(call.request_id, registration.mpxn, 'WITHDRAWN');
        return { status: 202, body: { request_id: call.request_id } };
      }
    }
  };

  const server = await serveGateway({ key: opts.key, host: opts.host, port: opts.port, answer });
  const ticker = setInterval(startSupplies, SUPPLY_CHECK_MS);
  ticker.unref();

  return {
    url: server.url,
    key: opts.key,
    async close() {
      clearInterval(ticker);
      await server.close();
    },
  };
}
