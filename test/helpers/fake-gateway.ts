import {
  GatewayEventLog,
  eventsAnswer,
  serveGateway,
  type GatewayAnswer,
  type GatewayCall,
  type GatewayEvent,
  type GatewayEventType,
  type GatewayRequestRecord,
  type RegistrationRequest,
} from '../../src/registration/sandbox-gateway.js';

export type { GatewayEvent, GatewayEventType, GatewayRequestRecord, RegistrationRequest };

/*
 * The tests' registration gateway (decisions §8) on 127.0.0.1: the sandbox's protocol server and
 * event feed (src/registration/sandbox-gateway.ts), with a scriptable policy instead of the
 * sandbox's "accept everything". Protocol checks (bearer key, 64 KB bodies, body and
 * Idempotency-Key, cursors) are the sandbox's, so a client that passes here passes there.
 */

export const FAKE_GATEWAY_KEY = 'fake-gateway-key';

/** How to answer one POST (registration or withdrawal). */
export interface FakeGatewayAnswer {
  /** 202/409 (taken), 400/422 (refused), 408/429/5xx (retry), anything else. */
  readonly status: number;
  /** Default: `{ request_id }` for 2xx, `{ request_id, reason }` for 409, `{ reason }` otherwise. */
  readonly body?: unknown;
  readonly headers?: Readonly<Record<string, string>>;
  /** Sent as Retry-After. 429 and 503 send "1" unless given; null sends none. */
  readonly retryAfter?: string | number | null;
  /** Answer this much later (a slow gateway). */
  readonly delayMs?: number;
  /** Never answer: the client's timeout must fire. */
  readonly hang?: boolean;
  /** Drop the connection without answering. */
  readonly drop?: boolean;
  /**
   * Whether the gateway records the request as taken (`registrations` / `withdrawals`). Default:
   * status 2xx or 409. `true` with a 500, a hang or a drop: the gateway took it but the client
   * never heard so (the case the Idempotency-Key exists for).
   */
  readonly takes?: boolean;
}

/** Which POSTs a scripted answer applies to: every one by default. */
export interface FakeGatewayMatch {
  readonly route?: 'registration' | 'withdrawal';
  readonly request_id?: string;
}

/** One entry of the script: answers exactly one matching POST, then is gone. */
export type FakeGatewayScriptEntry = FakeGatewayAnswer & FakeGatewayMatch;

/** What `push` takes: everything but request_id and type may be left out. */
export type FakeGatewayEventInput = Partial<GatewayEvent> & Pick<GatewayEvent, 'request_id' | 'type'>;

export interface FakeGateway {
  /** `http://127.0.0.1:<port>`: the value for REGISTRATION_GATEWAY_URL. */
  readonly url: string;
  readonly key: string;
  /** Every request received, in arrival order, refused ones included (`status` once answered). */
  readonly requests: readonly GatewayRequestRecord[];
  /** Registrations taken, by request_id: the first body of each (a repeat adds nothing). */
  readonly registrations: ReadonlyMap<string, RegistrationRequest>;
  /** request_ids whose withdrawal was taken. */
  readonly withdrawals: ReadonlySet<string>;
  /** The event feed, in the order GET /events serves it. */
  readonly events: readonly GatewayEvent[];
  /**
   * The answers still to give, oldest first: each POST takes the first entry that matches it;
   * with none, it gets the default (202 for a new request_id, 409 for one already taken).
   * Tests may push entries directly.
   */
  readonly script: FakeGatewayScriptEntry[];
  /** Answers the next `n` matching POSTs with `answer` (a bare number is the status). */
  answerNext(n: number, answer: FakeGatewayAnswer | number, match?: FakeGatewayMatch): void;
  /**
   * Appends events to the feed as given: event_id is generated unless given (give an old one to
   * send a duplicate), mpxn is the registration's unless given, occurred_at is now unless given.
   * Order is the caller's: push a late or out-of-order event by pushing it after the others.
   */
  push(events: readonly FakeGatewayEventInput[]): GatewayEvent[];
  accept(request_id: string): GatewayEvent;
  reject(request_id: string, detail: string): GatewayEvent;
  object(request_id: string, detail?: string): GatewayEvent;
  upholdObjection(request_id: string, detail?: string): GatewayEvent;
  withdrawObjection(request_id: string, detail?: string): GatewayEvent;
  withdrawn(request_id: string): GatewayEvent;
  supplyStarted(request_id: string): GatewayEvent;
  /** GET /events answers 500: for the next `n` calls, from now on (`'down'`), or no more (`'up'`). */
  failEvents(how: number | 'down' | 'up'): void;
  /** Delay before every GET /events answer (0 by default). */
  eventsPageDelayMs: number;
  /** How many POSTs carried this request_id (in the body, or the Idempotency-Key when the body had none). */
  posts(request_id: string, route?: 'registration' | 'withdrawal'): number;
  /** Stops at once (idempotent): pending slow answers are dropped, connections destroyed. */
  close(): Promise<void>;
}

export interface FakeGatewayOptions {
  /** The bearer key it expects; FAKE_GATEWAY_KEY by default. */
  readonly key?: string;
  /** Default occurred_at of pushed events; the system clock by default. */
  readonly clock?: () => Date;
}

const WITHDRAWAL_PATH = /^\/registrations\/([^/]+)\/withdrawal$/;

