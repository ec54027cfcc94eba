import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { PipelineObserver } from './pipeline/pipeline.js';
import { PACKAGE_VERSION } from './project-root.js';
import { within } from './timeout.js';
import type { Deps } from './deps.js';

/** The queue states reported by `di_queue_jobs` (BullMQ adds `paused` whenever `waiting` is asked for). */
export const REPORTED_JOB_STATES = ['waiting', 'active', 'delayed', 'completed', 'failed'] as const;

export type JobOutcome = 'completed' | 'failed' | 'delayed';

const DEPENDENCY_TIMEOUT_MS = 1_000;

/** Label for requests no route matched: raw URLs would let any client mint new series. */
export const UNMATCHED_ROUTE = 'unmatched';

/** The service's Prometheus metrics, on a registry of its own. */
export interface Metrics {
  readonly registry: Registry;
  /** Counts the pipeline's recorded steps and closed batches (give it to startWorkers). */
  readonly pipelineObserver: PipelineObserver;
  /** Called by the queue workers once per job attempt. */
  observeJob(queue: string, outcome: JobOutcome, seconds: number): void;
  /** Called by the registration events poller with the seconds from request to acceptance of each acceptance it applied. */
  observeAcceptance(seconds: readonly number[]): void;
  /** Adds the onResponse hook timing every request; call it on the root instance, before routes are registered. */
  installHttpHook(app: FastifyInstance): void;
}

/** This build: the package's version, and the commit when the build says which (BUILD_COMMIT, else GIT_COMMIT). */
const BUILD = {
  version: PACKAGE_VERSION,
  commit: process.env.BUILD_COMMIT || process.env.GIT_COMMIT || 'unknown',
};

