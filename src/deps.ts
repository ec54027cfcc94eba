import type { Redis } from 'ioredis';
import type { Kysely } from 'kysely';
import type pg from 'pg';
import { systemClock, type Clock } from './clock.js';
import { createReferenceData, type ReferenceData } from './imports/reference/reference.service.js';
import type { Config } from './config.js';
import { createDb } from './db/create-db.js';
import type { Database } from './db/database.js';
import { createDocumentStore, type DocumentStore } from './documents/document-store.js';
import { createLogger, type Logger } from './log.js';
import { createRedisConnections } from './redis.js';
import type { OnAccountsCreated, RegistrationQueue, StageQueue } from './ports.js';
import { assertQueuesReachable, closeQueues, createQueues, enqueueRegistrations, enqueueWelcomeEmails, stageQueueOf, type Queues } from './queue/queues.js';
import { createPaymentVendorClient, type PaymentVendorClient } from './vendors/payment-vendor.js';
import {
  createInProgressMarkers,
  createProcessPermits,
  type InProgressMarkers,
  type ProcessPermits,
} from './queue/semaphore.js';

/** Everything the service's code needs from the outside world, built once per process and passed down. */
export interface Deps {
  readonly config: Config;
  readonly db: Kysely<Database>;
  readonly pool: pg.Pool;
  /**
   * Redis for everything a request or a job step waits on (queues, permits, markers, the sign-in
   * limiter): fails at once while Redis is away, and after 2 s when it does not answer (src/redis.ts).
   */
  readonly redis: Redis;
  /** Redis for BullMQ workers' blocking commands: waits for a reconnect however long it takes. */
  readonly redisBlocking: Redis;
  /** Runs `fn` each time Redis is reachable again after a loss (the workers re-enqueue what it lost). */
  onRedisReconnect(fn: () => void): void;
  readonly log: Logger;
  readonly clock: Clock;
  readonly permits: ProcessPermits;
  readonly inProgress: InProgressMarkers;
  readonly documents: DocumentStore;
  readonly vendors: PaymentVendorClient;
  /** The deployment's reference lists (decisions §6), cached and reloaded when an operator changes them. */
  readonly reference: ReferenceData;
  /** The BullMQ queues (producers only; workers are created by the worker entry points). */
  readonly queues: Queues;
  /** The domain's ports over the queues: src/imports/ takes these and never imports src/queue/. */
  readonly ports: { readonly stageQueue: StageQueue; readonly onAccountsCreated: OnAccountsCreated; readonly registrationQueue: RegistrationQueue };
  /** Closes every connection; each step runs even when another fails. Idempotent. */
  close(): Promise<void>;
}

export interface DepsOverrides {
  log?: Logger;
  clock?: Clock;
  /** Pool size for PostgreSQL, over DATABASE_POOL_SIZE. */
  dbPoolSize?: number;
  /** Tests shorten the vendor client's backoff. */
  vendorBackoffMs?: { min: number; max: number };
}

export function createDeps(config: Config, overrides: DepsOverrides = {}): Deps {
  const log = overrides.log ?? createLogger(config.logLevel);
  const { db, pool } = createDb(config.databaseUrl, {
    max: overrides.dbPoolSize ?? config.databasePoolSize,
    preparedStatements: config.databasePreparedStatements,
    onPoolError: (err) => log.warn({ err }, 'idle PostgreSQL client error'),
  });
  // The reference lists reload on their own connection: a request checking a payload may already hold
  // a transaction from the main pool, and with every pooled connection held that way a reload waiting
  // for one more would wait for ever.
  const referenceDb = createDb(config.databaseUrl, {
    max: 1,
    preparedStatements: config.databasePreparedStatements,
    onPoolError: (err) => log.warn({ err }, 'idle PostgreSQL client error (reference lists)'),
  }).db;
  const connections = createRedisConnections(config.redisUrl, log);
  const redis = connections.requests;
  const permits = createProcessPermits(redis, {
    prefix: config.redisPrefix,
    limit: config.processConcurrencyLimit,
    ttlMs: config.processPermitTtlMs,
    log,
  });
  const inProgress = createInProgressMarkers(redis, { prefix: config.redisPrefix, ttlMs: Math.max(config.processPermitTtlMs, 60_000) });

  const documents = createDocumentStore(config.documents);
  const vendors = createPaymentVendorClient({
    vendors: config.paymentVendors,
    timeoutMs: config.paymentVendorTimeoutMs,
    retries: config.paymentVendorRetries,
    log,
    ...(overrides.vendorBackoffMs ? { minBackoffMs: overrides.vendorBackoffMs.min, maxBackoffMs: overrides.vendorBackoffMs.max } : {}),
  });

  const queues = createQueues(redis, config.redisPrefix, log);

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      documents.close();
      await closeQueues(queues);
      const results = await Promise.allSettled([db.destroy(), referenceDb.destroy(), connections.quit()]);
      for (const r of results) if (r.status === 'rejected') log.warn({ err: r.reason }, 'error while closing');
    })();
    return closing;
  };
  return {
    config,
    db,
    pool,
    redis,
    redisBlocking: connections.blocking,
    onRedisReconnect: connections.onReconnect,
    log,
    clock: overrides.clock ?? systemClock,
    permits,
    inProgress,
    documents,
    vendors,
    reference: createReferenceData(referenceDb),
    queues,
    ports: { stageQueue: stageQueueOf(queues), onAccountsCreated: (ids) => enqueueWelcomeEmails(queues, ids), registrationQueue: { enqueue: (jobs) => enqueueRegistrations(queues, jobs), assertReachable: () => assertQueuesReachable(queues) } },
    close,
  };
}