export async function startFakeGateway(opts: FakeGatewayOptions = {}): Promise<FakeGateway> {
  const key = opts.key ?? FAKE_GATEWAY_KEY;
  const clock = opts.clock ?? (() => new Date());
  const log = new GatewayEventLog({ eventIdPrefix: 'evt-', foreignCursor: 'refuse' });
  const requests: GatewayRequestRecord[] = [];
  const registrations = new Map<string, RegistrationRequest>();
  const withdrawals = new Set<string>();
  const script: FakeGatewayScriptEntry[] = [];
  let eventsFailuresLeft = 0;
  let eventsDown = false;
  let eventsPageDelayMs = 0;

  const takeScripted = (route: 'registration' | 'withdrawal', requestId: string): FakeGatewayAnswer | undefined => {
    const i = script.findIndex((e) => (e.route === undefined || e.route === route) && (e.request_id === undefined || e.request_id === requestId));
    return i < 0 ? undefined : script.splice(i, 1)[0];
  };

  const answerPost = (route: 'registration' | 'withdrawal', requestId: string, onTaken: () => void, alreadyTaken: boolean): GatewayAnswer => {
    const scripted = takeScripted(route, requestId) ?? { status: alreadyTaken ? 409 : 202 };
    const { status } = scripted;
    if (scripted.takes ?? ((status >= 200 && status < 300) || status === 409)) onTaken();
    const retryAfter = scripted.retryAfter === undefined ? (status === 429 || status === 503 ? '1' : null) : scripted.retryAfter;
    return {
      status,
      body: scripted.body === undefined ? defaultBody(status, requestId) : scripted.body,
      headers: { ...(retryAfter !== null && { 'retry-after': String(retryAfter) }), ...scripted.headers },
      delayMs: scripted.delayMs,
      hang: scripted.hang,
      drop: scripted.drop,
    };
  };

  const answer = (call: GatewayCall): GatewayAnswer => {
    switch (call.route) {
      case 'events':
        if (eventsDown || eventsFailuresLeft > 0) {
          if (!eventsDown) eventsFailuresLeft -= 1;
          return { status: 500, body: { reason: 'the test gateway is down' }, delayMs: eventsPageDelayMs };
        }
        return { ...eventsAnswer(log, call), delayMs: eventsPageDelayMs };
      case 'registration': {
        const { request_id, registration } = call;
        const taken = registrations.has(request_id);
        return answerPost('registration', request_id, () => {
          if (!taken) registrations.set(request_id, registration);
        }, taken);
      }
      case 'withdrawal': {
        const { request_id } = call;
        return answerPost('withdrawal', request_id, () => withdrawals.add(request_id), withdrawals.has(request_id));
      }
    }
  };

  const server = await serveGateway({ key, answer, onRequest: (record) => requests.push(record) });

  const push = (inputs: readonly FakeGatewayEventInput[]): GatewayEvent[] =>
    inputs.map((input) => {
      const mpxn = input.mpxn ?? registrations.get(input.request_id)?.mpxn;
      if (mpxn === undefined) throw new Error(`fake gateway: no registration has request_id ${input.request_id}; give the event's mpxn`);
      return log.append({ ...input, mpxn, occurred_at: input.occurred_at ?? clock().toISOString() });
    });
  const one = (request_id: string, type: GatewayEventType, detail?: string): GatewayEvent =>
    push([{ request_id, type, ...(detail !== undefined && { detail }) }])[0] as GatewayEvent;

  return {
    url: server.url,
    key,
    requests,
    registrations,
    withdrawals,
    get events() {
      return log.events;
    },
    script,
    answerNext(n, given, match = {}) {
      const entry: FakeGatewayScriptEntry = { ...(typeof given === 'number' ? { status: given } : given), ...match };
      for (let i = 0; i < n; i++) script.push(entry);
    },
    push,
    accept: (id) => one(id, 'ACCEPTED'),
    reject: (id, detail) => one(id, 'REJECTED', detail),
    object: (id, detail) => one(id, 'OBJECTION_RECEIVED', detail),
    upholdObjection: (id, detail) => one(id, 'OBJECTION_UPHELD', detail),
    withdrawObjection: (id, detail) => one(id, 'OBJECTION_WITHDRAWN', detail),
    withdrawn: (id) => one(id, 'WITHDRAWN'),
    supplyStarted: (id) => one(id, 'SUPPLY_STARTED'),
    failEvents(how) {
      if (how === 'down') eventsDown = true;
      else if (how === 'up') {
        eventsDown = false;
        eventsFailuresLeft = 0;
      } else eventsFailuresLeft = how;
    },
    get eventsPageDelayMs() {
      return eventsPageDelayMs;
    },
    set eventsPageDelayMs(ms: number) {
      eventsPageDelayMs = ms;
    },
    posts(requestId, route = 'registration') {
      return requests.reduce((n, r) => (r.method === 'POST' && postedId(r, route) === requestId ? n + 1 : n), 0);
    },
    close: () => server.close(),
  };
}

function defaultBody(status: number, request_id: string): unknown {
  if (status >= 200 && status < 300) return { request_id };
  if (status === 409) return { request_id, reason: 'this request_id has already been received' };
  if (status === 400 || status === 422) return { reason: 'refused by the test gateway' };
  return { reason: `the test gateway answered ${status}` };
}

/** The request_id a recorded POST carried for `route`, or undefined when it was another route. */
function postedId(record: GatewayRequestRecord, route: 'registration' | 'withdrawal'): string | undefined {
  if (route === 'withdrawal') {
    const match = WITHDRAWAL_PATH.exec(record.path);
    if (match === null) return undefined;
    try {
      return decodeURIComponent(match[1] ?? '');
    } catch {
      return undefined;
    }
  }
  if (record.path !== '/registrations') return undefined;
  const body = record.body;
  if (typeof body === 'object' && body !== null && typeof (body as { request_id?: unknown }).request_id === 'string') {
    return (body as { request_id: string }).request_id;
  }
  return record.headers['idempotency-key'];
}
