import type { Redis } from 'ioredis';
import { Semaphore } from 'redis-semaphore';
import { AppError } from '../errors.js';
import type { Logger } from '../log.js';
import type { InProgressMarkers, Permit, ProcessPermits } from '../ports.js';

export type { InProgressMarkers, Permit, ProcessPermits } from '../ports.js';


/**
 * The error of a guarded step whose permit was lost: 503 with Retry-After, which REST clients retry
 * and the queue workers treat as transient (the job is retried with backoff, the item stays open).
 */
export const permitLost = (): AppError =>
  new AppError(503, 'processing_permit_lost', 'The processing permit expired while this account was being processed (a stall longer than its lease); nothing was committed. Retry shortly.', [], {}, {
    'Retry-After': '1',
  });


const NO_LIMIT_PERMIT: Permit = { release: async () => undefined, signal: new AbortController().signal, assertHeld: async () => undefined };

/** What a refresh found: the lease renewed, the lease gone, or no answer from Redis. */
type RefreshResult = 'held' | 'lost' | 'unanswered';

/**
 * redis-semaphore with two changes.
 *
 * - A refresh that fails (Redis error) no longer escapes its timer as an unhandled rejection, which
 *   would crash the process on any Redis blip: it is logged and the lease treated as still held, but
 *   only until the lease's expiry by this host's clock, counted from the start of the last call that
 *   confirmed it (the acquire or a refresh). Past that, others may have taken it: the lease is lost,
 *   and redis-semaphore calls onLockLost.
 * - `refreshNow()` runs a refresh at once and tells what it found, for a holder about to commit.
 *
 * redis-semaphore's own refresh tells a lost lease as well: its Lua first drops expired entries (this
 * holder's included, after a stall) and then finds the holder's entry gone.
 */
class LeasedSemaphore extends Semaphore {
  onRefreshError: (err: unknown) => void = () => undefined;
  /** Local time at which the last successful acquire or refresh started (the lease runs ttl from no earlier). */
  #confirmedAt = -Infinity;
  readonly #ttlMs: number;

  constructor(redis: Redis, key: string, limit: number, options: { ttlMs: number; onLockLost: (err: Error) => void }) {
    super(redis, key, limit, {
      lockTimeout: options.ttlMs,
      refreshInterval: Math.max(50, Math.floor(options.ttlMs / 3)),
      acquireAttemptsLimit: 1,
      onLockLost: options.onLockLost,
    });
    this.#ttlMs = options.ttlMs;
  }

  /** Until when, by this host's clock, the lease is this holder's without a further refresh. */
  get expiresAt(): number {
    return this.#confirmedAt + this.#ttlMs;
  }

  protected override async _acquire(abortSignal?: AbortSignal): Promise<boolean> {
    const started = Date.now();
    const ok = await super._acquire(abortSignal);
    if (ok) this.#confirmedAt = started;
    return ok;
  }

  protected override async _refresh(): Promise<boolean> {
    const found = await this.refreshNow();
    return found === 'held' || (found === 'unanswered' && Date.now() < this.expiresAt);
  }

  async refreshNow(): Promise<RefreshResult> {
    const started = Date.now();
    try {
      if (!(await super._refresh())) return 'lost';
      this.#confirmedAt = started;
      return 'held';
    } catch (err) {
      this.onRefreshError(err);
      return 'unanswered';
    }
  }
}

/** `work`'s value, or 'unanswered' when it has not settled within `ms`. */
async function orUnanswered(ms: number, work: Promise<RefreshResult>): Promise<RefreshResult> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<RefreshResult>((resolve) => {
    timer = setTimeout(() => resolve('unanswered'), Math.max(0, ms));
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

export function createProcessPermits(redis: Redis, opts: { prefix: string; limit: number; ttlMs: number; log: Logger }): ProcessPermits {
  const key = `${opts.prefix}:process-permits`;
  // redis-semaphore stores the lease set under its own `semaphore:` prefix.
  const leaseKey = `semaphore:${key}`;
  // With Redis silent, only the clock speaks for the lease: its last tenth is too close to the end for a commit.
  const clockMargin = Math.ceil(opts.ttlMs / 10);
  return {
    limit: opts.limit,
    async tryAcquire() {
      if (opts.limit <= 0) return NO_LIMIT_PERMIT;
      const lost = new AbortController();
      const semaphore = new LeasedSemaphore(redis, key, opts.limit, {
        ttlMs: opts.ttlMs,
        onLockLost: (err) => {
          opts.log.error({ err }, 'processing permit lease lost; the work it guards will not commit');
          if (!lost.signal.aborted) lost.abort(permitLost());
        },
      });
      semaphore.onRefreshError = (err) => opts.log.warn({ err }, 'could not refresh a processing permit; retrying');
      if (!(await semaphore.tryAcquire())) return null;
      let released = false;
      /** Stops refreshing a lease that is no longer this holder's and says so; always throws. */
      const giveUp = (why: string): never => {
        semaphore.stopRefresh();
        if (!lost.signal.aborted) {
          opts.log.error({ why }, 'processing permit lease lost; the work it guards will not commit');
          lost.abort(permitLost());
        }
        throw permitLost();
      };
      return {
        signal: lost.signal,
        async assertHeld() {
          if (released || lost.signal.aborted) throw permitLost();
          // Past its expiry by this host's clock (a stall): others may hold it already, whatever Redis says.
          if (Date.now() >= semaphore.expiresAt) giveUp(`expired ${Date.now() - semaphore.expiresAt} ms ago by this host's clock`);
          // Ask Redis (which renews it), no longer than the lease still has by the clock.
          const found = await orUnanswered(semaphore.expiresAt - clockMargin - Date.now(), semaphore.refreshNow());
          if (found === 'lost') giveUp('Redis no longer has it');
          if (found === 'unanswered' && Date.now() >= semaphore.expiresAt - clockMargin) giveUp('Redis does not answer and the lease is about to expire');
          if (lost.signal.aborted) throw permitLost();
        },
        async release() {
          if (released) return;
          released = true;
          semaphore.stopRefresh();
          await semaphore.release();
        },
      };
    },
    async inUse() {
      if (opts.limit <= 0) return 0;
      return redis.zcount(leaseKey, Date.now() - opts.ttlMs, '+inf');
    },
  };
}


export function createInProgressMarkers(redis: Redis, opts: { prefix: string; ttlMs: number }): InProgressMarkers {
  const keyOf = (s: string, e: string) => `${opts.prefix}:inprogress:${JSON.stringify([s, e])}`;
  return {
    async begin(s, e) {
      const key = keyOf(s, e);
      await redis.multi().incr(key).pexpire(key, opts.ttlMs).exec();
      let ended = false;
      return async () => {
        if (ended) return;
        ended = true;
        const left = await redis.decr(key);
        if (left <= 0) await redis.del(key);
      };
    },
    async beginMany(pairs) {
      if (pairs.length === 0) return async () => undefined;
      const keys = pairs.map(([s, e]) => keyOf(s, e));
      const start = redis.multi();
      for (const key of keys) start.incr(key).pexpire(key, opts.ttlMs);
      await start.exec();
      let ended = false;
      return async () => {
        if (ended) return;
        ended = true;
        const stop = redis.multi();
        for (const key of keys) stop.decr(key);
        const left = (await stop.exec()) ?? [];
        const done = keys.filter((_, i) => Number(left[i]?.[1] ?? 0) <= 0);
        if (done.length > 0) await redis.del(...done);
      };
    },
    async isInProgress(s, e) {
      const v = await redis.get(keyOf(s, e));
      return v !== null && Number(v) > 0;
    },
  };
}
