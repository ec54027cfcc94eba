import type { Redis } from 'ioredis';
import { Semaphore } from 'redis-semaphore';
import type { Logger } from '../log.js';

/** A held processing permit. release() is idempotent. */
export interface Permit {
  release(): Promise<void>;
}

/**
 * The deployment-wide cap on simultaneous account processing, backed by redis-semaphore.
 * Permits are leases: refreshed while held, expiring `ttlMs` after a holder dies.
 * A limit of 0 disables the cap (every acquire succeeds without touching Redis).
 */
export interface ProcessPermits {
  readonly limit: number;
  /** A permit, or null at once when none is free. */
  tryAcquire(): Promise<Permit | null>;
  /** Permits held right now (expired leases not counted). */
  inUse(): Promise<number>;
}

const NO_LIMIT_PERMIT: Permit = { release: async () => undefined };

/**
 * redis-semaphore refreshes leases from a timer and lets a Redis error escape it as an unhandled
 * rejection, which would crash the process on any Redis blip. A failed refresh is logged and the
 * permit treated as still held; the next successful refresh tells whether the lease survived.
 */
class ResilientSemaphore extends Semaphore {
  onRefreshError: (err: unknown) => void = () => undefined;

  protected override async _refresh(): Promise<boolean> {
    try {
      return await super._refresh();
    } catch (err) {
      this.onRefreshError(err);
      return true;
    }
  }
}

export function createProcessPermits(redis: Redis, opts: { prefix: string; limit: number; ttlMs: number; log: Logger }): ProcessPermits {
  const key = `${opts.prefix}:process-permits`;
  // redis-semaphore stores the lease set under its own `semaphore:` prefix.
  const leaseKey = `semaphore:${key}`;
  return {
    limit: opts.limit,
    async tryAcquire() {
      if (opts.limit <= 0) return NO_LIMIT_PERMIT;
      const semaphore = new ResilientSemaphore(redis, key, opts.limit, {
        lockTimeout: opts.ttlMs,
        refreshInterval: Math.max(50, Math.floor(opts.ttlMs / 3)),
        acquireAttemptsLimit: 1,
        onLockLost: (err) => opts.log.error({ err }, 'processing permit lease lost'),
      });
      semaphore.onRefreshError = (err) => opts.log.warn({ err }, 'could not refresh a processing permit; retrying');
      if (!(await semaphore.tryAcquire())) return null;
      let released = false;
      return {
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

/**
 * Marks an account as being processed, so the status endpoint can answer IN_PROGRESS.
 * A counter with a TTL: concurrent processes of one account stack, a crashed one expires.
 */
export interface InProgressMarkers {
  begin(supplierCode: string, externalAccountNumber: string): Promise<() => Promise<void>>;
  isInProgress(supplierCode: string, externalAccountNumber: string): Promise<boolean>;
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
    async isInProgress(s, e) {
      const v = await redis.get(keyOf(s, e));
      return v !== null && Number(v) > 0;
    },
  };
}
