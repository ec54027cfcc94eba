import type { Stage, StageJobData } from './pipeline/routing.js';

// The domain's ports: what src/imports/ needs from the queue and from Redis, as small interfaces.
// deps.ts builds them over BullMQ and redis-semaphore (src/queue/); the domain never imports those.

/**
 * A held processing permit. release() is idempotent.
 *
 * A permit is a lease that lives PROCESS_PERMIT_TTL_MS past its last refresh. A holder that stalls
 * longer than that (event loop blocked, Redis unreachable) may have lost it to someone else, and then
 * more accounts than the limit run at once. The holder learns it: `signal` aborts as soon as the loss
 * is known, and `assertHeld()`, called right before the guarded work commits, refuses once the lease
 * cannot be this holder's any more, so the work rolls back and is retried instead.
 */
export interface Permit {
  release(): Promise<void>;
  /** Aborted (with a permitLost error as its reason) once the lease is known to be lost. */
  readonly signal: AbortSignal;
  /**
   * Resolves when the lease is still this holder's: confirmed in Redis just now (which also renews
   * it), or, when Redis does not answer, not within its last tenth of life by this host's clock since
   * the last confirmation. Throws permitLost() (503, transient: retry) otherwise, and aborts `signal`.
   */
  assertHeld(): Promise<void>;
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

/**
 * Marks an account as being processed, so the status endpoint can answer IN_PROGRESS.
 * A counter with a TTL: concurrent processes of one account stack, a crashed one expires.
 */
export interface InProgressMarkers {
  begin(supplierCode: string, externalAccountNumber: string): Promise<() => Promise<void>>;
  /** begin for a set of accounts, in one round trip each way. */
  beginMany(pairs: ReadonlyArray<readonly [supplierCode: string, externalAccountNumber: string]>): Promise<() => Promise<void>>;
  isInProgress(supplierCode: string, externalAccountNumber: string): Promise<boolean>;
}

/** The pipeline's queue: where stage jobs are sent (BullMQ in src/queue/). Job ids are deterministic, so a repeat is harmless. */
export interface StageQueue {
  enqueue(stage: Stage, jobs: readonly StageJobData[]): Promise<void>;
  /** Enqueues only the jobs that do not exist; answers how many it really created (the repair's report). */
  enqueueMissing(stage: Stage, jobs: readonly StageJobData[]): Promise<number>;
  /** Resolves when the queue's Redis answers; 503 service_unavailable otherwise. */
  assertReachable(): Promise<void>;
}

/** Where marked meter points' registration requests and withdrawals are sent (BullMQ in src/queue/): one job per attempt. */
export interface RegistrationQueue {
  enqueue(jobs: ReadonlyArray<{ requestId: string; kind: 'request' | 'withdrawal' }>): Promise<void>;
  /** Resolves when the queue's Redis answers; 503 service_unavailable otherwise (asked before anything is marked). */
  assertReachable(): Promise<void>;
}

/** What the domain tells the queue once accounts have committed: their welcome e-mails are sent. */
export type OnAccountsCreated = (accountIds: readonly string[]) => Promise<void>;
