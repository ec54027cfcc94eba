import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '../../src/config.js';
import { startStatisticsKeeper, type StatisticsKeeper } from '../../src/db/statistics.js';
import { createDeps } from '../../src/deps.js';
import { createServices } from '../../src/imports/services.js';
import { createLogger } from '../../src/log.js';
import type { RegistrationQueue } from '../../src/ports.js';
import { EVENTS_PAGE, createRegistrationEventsProcessor } from '../../src/queue/registration.js';
import { startWorkers, type WorkerSet } from '../../src/queue/workers.js';
import { readEvents, type GatewayConfig } from '../../src/registration/gateway-client.js';
import { createRegistrationService } from '../../src/registration/registration.service.js';
import { startSandboxGateway } from '../../src/registration/sandbox-gateway.js';
import { onCleanup } from './cleanup.js';
import { deleteRedisPrefix, TEAM, type BenchEnv } from './env.js';
import { Meter, type CpuSeconds } from './meter.js';
import { pgClient } from './pg.js';
import { perUnit, settledCounters, type PerUnit } from './pgstats.js';
import { round } from './stats.js';

/**
 * The registration scenario (issue 15, part 8): the meter points of `accounts` accounts marked for
 * registration, their requests sent by the real registration worker to the sandbox gateway on
 * loopback (which takes every request at once and, the supply start dates being past, emits
 * ACCEPTED and SUPPLY_STARTED for each), then the real events poller run back to back until every
 * meter point is ON_SUPPLY. Requests and events are timed apart: the poller does not run while the
 * requests go out.
 */
export interface RegistrationResult {
  accounts: number;
  meter_points: number;
  /** Events the gateway emitted (ACCEPTED and SUPPLY_STARTED: two per meter point). */
  events: number;
  /** REGISTRATION_RATE_PER_SECOND as the bench sets it: high enough never to be the limit. */
  rate_limit_per_s: number;
  /** WORKER_CONCURRENCY_REGISTRATION of the one registration worker. */
  worker_concurrency: number;
  events_page: number;
  marking: { seconds: number; meter_points_per_s: number; enqueue_seconds: number; chunks: number };
  requests: { seconds: number; per_s: number; wall_seconds: number; cpu_s: CpuSeconds; pg_per_meter_point: PerUnit };
  events_applied: {
    seconds: number;
    per_s: number;
    pages: number;
    poller_runs: number;
    /** The same pages read again from the gateway after the run, with nothing applied: the fetch's share. */
    fetch_only_seconds: number;
    cpu_s: CpuSeconds;
    pg_per_event: PerUnit;
  };
  problems: string[];
}

export interface RegistrationOptions {
  accounts: number;
  settleMs: number;
  log: (line: string) => void;
}

/** Not the limit: BullMQ's limiter never holds a job back at this rate (the config's maximum). */
const RATE_PER_SECOND = 10_000;
const SUPPLIER = 'REGBENCH';

/**
 * Accounts with one electricity meter point each, and a gas one on every second account, inserted
 * set-based (the import pipeline is not what this measures). The supply start dates are a month
 * past, so the sandbox reports the supply start at once. Answers the account ids, in id order.
 */
