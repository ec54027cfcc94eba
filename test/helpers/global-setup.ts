import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { migrate } from '../../src/db/migrator.js';
import { LocalServiceError, startEmbeddedPostgres, startLocalRedis, type LocalServer } from '../../src/dev/local-services.js';

declare module 'vitest' {
  export interface ProvidedContext {
    adminDatabaseUrl: string;
    templateDatabase: string;
    redisUrl: string;
  }
}

/**
 * Where the services come from (docs/local-services.md): DATABASE_URL / REDIS_URL when set (CI sets
 * them; so does anyone pointing at their own servers). Otherwise this run starts its own: an embedded
 * PostgreSQL in a temporary folder (removed at the end) and `redis-server` from PATH, each on a free
 * 127.0.0.1 port. Where those cannot run (no binary for the platform, no redis-server) but a Docker
 * engine answers, containers instead. Otherwise one line saying what to install, and no test runs.
 */
async function resolveServices(): Promise<{ pgUrl: string; redisUrl: string; stop: () => Promise<void>; kill: () => void }> {
  const started: LocalServer[] = [];
  const stops: Array<() => Promise<unknown>> = [];
  const stop = async () => {
    await Promise.allSettled([...stops.map((s) => s()), ...started.map((s) => s.stop())]);
  };
  let pgUrl = process.env.DATABASE_URL || undefined;
  let redisUrl = process.env.REDIS_URL || undefined;
  try {
    if (!pgUrl) {
      try {
        const pg = await startEmbeddedPostgres({
          dir: path.join(tmpdir(), `di-test-postgres-${randomBytes(6).toString('hex')}`),
          keep: false,
          // A throwaway cluster: durability buys nothing here, and costs the suite its speed.
          settings: ['fsync=off', 'synchronous_commit=off', 'full_page_writes=off'],
        });
        started.push(pg);
        pgUrl = pg.url;
      } catch (err) {
        if (!(err instanceof LocalServiceError) || !(await dockerAvailable())) throw err;
        const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
        const c = await new PostgreSqlContainer('postgres:16-alpine').withUsername('postgres').withPassword('postgres').start();
        stops.push(() => c.stop());
        pgUrl = c.getConnectionUri();
      }
    }
    if (!redisUrl) {
      try {
        const redis = await startLocalRedis();
        started.push(redis);
        redisUrl = redis.url;
      } catch (err) {
        if (!(err instanceof LocalServiceError) || !(await dockerAvailable())) throw err;
        const { RedisContainer } = await import('@testcontainers/redis');
        const c = await new RedisContainer('redis:7-alpine').start();
        stops.push(() => c.stop());
        redisUrl = c.getConnectionUrl();
      }
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { pgUrl, redisUrl, stop, kill: () => started.forEach((s) => s.kill()) };
}

async function dockerAvailable(): Promise<boolean> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await getContainerRuntimeClient();
    return true;
  } catch {
    return false;
  }
}

/**
 * Ctrl-C or SIGTERM to the test run: the servers it started are told to stop at once (the next run
 * stops any that outlive this, see stopLeftovers). When nothing else listens for the signal, it is
 * raised again so the run ends as it would have.
 */
function stopOnSignals(kill: () => void): () => void {
  const handlers = (['SIGINT', 'SIGTERM'] as const).map((signal) => {
    const handler = () => {
      kill();
      process.off(signal, handler);
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    };
    process.on(signal, handler);
    return () => process.off(signal, handler);
  });
  return () => handlers.forEach((off) => off());
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let services: Awaited<ReturnType<typeof resolveServices>>;
  try {
    services = await resolveServices();
  } catch (err) {
    // One line, not a stack: what is missing and how to get it.
    if (err instanceof LocalServiceError) throw Object.assign(new Error(err.message), { stack: err.message });
    throw err;
  }
  const unhook = stopOnSignals(services.kill);
  const template = `di_tpl_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: services.pgUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${template}`);
  const templateUrl = new URL(services.pgUrl);
  templateUrl.pathname = `/${template}`;
  await migrate(templateUrl.toString());
  project.provide('adminDatabaseUrl', services.pgUrl);
  project.provide('templateDatabase', template);
  project.provide('redisUrl', services.redisUrl);
  return async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`);
    await admin.end();
    await services.stop();
    unhook();
  };
}
