import { setTimeout as sleep } from 'node:timers/promises';
import pRetry, { AbortError } from 'p-retry';
import { z } from 'zod';
import type { Config } from '../config.js';
import { parseJsonExact } from '../json.js';
import type { Logger } from '../log.js';

/**
 * Client for the payment vendors' lookup protocol (docs/payment-vendor-protocol.md):
 * `GET {base_url}/payment-instructions/{reference}` with `Authorization: Bearer <api_key>`.
 *
 * Outcomes the caller acts on are return values; "we could not get an answer" is the
 * thrown PaymentVendorUnavailable, so a caller cannot mistake it for a vendor's verdict.
 */

/** The published payment-instruction types (decisions §3, §6); which of them a deployment takes is reference data. */
export const INSTRUCTION_TYPES = ['BPAY', 'CARD', 'CUSTOM', 'DIRECT_DEBIT', 'GMO_REFUND', 'PAYMENT_SLIP'] as const;
export type InstructionType = (typeof INSTRUCTION_TYPES)[number];

export const INSTRUCTION_STATUSES = ['ACTIVE', 'PENDING', 'SUSPENDED', 'CANCELLED', 'EXPIRED', 'FAILED'] as const;
export type InstructionStatus = (typeof INSTRUCTION_STATUSES)[number];

export interface VendorInstructionDetails {
  readonly reference: string;
  readonly type: InstructionType;
  readonly status: InstructionStatus;
  /** The whole body the vendor returned, for storage: vendors add fields of their own. */
  readonly raw: Readonly<Record<string, unknown>>;
}

export type VendorLookup =
  | { readonly kind: 'found'; readonly details: VendorInstructionDetails }
  | { readonly kind: 'not_found' }
  | { readonly kind: 'rejected'; readonly reason: string }
  | { readonly kind: 'unknown_vendor' };

export interface PaymentVendorClient {
  /**
   * Asks `vendor` about `reference`. Throws PaymentVendorUnavailable when no verdict could be
   * obtained; when `signal` aborts, rejects with the signal's reason instead.
   */
  lookup(vendor: string, reference: string, signal?: AbortSignal): Promise<VendorLookup>;
}

export type UnavailableReason =
  | 'timeout'
  | 'network'
  | 'server_error'
  | 'rate_limited'
  | 'unauthorized'
  | 'unexpected_status'
  | 'malformed_response';

/** No verdict from the vendor: the import answers 500 `payment_vendor_unavailable`, and the request may be retried as-is. */
export class PaymentVendorUnavailable extends Error {
  override readonly name = 'PaymentVendorUnavailable';
  constructor(
    readonly vendor: string,
    /** HTTP requests made, including the last. */
    readonly attempts: number,
    readonly reason: UnavailableReason,
    /** The vendor's last HTTP status, when it answered at all. */
    readonly status: number | undefined,
    options?: { cause?: unknown },
  ) {
    super(`payment vendor ${vendor} unavailable after ${attempts} attempt(s): ${reason}${status === undefined ? '' : ` (HTTP ${status})`}`, options);
  }
}

export interface PaymentVendorClientOptions {
  readonly vendors: Config['paymentVendors'];
  /** Per attempt, covering the headers and the body. */
  readonly timeoutMs: number;
  /** Retries after the first attempt. */
  readonly retries: number;
  readonly log: Logger;
  readonly minBackoffMs?: number;
  readonly maxBackoffMs?: number;
  /** A longer Retry-After means the vendor will not be back within this request: give up at once. */
  readonly maxRetryAfterMs?: number;
}

export const DEFAULT_MIN_BACKOFF_MS = 250;
export const DEFAULT_MAX_BACKOFF_MS = 2_000;
export const DEFAULT_MAX_RETRY_AFTER_MS = 2_000;
const BACKOFF_FACTOR = 2;
/** A details document is small; anything larger is a vendor fault, not something to buffer. */
const MAX_BODY_BYTES = 256 * 1024;
const MAX_REASON_CHARS = 200;

const REJECTED_STATUSES = new Set([400, 409, 410, 422]);

const detailsSchema = z.looseObject({
  reference: z.string().min(1),
  type: z.enum(INSTRUCTION_TYPES),
  status: z.enum(INSTRUCTION_STATUSES),
});