async function seed(url: string, accounts: number): Promise<{ accountIds: string[]; meterPoints: number }> {
  const client = pgClient({ connectionString: url });
  await client.connect();
  try {
    await client.query('BEGIN');
    const supplier = (await client.query<{ id: string }>("INSERT INTO import_suppliers (code, name) VALUES ($1, 'Bench registration') RETURNING id", [SUPPLIER])).rows[0]!.id;
    const team = (await client.query<{ id: string }>('INSERT INTO operations_teams (name) VALUES ($1) RETURNING id', [TEAM])).rows[0]!.id;
    await client.query(
      `INSERT INTO accounts (number, import_supplier_id, external_account_number, operations_team_id, account_type, communication_preference)
       SELECT 'A-' || lpad(upper(to_hex(g)), 8, '0'), $1, 'RG' || lpad(g::text, 9, '0'), $2, 'DOMESTIC', 'ONLINE'
       FROM generate_series(1, $3::int) g`,
      [supplier, team, accounts],
    );
    await client.query(
      `INSERT INTO supply_addresses (account_id, position, supply_address1, supply_postcode, customer_at_supply_address_from_date)
       SELECT id, 1, id || ' Bench Street', 'SW1A 1AA', DATE '2020-01-01' FROM accounts WHERE import_supplier_id = $1`,
      [supplier],
    );
    await client.query(
      `INSERT INTO meter_points (account_id, supply_address_id, position, supply_type, identifier, mpid, supply_start_date)
       SELECT s.account_id, s.id, 1, 'ELECTRICITY', '19' || lpad(s.account_id::text, 11, '0'), 'BNCH', current_date - 30
       FROM supply_addresses s JOIN accounts a ON a.id = s.account_id WHERE a.import_supplier_id = $1`,
      [supplier],
    );
    await client.query(
      `INSERT INTO meter_points (account_id, supply_address_id, position, supply_type, identifier, mpid, shipper_mpid, supply_start_date)
       SELECT s.account_id, s.id, 2, 'GAS', '7' || lpad(s.account_id::text, 9, '0'), 'BNCH', 'SHIP', current_date - 30
       FROM supply_addresses s JOIN accounts a ON a.id = s.account_id WHERE a.import_supplier_id = $1 AND a.id % 2 = 0`,
      [supplier],
    );
    await client.query('COMMIT');
    // Fresh statistics for the tables just filled, as a deployment's statistics keeper would have
    // them; the registration tables are left to the keeper that runs beside the workers, as they grow.
    await client.query('ANALYZE accounts, supply_addresses, meter_points');
    const ids = await client.query<{ id: string }>('SELECT id::text AS id FROM accounts WHERE import_supplier_id = $1 ORDER BY id', [supplier]);
    const mps = await client.query<{ n: string }>('SELECT count(*) AS n FROM meter_points');
    return { accountIds: ids.rows.map((r) => r.id), meterPoints: Number(mps.rows[0]!.n) };
  } finally {
    await client.end();
  }
}