export function createMetrics(deps: Pick<Deps, 'queues' | 'permits' | 'db' | 'redis'>): Metrics {
  // A registry per call, never the global one, so tests (and several apps in one process) don't collide.
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });

  const collectFailures = new Counter({
    name: 'di_metrics_collect_failures_total',
    help: 'Scrapes where a collector could not read its source (Redis); its series are then absent rather than stale.',
    labelNames: ['collector'] as const,
    registers: [registry],
  });

  new Gauge({
    name: 'di_queue_jobs',
    help: 'Jobs in each BullMQ queue, by state, read at scrape time.',
    labelNames: ['queue', 'state'] as const,
    registers: [registry],
    async collect() {
      // Reset first: a state that disappears, or a failed read, must not keep reporting an old count.
      this.reset();
      try {
        const counts = await Promise.all(
          Object.entries(deps.queues).map(async ([name, queue]) => [name, await queue.getJobCounts(...REPORTED_JOB_STATES)] as const),
        );
        for (const [queue, byState] of counts) {
          for (const [state, n] of Object.entries(byState)) this.set({ queue, state }, n);
        }
      } catch {
        // Failing the whole scrape would also hide the process metrics that help diagnose the outage.
        collectFailures.inc({ collector: 'di_queue_jobs' });
      }
    },
  });

  new Gauge({
    name: 'di_process_permits_in_use',
    help: 'Processing permits currently held across the deployment.',
    registers: [registry],
    async collect() {
      this.reset();
      try {
        this.set(await deps.permits.inUse());
      } catch {
        collectFailures.inc({ collector: 'di_process_permits_in_use' });
      }
    },
  });

  new Gauge({
    name: 'di_process_permits_limit',
    help: 'The configured cap on simultaneous account processing (0: no cap).',
    registers: [registry],
    collect() {
      this.set(deps.permits.limit);
    },
  });

  const jobDuration = new Histogram({
    name: 'di_job_duration_seconds',
    help: 'Time a queue worker spent on one job attempt, by queue and outcome.',
    labelNames: ['queue', 'outcome'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });

  const httpDuration = new Histogram({
    name: 'di_http_request_duration_seconds',
    help: 'HTTP request latency, by method, route pattern and status code.',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });

  const items = new Counter({
    name: 'di_items_total',
    help: 'Batch items whose step was recorded, by supplier, stage, outcome (passed: sent on; succeeded: done; failed) and error code.',
    labelNames: ['supplier', 'stage', 'outcome', 'code', 'dry_run'] as const,
    registers: [registry],
  });

  const batchDuration = new Histogram({
    name: 'di_batch_duration_seconds',
    help: 'From upload to the end of a batch this process closed, by supplier and final state.',
    labelNames: ['supplier', 'state'] as const,
    buckets: [10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14_400, 43_200, 86_400],
    registers: [registry],
  });

  new Gauge({
    name: 'di_build_info',
    help: 'Always 1; the labels say which build and Node.js this process runs.',
    labelNames: ['version', 'commit', 'node_version'] as const,
    registers: [registry],
    collect() {
      this.set({ version: BUILD.version, commit: BUILD.commit, node_version: process.version }, 1);
    },
  });

  new Gauge({
    name: 'di_batches_running',
    help: 'Batches in state RUNNING, read from PostgreSQL at scrape time.',
    registers: [registry],
    async collect() {
      this.reset();
      try {
        const row = await deps.db.selectFrom('batches').select((eb) => eb.fn.countAll<string>().as('n')).where('state', '=', 'RUNNING').executeTakeFirstOrThrow();
        this.set(Number(row.n));
      } catch {
        collectFailures.inc({ collector: 'di_batches_running' });
      }
    },
  });

  new Gauge({
    name: 'di_meter_points',
    help: 'Meter points by registration status (decisions.md §8), read from PostgreSQL at scrape time.',
    labelNames: ['status'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      try {
        const rows = await deps.db.selectFrom('meter_points').select(['registration_status as status', (eb) => eb.fn.countAll<string>().as('n')]).groupBy('registration_status').execute();
        for (const r of rows) this.set({ status: r.status }, Number(r.n));
      } catch {
        collectFailures.inc({ collector: 'di_meter_points' });
      }
    },
  });

  new Gauge({
    name: 'di_registration_requested_oldest_seconds',
    help: 'How long the meter point longest in REGISTRATION_REQUESTED has been there (0 when none is), at scrape time.',
    registers: [registry],
    async collect() {
      this.reset();
      try {
        const row = await sql<{ s: number | null }>`
          SELECT extract(epoch FROM now() - min(registration_updated_at))::float8 AS s FROM meter_points WHERE registration_status = 'REGISTRATION_REQUESTED'`.execute(deps.db);
        this.set(Math.max(0, row.rows[0]?.s ?? 0));
      } catch {
        collectFailures.inc({ collector: 'di_registration_requested_oldest_seconds' });
      }
    },
  });

  const acceptance = new Histogram({
    name: 'di_registration_acceptance_seconds',
    help: 'From the gateway taking a registration request to its ACCEPTED event, for the acceptances this process applied.',
    buckets: [60, 600, 3600, 6 * 3600, 86_400, 2 * 86_400, 3 * 86_400, 5 * 86_400, 7 * 86_400, 14 * 86_400, 28 * 86_400],
    registers: [registry],
  });

  new Gauge({
    name: 'di_dependency_up',
    help: 'Whether PostgreSQL and Redis answered this scrape within 1 s (1) or not (0).',
    labelNames: ['dependency'] as const,
    registers: [registry],
    async collect() {
      const [postgres, redis] = await Promise.all([
        within(DEPENDENCY_TIMEOUT_MS, sql`SELECT 1`.execute(deps.db)),
        within(DEPENDENCY_TIMEOUT_MS, deps.redis.ping()),
      ]);
      this.set({ dependency: 'postgres' }, postgres ? 1 : 0);
      this.set({ dependency: 'redis' }, redis ? 1 : 0);
    },
  });

  return {
    registry,
    pipelineObserver: {
      items(events) {
        for (const e of events) items.inc({ supplier: e.supplier, stage: e.stage, outcome: e.outcome, code: e.code, dry_run: String(e.dryRun) });
      },
      batchFinished(b) {
        batchDuration.observe({ supplier: b.supplier_code, state: b.state }, Math.max(0, (b.finished_at.getTime() - b.created_at.getTime()) / 1000));
      },
    },
    observeJob(queue, outcome, seconds) {
      jobDuration.observe({ queue, outcome }, seconds);
    },
    observeAcceptance(seconds) {
      for (const s of seconds) acceptance.observe(s);
    },
    installHttpHook(app) {
      app.addHook('onResponse', async (request, reply) => {
        // The pattern (`/v1/accounts/:id`), not the URL: one series per route, whatever clients send.
        // Not-found handlers have no pattern.
        const route = request.routeOptions.url ?? UNMATCHED_ROUTE;
        httpDuration.observe({ method: request.method, route, status_code: String(reply.statusCode) }, reply.elapsedTime / 1000);
      });
    },
  };
}
