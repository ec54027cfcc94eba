import closeWithGrace from 'close-with-grace';
import { ConfigError, loadConfig } from './config.js';
import { ensureDatabase, migrate } from './db/migrator.js';
import { createDeps } from './deps.js';
import { buildApp } from './http/app.js';
import { createLogger } from './log.js';

/** Web entry: migrate, then serve the API until SIGTERM/SIGINT, then close gracefully. */
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
  const { app } = await buildApp(deps);
  closeWithGrace({ delay: 10_000 }, async ({ err, signal }) => {
    if (err) log.error({ err }, 'shutting down after an error');
    else log.info({ signal }, 'shutting down');
    await app.close();
    await deps.close();
  });
  await app.listen({ port: config.port, host: config.host });
}

main().catch((err: unknown) => {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