/** Waits until `done` answers true, checking every 100 ms; throws after `timeoutMs` with what `describe` says. */
async function waitFor(done: () => Promise<boolean>, timeoutMs: number, describe: () => Promise<string>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${Math.round(timeoutMs / 1000)} s: ${await describe()}`);
    await sleep(100);
  }
}

export async function runRegistration(env: BenchEnv, opts: RegistrationOptions): Promise<RegistrationResult> {
  const { log } = opts;
  const url = await env.siblingDatabase('registration');
  const gateway = await startSandboxGateway({ key: randomBytes(24).toString('base64url') });
  onCleanup('close the sandbox registration gateway', () => gateway.close());
  // Its own prefix, so its queues never meet the cohort's workers; deleted with the run.
  const prefix = `${env.redisPrefix}-registration`;
  onCleanup(`delete Redis keys ${prefix}:*`, async () => {
    log(`deleted ${await deleteRedisPrefix(env.redis, prefix)} Redis key(s) under ${prefix}`);
  });

  const config = loadConfig(
    {
      NODE_ENV: 'production',
      DATABASE_URL: url,
      REDIS_URL: env.redisUrl,
      REDIS_PREFIX: prefix,
      DOCUMENTS_DIR: env.docsDir,
      LOG_LEVEL: 'warn',
      REGISTRATION_GATEWAY_URL: gateway.url,
      REGISTRATION_GATEWAY_KEY: gateway.key,
      REGISTRATION_RATE_PER_SECOND: String(RATE_PER_SECOND),
      // Passed through on purpose, for tuning experiments (as the cohort's WORKER_CONCURRENCY_*).
      WORKER_CONCURRENCY_REGISTRATION: process.env.WORKER_CONCURRENCY_REGISTRATION,
    },
    { signsTokens: false },
  );
  const gw: GatewayConfig = config.registrationGateway!;
  /**
   * One service instance per phase, closed at its end as a process would be: its backends exit and
   * publish their statistics, so each phase's PostgreSQL counters are its own and complete.
   */
  const instance = () => {
    const deps = createDeps(config, { log: createLogger('warn') });
    let workers: WorkerSet | undefined;
    let statistics: StatisticsKeeper | undefined;
    const close = async () => {
      await workers?.close(2_000);
      await statistics?.stop();
      await deps.close();
    };
    onCleanup('stop the registration workers and close their connections', close);
    return {
      deps,
      services: createServices(deps),
      /** The registration queue's worker, with the statistics keeper a worker process runs beside it (src/queue/worker-main.ts). */
      startWorkers(queues: Array<'registration'>) {
        workers = startWorkers(deps, this.services, { queues });
        statistics = startStatisticsKeeper(deps.db, { intervalMs: config.databaseAnalyzeIntervalMs, log: deps.log });
      },
      close,
    };
  };
  const problems: string[] = [];

  const client = pgClient({ connectionString: url });
  await client.connect();
  onCleanup('close the registration probe connection', () => client.end());
  const count = async (text: string): Promise<number> => Number((await client.query<{ n: string }>(text)).rows[0]!.n);
  const statuses = async (): Promise<string> =>
    (await client.query<{ status: string; n: string }>('SELECT registration_status AS status, count(*) AS n FROM meter_points GROUP BY 1 ORDER BY 1')).rows.map((r) => `${r.status} ${r.n}`).join(', ');

  const t0 = performance.now();
  const { accountIds, meterPoints } = await seed(url, opts.accounts);
  log(`  seeded ${accountIds.length} accounts with ${meterPoints} meter points in ${((performance.now() - t0) / 1000).toFixed(1)} s (set-based SQL, supply start dates past)`);

  // (a) Marking: the registration service's markAccounts, as a batch registration runs it; the
  // enqueue (one addBulk a chunk) is timed on its own too.
  const marking = instance();
  let enqueueMs = 0;
  let chunks = 0;
  const queue: RegistrationQueue = {
    async enqueue(jobs) {
      const t = performance.now();
      await marking.deps.ports.registrationQueue.enqueue(jobs);
      enqueueMs += performance.now() - t;
      chunks++;
    },
    assertReachable: () => marking.deps.ports.registrationQueue.assertReachable(),
  };
  const tMark = performance.now();
  const marked = await createRegistrationService({ db: marking.deps.db, queue, gateway: gw }).markAccounts(accountIds);
  const markSeconds = (performance.now() - tMark) / 1000;
  await marking.close();
  if (marked.marked !== meterPoints || marked.not_marked !== 0) problems.push(`marking marked ${marked.marked} and left ${marked.not_marked} of ${meterPoints} meter points`);
  log(`  marked ${marked.marked} meter points in ${markSeconds.toFixed(2)} s (${chunks} chunks; enqueue ${(enqueueMs / 1000).toFixed(2)} s of it)`);

  // (b) Requests: the real registration worker (BullMQ limiter at RATE_PER_SECOND), the poller stopped.
  await client.query('CHECKPOINT').catch(() => undefined);
  const pgBeforeRequests = await settledCounters(url, opts.settleMs);
  const requesting = instance();
  const requestsMeter = new Meter({});
  requestsMeter.start();
  const tRequests = performance.now();
  requesting.startWorkers(['registration']);
  const requested = `SELECT count(*) AS n FROM meter_points WHERE registration_status <> 'UNDERGOING_REGISTRATION'`;
  await waitFor(async () => (await count(requested)) >= meterPoints, Math.max(120_000, meterPoints * 20), async () => `meter points by status: ${await statuses()}`);
  const requestsWall = (performance.now() - tRequests) / 1000;
  const requestsMeasured = requestsMeter.stop();
  await requesting.close();
  const pgAfterRequests = await settledCounters(url, opts.settleMs);
  const span = (
    await client.query<{ n: string; taken: string; seconds: string | null }>(
      `SELECT count(*) AS n, count(*) FILTER (WHERE taken) AS taken, extract(epoch FROM max(answered_at) - min(send_started_at)) AS seconds FROM registration_attempts`,
    )
  ).rows[0]!;
  const requestSeconds = Number(span.seconds ?? NaN);
  if (Number(span.taken) !== meterPoints) problems.push(`the gateway took ${span.taken} of ${meterPoints} requests (${span.n} attempts)`);
  log(`  ${span.taken} requests taken in ${requestSeconds.toFixed(2)} s, first sent to last answered (${requestsWall.toFixed(2)} s from the workers' start)`);

  // (c) Events: the real poller, run back to back until it has applied every event.
  const expectedEvents = 2 * meterPoints;
  await client.query('CHECKPOINT').catch(() => undefined);
  const pgBeforeEvents = await settledCounters(url, opts.settleMs);
  const polling = instance();
  const { deps } = polling;
  const poll = createRegistrationEventsProcessor({ db: deps.db, log: deps.log, gateway: gw, queues: deps.queues, markAccounts: (ids) => polling.services.registration.markAccounts(ids) });
  const statistics = startStatisticsKeeper(deps.db, { intervalMs: config.databaseAnalyzeIntervalMs, log: deps.log });
  const eventsMeter = new Meter({});
  let pages = 0;
  let runs = 0;
  let applied = 0;
  eventsMeter.start();
  const tEvents = performance.now();
  while (applied < expectedEvents) {
    const run = await poll();
    runs++;
    pages += run.pages;
    applied += run.applied;
    if (run.busy) throw new Error('the poller found the cursor locked: something else is polling this database');
    if (run.applied === 0) break;
  }
  const eventsSeconds = (performance.now() - tEvents) / 1000;
  const eventsMeasured = eventsMeter.stop();
  await statistics.stop();
  await polling.close();
  const pgAfterEvents = await settledCounters(url, opts.settleMs);
  log(`  ${applied} events applied in ${eventsSeconds.toFixed(2)} s (${pages} pages of up to ${EVENTS_PAGE}, ${runs} poller run(s))`);

  // The fetch's share: the same pages read again, applying nothing.
  const tFetch = performance.now();
  let fed = 0;
  for (let cursor: string | null = null; ; ) {
    const page = await readEvents(gw, cursor, EVENTS_PAGE);
    fed += page.events.length;
    cursor = page.cursor;
    if (page.events.length < EVENTS_PAGE) break;
  }
  const fetchSeconds = (performance.now() - tFetch) / 1000;

  problems.push(...(await verify(count, statuses, meterPoints, expectedEvents, fed)));
  for (const p of problems) log(`  PROBLEM: ${p}`);
  return {
    accounts: accountIds.length,
    meter_points: meterPoints,
    events: fed,
    rate_limit_per_s: config.registration.ratePerSecond,
    worker_concurrency: config.workerConcurrency.registration,
    events_page: EVENTS_PAGE,
    marking: { seconds: round(markSeconds), meter_points_per_s: round(meterPoints / markSeconds, 0), enqueue_seconds: round(enqueueMs / 1000), chunks },
    requests: {
      seconds: round(requestSeconds),
      per_s: round(meterPoints / requestSeconds, 0),
      wall_seconds: round(requestsWall),
      cpu_s: requestsMeasured.cpu,
      pg_per_meter_point: perUnit(pgBeforeRequests, pgAfterRequests, meterPoints),
    },
    events_applied: {
      seconds: round(eventsSeconds),
      per_s: round(applied / eventsSeconds, 0),
      pages,
      poller_runs: runs,
      fetch_only_seconds: round(fetchSeconds),
      cpu_s: eventsMeasured.cpu,
      pg_per_event: perUnit(pgBeforeEvents, pgAfterEvents, Math.max(1, applied)),
    },
    problems,
  };
}

/**
 * Every meter point ON_SUPPLY by exactly one attempt; its history exactly: marked, taken, ACCEPTED and
 * SUPPLY_STARTED (two rows per meter point plus one per event), every event applied once and none twice.
 */
async function verify(count: (sql: string) => Promise<number>, statuses: () => Promise<string>, meterPoints: number, events: number, fed: number): Promise<string[]> {
  const problems: string[] = [];
  const expect = async (what: string, sql: string, want: number) => {
    const got = await count(sql);
    if (got !== want) problems.push(`${what}: ${got}, expected ${want}`);
  };
  if (fed !== events) problems.push(`the gateway's feed holds ${fed} events, expected ${events} (ACCEPTED and SUPPLY_STARTED per meter point)`);
  const onSupply = await count(`SELECT count(*) AS n FROM meter_points WHERE registration_status = 'ON_SUPPLY'`);
  if (onSupply !== meterPoints) problems.push(`${onSupply} of ${meterPoints} meter points ON_SUPPLY (${await statuses()})`);
  await expect('attempts (one per meter point, taken, accepted)', `SELECT count(*) AS n FROM registration_attempts WHERE attempt = 1 AND taken AND accepted_at IS NOT NULL`, meterPoints);
  await expect('attempts in all', `SELECT count(*) AS n FROM registration_attempts`, meterPoints);
  await expect('events recorded', `SELECT count(*) AS n FROM registration_events`, events);
  await expect('history rows (2 per meter point + 1 per event)', `SELECT count(*) AS n FROM registration_history`, 2 * meterPoints + events);
  await expect('history rows of events, applied', `SELECT count(*) AS n FROM registration_history WHERE cause = 'event' AND applied`, events);
  await expect('events applied more than once', `SELECT count(*) AS n FROM (SELECT event_id FROM registration_history WHERE event_id IS NOT NULL GROUP BY event_id HAVING count(*) > 1) d`, 0);
  await expect(
    'meter points whose history is not marked, taken, ACCEPTED, SUPPLY_STARTED',
    `SELECT count(*) AS n FROM meter_points m WHERE (
       SELECT string_agg(coalesce(h.event_type, h.cause) || ':' || h.applied, ',' ORDER BY h.id) FROM registration_history h WHERE h.meter_point_id = m.id
     ) IS DISTINCT FROM 'marked:true,taken:true,ACCEPTED:true,SUPPLY_STARTED:true'`,
    0,
  );
  return problems;
}