/** One attempt's failure; `retryable` decides between another attempt and giving up now. */
class AttemptFailure extends Error {
  override readonly name = 'AttemptFailure';
  constructor(
    readonly reason: UnavailableReason,
    readonly retryable: boolean,
    readonly status: number | undefined,
    message: string,
    readonly retryAfterMs?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export function createPaymentVendorClient(opts: PaymentVendorClientOptions): PaymentVendorClient {
  const log = opts.log.child({ component: 'payment-vendor' });
  const maxBackoffMs = opts.maxBackoffMs ?? DEFAULT_MAX_BACKOFF_MS;
  // The retry library refuses min > max; a small max from a test or operator wins.
  const minBackoffMs = Math.min(opts.minBackoffMs ?? DEFAULT_MIN_BACKOFF_MS, maxBackoffMs);
  const maxRetryAfterMs = opts.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS;

  async function attempt(
    vendor: string,
    reference: string,
    url: string,
    apiKey: string,
    signal: AbortSignal | undefined,
  ): Promise<Exclude<VendorLookup, { kind: 'unknown_vendor' }>> {
    const timeout = AbortSignal.timeout(opts.timeoutMs);
    const combined = signal === undefined ? timeout : AbortSignal.any([signal, timeout]);
    const classify = (err: unknown, during: string): never => {
      if (signal?.aborted) throw new AbortError(asError(signal.reason));
      if (timeout.aborted) {
        throw new AttemptFailure('timeout', true, undefined, `no answer within ${opts.timeoutMs} ms (${during})`, undefined, { cause: err });
      }
      throw new AttemptFailure('network', true, undefined, `${during} failed: ${describe(err)}`, undefined, { cause: err });
    };

    let response: Response;
    try {
      response = await fetch(url, {
        method: 'GET',
        headers: { authorization: `Bearer ${apiKey}`, accept: 'application/json' },
        // A redirect is not part of the protocol, and following one could carry the key elsewhere.
        redirect: 'manual',
        signal: combined,
      });
    } catch (err) {
      return classify(err, 'request');
    }

    const status = response.status;
    let text: string;
    try {
      text = await readCapped(response, MAX_BODY_BYTES);
    } catch (err) {
      if (err instanceof AttemptFailure) throw new AbortError(err);
      return classify(err, 'reading the body');
    }

    if (status === 200) {
      const parsed = parseDetails(text);
      if (!parsed.ok) {
        // Retrying a deterministic bad answer within the same request cannot help.
        throw new AbortError(new AttemptFailure('malformed_response', false, status, parsed.problem));
      }
      const details = parsed.details;
      // Storing details of another instruction under this reference would be worse than failing.
      if (details.reference !== reference) {
        throw new AbortError(
          new AttemptFailure('malformed_response', false, status, 'the vendor answered about a different reference'),
        );
      }
      return { kind: 'found', details };
    }
    if (status === 404) return { kind: 'not_found' };
    if (REJECTED_STATUSES.has(status)) return { kind: 'rejected', reason: rejectionReason(text, status) };
    if (status === 401 || status === 403) {
      log.error({ vendor, status }, 'payment vendor refused our credentials: check its api_key in PAYMENT_VENDORS');
      throw new AbortError(new AttemptFailure('unauthorized', false, status, `credentials refused (HTTP ${status})`));
    }
    if (status === 408 || status === 429 || (status >= 500 && status <= 599)) {
      const retryAfterMs = status === 429 || status === 503 ? parseRetryAfter(response.headers.get('retry-after')) : undefined;
      const reason: UnavailableReason = status === 429 ? 'rate_limited' : status === 408 ? 'timeout' : 'server_error';
      if (retryAfterMs !== undefined && retryAfterMs > maxRetryAfterMs) {
        throw new AbortError(
          new AttemptFailure(reason, false, status, `HTTP ${status}, Retry-After ${retryAfterMs} ms exceeds ${maxRetryAfterMs} ms`, retryAfterMs),
        );
      }
      throw new AttemptFailure(reason, true, status, `HTTP ${status}`, retryAfterMs);
    }
    log.error({ vendor, status }, 'payment vendor answered outside the protocol');
    throw new AbortError(new AttemptFailure('unexpected_status', false, status, `unexpected HTTP ${status}`));
  }

  return {
    async lookup(vendor, reference, signal) {
      // Own-property check: a code like "constructor" must not reach Object.prototype.
      const target = Object.hasOwn(opts.vendors, vendor) ? opts.vendors[vendor] : undefined;
      if (target === undefined) return { kind: 'unknown_vendor' };
      signal?.throwIfAborted();
      const url = `${target.baseUrl.replace(/\/+$/, '')}/payment-instructions/${encodeURIComponent(reference)}`;

      let attempts = 0;
      let last: AttemptFailure | undefined;
      try {
        const result = await pRetry(
          async () => {
            attempts += 1;
            try {
              return await attempt(vendor, reference, url, target.apiKey, signal);
            } catch (err) {
              if (err instanceof AttemptFailure) last = err;
              else if (err instanceof AbortError && err.originalError instanceof AttemptFailure) last = err.originalError;
              throw err;
            }
          },
          {
            retries: opts.retries,
            factor: BACKOFF_FACTOR,
            minTimeout: minBackoffMs,
            maxTimeout: maxBackoffMs,
            // Jitter, so many imports failing together do not return to the vendor in step.
            randomize: true,
            signal,
            onFailedAttempt: async (err) => {
              const failure = err as unknown as AttemptFailure;
              log.warn(
                { vendor, reference, attempt: err.attemptNumber, retriesLeft: err.retriesLeft, reason: failure.reason, status: failure.status },
                'payment vendor attempt failed',
              );
              if (err.retriesLeft <= 0 || failure.retryAfterMs === undefined) return;
              // The library's coming delay is at least this; wait only what Retry-After still asks for.
              const backoffFloor = Math.min(minBackoffMs * BACKOFF_FACTOR ** (err.attemptNumber - 1), maxBackoffMs);
              const extra = failure.retryAfterMs - backoffFloor;
              if (extra > 0) await sleep(extra, undefined, signal === undefined ? undefined : { signal });
            },
          },
        );
        log.debug({ vendor, reference, kind: result.kind, attempts }, 'payment vendor answered');
        return result;
      } catch (err) {
        if (signal?.aborted) throw signal.reason;
        const failure = last ?? new AttemptFailure('network', false, undefined, describe(err), undefined, { cause: err });
        log.error(
          { vendor, reference, attempts, reason: failure.reason, status: failure.status, err: failure },
          'payment vendor unavailable',
        );
        throw new PaymentVendorUnavailable(vendor, attempts, failure.reason, failure.status, { cause: failure });
      }
    },
  };
}

function parseDetails(text: string): { ok: true; details: VendorInstructionDetails } | { ok: false; problem: string } {
  let json: unknown;
  try {
    json = parseJsonExact(text);
  } catch {
    return { ok: false, problem: 'the 200 body is not JSON' };
  }
  const parsed = detailsSchema.safeParse(json);
  if (!parsed.success) {
    const where = parsed.error.issues.map((i) => i.path.map(String).join('.') || '(body)').join(', ');
    return { ok: false, problem: `the 200 body does not fit the protocol at: ${where}` };
  }
  const raw = parsed.data as Record<string, unknown>;
  return { ok: true, details: { reference: parsed.data.reference, type: parsed.data.type, status: parsed.data.status, raw } };
}

/** The vendor's own words when it gives them, so an operator can tell rejections apart. */
function rejectionReason(text: string, status: number): string {
  let reason: unknown;
  try {
    const json = parseJsonExact(text) as Record<string, unknown> | null;
    reason = json?.reason ?? json?.detail ?? json?.message;
  } catch {
    reason = undefined;
  }
  const words = typeof reason === 'string' && reason.trim() !== '' ? reason.trim() : `the vendor answered HTTP ${status}`;
  return words.length > MAX_REASON_CHARS ? `${words.slice(0, MAX_REASON_CHARS)}…` : words;
}

/** Retry-After as delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

async function readCapped(response: Response, maxBytes: number): Promise<string> {
  if (response.body === null) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw new AttemptFailure('malformed_response', false, response.status, `body larger than ${maxBytes} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function asError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? `: ${(err.cause as NodeJS.ErrnoException).code ?? err.cause.message}` : '';
  return `${err.message}${cause}`;
}
