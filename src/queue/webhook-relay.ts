import type { Kysely } from 'kysely';
import pg from 'pg';
import type { Database } from '../db/database.js';
import type { Logger } from '../log.js';
import { listPending, listUnenqueued, markEnqueued } from '../webhooks/deliveries.repository.js';
import type { WebhookSettings } from '../webhooks/settings.js';
import { enqueueMissingWebhookDeliveries, enqueueWebhookDeliveries, type Queues } from './queues.js';

/** Deliveries read and enqueued at a time. */
const PAGE = 500;
const RECONNECT_MS = { min: 1_000, max: 30_000 };

export interface WebhookRelay {
  /** Hands the deliveries not yet enqueued to the queue, soon (runs never overlap). */
  wake(): void;
  /** Runs the sweep now: the relay, then a job for every pending delivery that has none. Answers the jobs it created. */
  sweep(): Promise<number>;
  /** Stops listening and sweeping; waits for a run in progress. Idempotent. */
  stop(): Promise<void>;
}

export interface WebhookRelayOptions {
  db: Kysely<Database>;
  /** For the LISTEN connection, which cannot be one of the pool's. */
  databaseUrl: string;
  queues: Queues;
  settings: WebhookSettings;
  log: Logger;
  onRedisReconnect(fn: () => void): void;
}

/**
 * Moves webhook deliveries from the outbox (webhook_deliveries, written with their events) to the
 * webhooks queue. Right after a commit: the table's trigger NOTIFYs, delivered only on commit, and the
 * relay LISTENs. Whatever that misses (this process down at the time, a connection lost, Redis losing
 * its jobs, a pooler that cannot LISTEN) the sweep finds: at start, every WEBHOOK_SWEEP_INTERVAL_S and
 * whenever Redis is back, it enqueues each pending delivery whose job is missing. Job ids are the
 * deliveries' ids, so two relays (or workers) racing add one job; a delivery's job checks its row first,
 * so a job added again after it was delivered sends nothing. Never throws: a failed run is logged and
 * the next one tries again.
 */
export function startWebhookRelay(opts: WebhookRelayOptions): WebhookRelay {
  const { db, log, settings } = opts;
  let stopped = false;

  /**
   * Runs `fn` alone: a call while it runs asks for one more run after it (the same one for every
   * such call), and resolves when that run has ended, so what the caller wrote before is seen.
   */
  const serial = (name: string, fn: () => Promise<unknown>) => {
    let running: Promise<void> | undefined;
    let next: Promise<void> | undefined;
    const start = (): Promise<void> => {
      running = fn()
        .then(() => undefined)
        .catch((err: unknown) => log.warn({ err }, `webhook ${name} failed; trying again later`))
        .finally(() => (running = undefined));
      return running;
    };
    const run = (): Promise<void> => {
      if (stopped) return Promise.resolve();
      if (!running) return start();
      next ??= running.then(() => {
        next = undefined;
        return stopped ? undefined : start();
      });
      return next;
    };
    return { run, idle: async () => void (await Promise.allSettled([running, next])) };
  };

  const relayOnce = async () => {
    for (;;) {
      const ids = await listUnenqueued(db, PAGE);
      if (ids.length === 0) return;
      await enqueueWebhookDeliveries(opts.queues, ids, settings);
      await markEnqueued(db, ids);
      if (ids.length < PAGE) return;
    }
  };
  const relay = serial('relay', relayOnce);

  let created = 0;
  const sweepOnce = async () => {
    await relayOnce();
    let after: string | null = null;
    for (;;) {
      const ids = await listPending(db, after, PAGE);
      if (ids.length === 0) break;
      created += await enqueueMissingWebhookDeliveries(opts.queues, ids, settings);
      after = ids.at(-1)!;
    }
  };
  const sweeper = serial('sweep', sweepOnce);
  const sweep = async () => {
    const before = created;
    await sweeper.run();
    const n = created - before;
    if (n > 0) log.info({ jobsCreated: n }, 'webhook sweep re-created delivery jobs');
    return n;
  };

  // LISTEN on a connection of its own, reconnecting with backoff; each (re)connect wakes the relay.
  let client: pg.Client | undefined;
  let reconnectTimer: NodeJS.Timeout | undefined;
  let delay = RECONNECT_MS.min;
  const listen = async () => {
    if (stopped) return;
    const c = new pg.Client({ connectionString: opts.databaseUrl, connectionTimeoutMillis: 10_000 });
    client = c;
    let lost = false;
    const onLost = (err?: unknown) => {
      if (lost || stopped) return;
      lost = true;
      if (err) log.warn({ err }, 'webhook relay lost its LISTEN connection; reconnecting (the sweep covers the gap)');
      c.removeAllListeners('notification');
      void c.end().catch(() => undefined);
      reconnectTimer = setTimeout(() => void listen(), delay);
      reconnectTimer.unref();
      delay = Math.min(delay * 2, RECONNECT_MS.max);
    };
    c.on('error', onLost);
    c.on('end', () => onLost());
    c.on('notification', () => void relay.run());
    try {
      await c.connect();
      await c.query('LISTEN webhook_deliveries');
      delay = RECONNECT_MS.min;
      void relay.run();
    } catch (err) {
      onLost(err);
    }
  };
  void listen();

  const timer = settings.sweepIntervalMs > 0 ? setInterval(() => void sweep(), settings.sweepIntervalMs) : undefined;
  timer?.unref();
  void sweep();
  opts.onRedisReconnect(() => void sweep());

  let stopping: Promise<void> | undefined;
  return {
    wake: () => void relay.run(),
    sweep,
    stop() {
      stopping ??= (async () => {
        stopped = true;
        if (timer) clearInterval(timer);
        if (reconnectTimer) clearTimeout(reconnectTimer);
        await Promise.allSettled([relay.idle(), sweeper.idle()]);
        await client?.end().catch(() => undefined);
      })();
      return stopping;
    },
  };
}
