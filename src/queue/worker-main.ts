import Fastify, { type FastifyBaseLogger } from 'fastify';
import { loadConfig, ConfigError } from '../config.js';
import { startStatisticsKeeper } from '../db/statistics.js';
import { createDeps } from '../deps.js';
import { createServices } from '../imports/services.js';
import { registerOperatorRoutes } from '../http/operator.js';
import { createLogger } from '../log.js';
import { createMetrics } from '../metrics.js';
import { checkPostgres, checkRedis, StartupError } from '../startup-checks.js';
import type { QueueName } from './contract.js';
import { withDevelopmentVendor } from '../vendors/development-vendor.js';
import { startReconciling } from './reconciler.js';
import { startWorkers } from './workers.js';
import { loadWebhookSettings, WebhookSettingsError } from '../webhooks/settings.js';

/**
 * A worker process: runs the named queues until SIGTERM/SIGINT, then stops taking jobs, lets
 * active ones finish within WORKER_SHUTDOWN_GRACE_MS (releasing their permits), and exits.
 * At start-up it checks that PostgreSQL and Redis answer (one line on stderr and exit 1 otherwise;
 * exit 2 for a bad configuration), then re-enqueues every open batch item that lost its job
 * (PostgreSQL is the truth). It neither signs nor verifies tokens, so TOKEN_SECRET is not needed.
 */
export async function runWorkerProcess(queues: readonly QueueName[]): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env, { signsTokens: false });
    if (queues.includes('webhooks')) loadWebhookSettings(process.env);
  } catch (err) {
    console.error(err instanceof ConfigError || err instanceof WebhookSettingsError ? err.message : err);
    process.exit(2);
  }
  try {
    await checkPostgres(config.databaseUrl);
    await checkRedis(config.redisUrl);
  } catch (err) {
    console.error(err instanceof StartupError ? err.message : err);
    process.exit(1);
  }
  const log = createLogger(config.logLevel);
  const development = await withDevelopmentVendor(config, log);
  const deps = createDeps(development.config, { log });
  const services = createServices(deps);
  const metrics = createMetrics(deps);
  const set = startWorkers(deps, services, { queues, observe: (q, o, s) => metrics.observeJob(q, o, s), observer: metrics.pipelineObserver, observeAcceptance: (s) => metrics.observeAcceptance(s) });
  // Tables keep current statistics as they grow, whatever autovacuum does (db/statistics.ts).
  const statistics = startStatisticsKeeper(deps.db, { intervalMs: config.databaseAnalyzeIntervalMs, log });
  // Job durations live in this process: serve them when asked to, behind the operator credentials.
  const metricsApp = config.workerMetricsPort === undefined ? undefined : Fastify({ loggerInstance: log as FastifyBaseLogger });
  if (metricsApp && config.workerMetricsPort !== undefined) {
    await registerOperatorRoutes(metricsApp, deps, metrics, config.operator);
    await metricsApp.listen({ host: config.host, port: config.workerMetricsPort });
  }
  log.info({ queues, metricsPort: config.workerMetricsPort }, 'workers started');
  // In the background, and again whenever Redis is back after a loss (what it held may be gone).
  startReconciling({ log, onRedisReconnect: deps.onRedisReconnect, reconcile: () => services.batches.reconcile() });

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping workers');
    await set.close();
    await statistics.stop();
    await metricsApp?.close();
    await deps.close();
    await development.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}
