import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Deps } from './deps.js';

/** The queue states reported by `di_queue_jobs` (BullMQ adds `paused` whenever `waiting` is asked for). */
export const REPORTED_JOB_STATES = ['waiting', 'active', 'delayed', 'completed', 'failed'] as const;

export type JobOutcome = 'completed' | 'failed' | 'delayed';

/** Label for requests no route matched: raw URLs would let any client mint new series. */
export const UNMATCHED_ROUTE = 'unmatched';

/** The service's Prometheus metrics, on a registry of its own. */
export interface Metrics {
  readonly registry: Registry;
  /** Called by the queue workers once per job attempt. */
  observeJob(queue: string, outcome: JobOutcome, seconds: number): void;
  /** Adds the onResponse hook timing every request; call it on the root instance, before routes are registered. */
  installHttpHook(app: FastifyInstance): void;
}

export function createMetrics(deps: Pick<Deps, 'queues' | 'permits'>): Metrics {
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

  return {
    registry,
    observeJob(queue, outcome, seconds) {
      jobDuration.observe({ queue, outcome }, seconds);
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
