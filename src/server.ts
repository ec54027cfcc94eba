import closeWithGrace from 'close-with-grace';
import { ConfigError, loadConfig } from './config.js';
import { ensureDatabase, migrate } from './db/migrator.js';
import { startStatisticsKeeper } from './db/statistics.js';
import { createDeps } from './deps.js';
import { buildApp } from './http/app.js';
import { QUEUE_NAMES } from './queue/contract.js';
import { startWorkers, type WorkerSet } from './queue/workers.js';
import { createLogger } from './log.js';

/**
 * Web entry: migrate, then serve the API (and, unless RUN_WORKERS=false, the queue workers in the
 * same process) until SIGTERM/SIGINT, then close gracefully.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const log = createLogger(config.logLevel);
  if (config.usingDevelopmentSecret) {
    log.warn('TOKEN_SECRET is not set: using the development secret. Never do this in production.');
  }
  if (process.env.SKIP_MIGRATIONS !== '1') {
    const created = await ensureDatabase(config.databaseUrl);
    const { applied } = await migrate(config.databaseUrl);
    log.info({ created, applied }, 'database ready');
  }
  const deps = createDeps(config, { log });
  const { app, services, metrics } = await buildApp(deps);
  // Tables keep current statistics as they grow, whatever autovacuum does (db/statistics.ts).
  const statistics = startStatisticsKeeper(deps.db, { intervalMs: config.databaseAnalyzeIntervalMs, log });
  let workers: WorkerSet | undefined;
  if (config.runWorkers) {
    workers = startWorkers(deps, services, { queues: QUEUE_NAMES, observe: (stage, outcome, s) => metrics.observeJob(stage, outcome, s) });
    await services.batches.reconcile();
  }
  closeWithGrace({ delay: config.workerShutdownGraceMs + 5_000 }, async ({ err, signal }) => {
    if (err) log.error({ err }, 'shutting down after an error');
    else log.info({ signal }, 'shutting down');
    await app.close();
    await workers?.close();
    await statistics.stop();
    await deps.close();
  });
  await app.listen({ port: config.port, host: config.host });
}

main().catch((err: unknown) => {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
