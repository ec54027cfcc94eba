import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { listenOnLoopback } from '../dev/loopback-server.js';

/**
 * A payment vendor speaking docs/payment-vendor-protocol.md over real HTTP on 127.0.0.1,
 * scripted per reference. Tests drive it through test/helpers/fake-vendor.ts; the demo can
 * run it as a sandbox vendor. It lives in src/ so production code never imports from test/.
 */

export const SANDBOX_VENDOR_API_KEY = 'sandbox-vendor-key';

export type SandboxBehaviour =
  /** 200 with `{ reference, type, status: 'ACTIVE', ...details }`; details may override any field. */
  | { readonly kind: 'found'; readonly details?: Readonly<Record<string, unknown>> }
  | { readonly kind: 'not_found' }
  | { readonly kind: 'rejected'; readonly status?: number; readonly reason?: string }
  /** `status` (500) for the first `times` calls (every call when unset), then `then` (found). */
  | {
      readonly kind: 'fail';
      readonly status?: number;
      readonly times?: number;
      readonly then?: SandboxBehaviour;
      /** Sent as the Retry-After header. */
      readonly retryAfter?: string;
    }
  /** Answers as `then` (found) after `delayMs`. */
  | { readonly kind: 'slow'; readonly delayMs: number; readonly then?: SandboxBehaviour }
  /** Fails (`status`, 500) a `failureRate` share of calls, drawn from a seeded sequence; otherwise found. */
  | { readonly kind: 'flap'; readonly failureRate: number; readonly seed?: number; readonly status?: number }
  /** Exactly this status, body and headers: for answers outside the protocol. */
  | { readonly kind: 'raw'; readonly status: number; readonly body: string; readonly headers?: Readonly<Record<string, string>> };

export interface SandboxRequest {
  readonly reference: string;
  /** The Authorization header as received, or null. */
  readonly authorization: string | null;
  /** Epoch milliseconds at arrival. */
  readonly at: number;
  readonly path: string;
}

export interface SandboxVendor {
  /** `http://127.0.0.1:<port>`: the value for base_url. */
  readonly baseUrl: string;
  readonly apiKey: string;
  /** Every request to the lookup route, in arrival order, including refused ones. */
  readonly requests: readonly SandboxRequest[];
  /** Scripts `reference`, restarting its counters. */
  set(reference: string, behaviour: SandboxBehaviour): void;
  /** Behaviour for references never set; references already answered by the old default restart. */
  setDefault(behaviour: SandboxBehaviour): void;
  countFor(reference: string): number;
  /** Forgets every script and request. */
  reset(): void;
  /** Stops at once: pending slow answers are dropped and open connections destroyed. */
  close(): Promise<void>;
}

export interface SandboxVendorOptions {
  readonly apiKey?: string;
  /** 0 (any free port) unless the demo wants a fixed one. */
  readonly port?: number;
  readonly defaultBehaviour?: SandboxBehaviour;
}

interface Script {
  readonly behaviour: SandboxBehaviour;
  readonly fromDefault: boolean;
  /** Counters per behaviour node, so `fail` inside `then` keeps its own count. */
  readonly state: Map<SandboxBehaviour, { calls: number; random?: () => number }>;
}

