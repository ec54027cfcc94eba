import { Redis } from 'ioredis';
import { AppError } from './errors.js';
import type { Logger } from './log.js';
import { within } from './timeout.js';

/** How long a request may wait for Redis before it answers 503 (also the connect timeout). */
export const REDIS_REQUEST_TIMEOUT_MS = 2_000;

/**
 * The two connections a process keeps to Redis.
 *
 * - `blocking`: BullMQ workers (blocking commands; `maxRetriesPerRequest: null`, as BullMQ requires),
 *   whose commands wait for a reconnect however long Redis is away.
 * - `requests`: everything a request waits on (enqueueing, processing permits, in-progress markers,
 *   the sign-in limiter, readiness). A command fails at once while the connection is down (no
 *   offline queue) and after REDIS_REQUEST_TIMEOUT_MS when Redis does not answer, so a request
 *   answers 503 `service_unavailable` instead of hanging. BullMQ recommends exactly this for queues.
 *
 * Both reconnect by themselves. Their errors are logged once when a connection is lost and once
 * when it is back, not on every retry.
 */
export interface RedisConnections {
  readonly blocking: Redis;
  readonly requests: Redis;
  /** Runs `fn` each time a connection is ready again after being lost (not on the first connect). */
  onReconnect(fn: () => void): void;
  quit(): Promise<void>;
}

export function createRedisConnections(url: string, log: Logger): RedisConnections {
  const blocking = new Redis(url, { maxRetriesPerRequest: null, connectTimeout: 10_000 });
  const requests = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: REDIS_REQUEST_TIMEOUT_MS,
    connectTimeout: REDIS_REQUEST_TIMEOUT_MS,
    // No INFO ready check and no library-info commands before the first command: against a Redis
    // that accepts connections and never answers, their timeouts surfaced as unhandled rejections
    // inside ioredis. Commands then time out after 2 s each, which is the 503 a request needs.
    enableReadyCheck: false,
    disableClientInfo: true,
  });
  const listeners: Array<() => void> = [];
  const watch = (redis: Redis, name: string) => {
    let lost = false;
    redis.on('error', (err: Error) => {
      if (lost) return;
      lost = true;
      log.warn({ err: { message: err.message, code: (err as { code?: string }).code }, connection: name }, 'Redis connection lost; reconnecting (logged once until it is back)');
    });
    redis.on('ready', () => {
      if (!lost) return;
      lost = false;
      log.info({ connection: name }, 'Redis connection back');
      if (name === 'requests') for (const fn of listeners) fn();
    });
  };
  watch(blocking, 'blocking');
  watch(requests, 'requests');
  return {
    blocking,
    requests,
    onReconnect: (fn) => listeners.push(fn),
    async quit() {
      // QUIT waits for a reply, which a Redis that is down or silent never sends: disconnect then.
      const close = async (r: Redis) => {
        if (r.status !== 'ready' || !(await within(REDIS_REQUEST_TIMEOUT_MS, r.quit()))) r.disconnect();
      };
      await Promise.allSettled([close(blocking), close(requests)]);
    },
  };
}

/**
 * The errors ioredis raises when Redis is away or silent, as opposed to a command Redis refused: a
 * closed or unwritable stream, a timed-out command, retries exhausted, a refused or reset socket.
 */
export function isRedisUnavailable(err: unknown): boolean {
  const e = err as { name?: string; message?: string; code?: string } | null;
  if (!e) return false;
  if (e.name === 'MaxRetriesPerRequestError') return true;
  if (typeof e.code === 'string' && ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND'].includes(e.code)) return true;
  // LOADING: a Redis that restarted is still reading its data set.
  return /Stream isn't writeable|Connection is closed|Command timed out|enableOfflineQueue|^LOADING/i.test(e.message ?? '');
}

export const redisUnavailable = (cause?: unknown): AppError =>
  new AppError(503, 'service_unavailable', 'A backing service is unreachable; retry shortly.', [], {}, { 'Retry-After': '5' }, cause === undefined ? {} : { cause });
