import closeWithGrace from 'close-with-grace';
import { loadConfig, type Config } from './config.js';
import { ensureDatabase, migrate } from './db/migrator.js';
import { startStatisticsKeeper } from './db/statistics.js';
import { createDeps } from './deps.js';
import { buildApp } from './http/app.js';
import { QUEUE_NAMES } from './queue/contract.js';
import { startReconciling } from './queue/reconciler.js';
import { startWorkers, type WorkerSet } from './queue/workers.js';
import { createLogger } from './log.js';
import { checkPostgres, checkRedis, describeStartupFailure } from './startup-checks.js';
import { withDevelopmentVendor } from './vendors/development-vendor.js';
import { withDevelopmentGateway } from './registration/development-gateway.js';

/** How close together two signals count as one: Ctrl-C under `npm start` reaches the server twice at once. */
const SAME_SIGNAL_MS = 1_000;

let config: Config | undefined;

/**
 * Web entry: check that PostgreSQL and Redis answer, migrate, then serve the API (and, unless
 * RUN_WORKERS=false, the queue workers in the same process) until SIGTERM/SIGINT, then close
 * gracefully and exit 0. Start-up failures an operator can fix are one line on stderr, exit 1.
 */
async function main(): Promise<void> {
  config = loadConfig();
  const log = createLogger(config.logLevel);
  if (config.usingDevelopmentSecret) {
    log.warn(`TOKEN_SECRET is not set: using the development secret (NODE_ENV=${config.nodeEnv}). Never do this in production.`);
  }
  const skipMigrations = process.env.SKIP_MIGRATIONS === '1';
  // Before anything else: a service that does not answer is one clear line, not a stack trace later.
  await checkPostgres(config.databaseUrl, { allowMissingDatabase: !skipMigrations });
  await checkRedis(config.redisUrl);
  if (!skipMigrations) {
    const created = await ensureDatabase(config.databaseUrl);
    const { applied } = await migrate(config.databaseUrl);
    log.info({ created, applied }, 'database ready');
  }
  const development = await withDevelopmentVendor(config, log);
  const sandboxGateway = await withDevelopmentGateway(development.config, log);
  const deps = createDeps(sandboxGateway.config, { log });
  const { app, services, metrics } = await buildApp(deps);
  // Tables keep current statistics as they grow, whatever autovacuum does (db/statistics.ts).
  const statistics = startStatisticsKeeper(deps.db, { intervalMs: config.databaseAnalyzeIntervalMs, log });
  let workers: WorkerSet | undefined;
  if (config.runWorkers) {
    workers = startWorkers(deps, services, { queues: QUEUE_NAMES, observe: (stage, outcome, s) => metrics.observeJob(stage, outcome, s), observer: metrics.pipelineObserver, observeAcceptance: (s) => metrics.observeAcceptance(s) });
    // In the background, and again whenever Redis is back: listening never waits for it.
    startReconciling({ log, onRedisReconnect: deps.onRedisReconnect, reconcile: () => services.batches.reconcile() });
  }
  // SIGTERM and SIGINT are handled below; close-with-grace handles crashes and the time limit.
  const closer = closeWithGrace({ delay: config.workerShutdownGraceMs + 5_000, skip: ['SIGTERM', 'SIGINT'] }, async ({ err }) => {
    if (err) log.error({ err }, 'shutting down after an error');
    await app.close();
    await workers?.close();
    await statistics.stop();
    await deps.close();
    await development.close();
    await sandboxGateway.close();
  });
  let firstSignalAt: number | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    if (firstSignalAt === undefined) {
      firstSignalAt = Date.now();
      log.info({ signal }, 'shutting down');
      closer.close(); // exits 0 once everything is closed, 1 after the grace period
      return;
    }
    // Ctrl-C under npm arrives twice at once (from the terminal, and forwarded by npm): only a later
    // signal is someone insisting, and stops the process without waiting.
    if (Date.now() - firstSignalAt < SAME_SIGNAL_MS) return;
    log.warn({ signal }, 'second signal: exiting without waiting for the graceful close');
    process.exit(1);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  await app.listen({ port: config.port, host: config.host });
}

main().catch((err: unknown) => {
  console.error(describeStartupFailure(err, config && { host: config.host, port: config.port }));
  process.exit(1);
});