const ROUTE = /^(?:\/[^?#]*)?\/payment-instructions\/([^/?#]+)$/;

export async function startSandboxVendor(opts: SandboxVendorOptions = {}): Promise<SandboxVendor> {
  const apiKey = opts.apiKey ?? SANDBOX_VENDOR_API_KEY;
  const expectedAuth = Buffer.from(`Bearer ${apiKey}`);
  let defaultBehaviour: SandboxBehaviour = opts.defaultBehaviour ?? { kind: 'found' };
  const scripts = new Map<string, Script>();
  const requests: SandboxRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();

  const scriptFor = (reference: string): Script => {
    let script = scripts.get(reference);
    if (script === undefined) {
      script = { behaviour: defaultBehaviour, fromDefault: true, state: new Map() };
      scripts.set(reference, script);
    }
    return script;
  };

  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void => {
    if (res.destroyed || res.writableEnded) return;
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
    res.end(text);
  };

  const answer = (script: Script, behaviour: SandboxBehaviour, reference: string, res: ServerResponse): void => {
    let state = script.state.get(behaviour);
    if (state === undefined) {
      state = { calls: 0 };
      script.state.set(behaviour, state);
    }
    state.calls += 1;
    switch (behaviour.kind) {
      case 'found':
        send(res, 200, { reference, type: guessType(reference), status: 'ACTIVE', ...behaviour.details });
        return;
      case 'not_found':
        send(res, 404, { code: 'not_found', reason: 'no such payment instruction' });
        return;
      case 'rejected':
        send(res, behaviour.status ?? 422, { code: 'rejected', reason: behaviour.reason ?? 'payment instruction rejected' });
        return;
      case 'fail':
        if (behaviour.times === undefined || state.calls <= behaviour.times) {
          const headers: Record<string, string> = behaviour.retryAfter === undefined ? {} : { 'retry-after': behaviour.retryAfter };
          send(res, behaviour.status ?? 500, { code: 'vendor_error' }, headers);
          return;
        }
        answer(script, behaviour.then ?? FOUND, reference, res);
        return;
      case 'slow': {
        const then = behaviour.then ?? FOUND;
        const timer = setTimeout(() => {
          timers.delete(timer);
          answer(script, then, reference, res);
        }, behaviour.delayMs);
        timers.add(timer);
        // The client gave up: nothing to answer, and the timer must not outlive the exchange.
        res.on('close', () => {
          clearTimeout(timer);
          timers.delete(timer);
        });
        return;
      }
      case 'flap': {
        state.random ??= seededRandom(behaviour.seed ?? Math.floor(Math.random() * 2 ** 32));
        if (state.random() < behaviour.failureRate) send(res, behaviour.status ?? 500, { code: 'vendor_error' });
        else answer(script, FOUND, reference, res);
        return;
      }
      case 'raw':
        if (res.destroyed) return;
        res.writeHead(behaviour.status, { ...behaviour.headers });
        res.end(behaviour.body);
        return;
    }
  };

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const match = ROUTE.exec(path);
    if (match === null) {
      send(res, 404, { code: 'no_such_route' });
      return;
    }
    let reference: string;
    try {
      reference = decodeURIComponent(match[1] ?? '');
    } catch {
      send(res, 400, { code: 'bad_reference', reason: 'the reference is not valid percent-encoding' });
      return;
    }
    const authorization = req.headers.authorization ?? null;
    requests.push({ reference, authorization, at: Date.now(), path });
    if (req.method !== 'GET') {
      send(res, 405, { code: 'method_not_allowed' }, { allow: 'GET' });
      return;
    }
    const given = Buffer.from(authorization ?? '');
    if (given.length !== expectedAuth.length || !timingSafeEqual(given, expectedAuth)) {
      send(res, 401, { code: 'unauthorized' }, { 'www-authenticate': 'Bearer' });
      return;
    }
    const script = scriptFor(reference);
    answer(script, script.behaviour, reference, res);
  };

  const listening = await listenOnLoopback(createServer(handle), opts.port);

  return {
    baseUrl: listening.url,
    apiKey,
    requests,
    set(reference, behaviour) {
      scripts.set(reference, { behaviour, fromDefault: false, state: new Map() });
    },
    setDefault(behaviour) {
      defaultBehaviour = behaviour;
      for (const [reference, script] of scripts) if (script.fromDefault) scripts.delete(reference);
    },
    countFor(reference) {
      return requests.reduce((n, r) => (r.reference === reference ? n + 1 : n), 0);
    },
    reset() {
      scripts.clear();
      requests.length = 0;
    },
    async close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      await listening.close();
    },
  };
}

const FOUND: SandboxBehaviour = { kind: 'found' };

/** A demo can import either type without scripting: references starting "CARD" are cards. */
function guessType(reference: string): 'CARD' | 'DIRECT_DEBIT' {
  return reference.toUpperCase().startsWith('CARD') ? 'CARD' : 'DIRECT_DEBIT';
}

/**
 * Small seeded generator (mulberry32): a flapping vendor's failures repeat run to run when seeded.
 * Exported so tests can replay exactly the sequence the vendor draws.
 */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
