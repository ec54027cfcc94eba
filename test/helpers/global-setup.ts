import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { migrate } from '../../src/db/migrator.js';

declare module 'vitest' {
  export interface ProvidedContext {
    adminDatabaseUrl: string;
    templateDatabase: string;
    redisUrl: string;
  }
}

const LOCAL_PG = 'postgres://postgres@127.0.0.1:5432/postgres';
const LOCAL_REDIS = 'redis://127.0.0.1:6379';

/**
 * Where the services come from: DATABASE_URL / REDIS_URL when set (CI sets them); otherwise
 * containers when a Docker engine answers; otherwise the local defaults on 127.0.0.1.
 */
async function resolveServices(): Promise<{ pgUrl: string; redisUrl: string; stop: () => Promise<void> }> {
  const envPg = process.env.DATABASE_URL;
  const envRedis = process.env.REDIS_URL;
  if (envPg && envRedis) return { pgUrl: envPg, redisUrl: envRedis, stop: async () => undefined };
  const stops: Array<() => Promise<unknown>> = [];
  let pgUrl = envPg;
  let redisUrl = envRedis;
  if (await dockerAvailable()) {
    if (!pgUrl) {
      const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
      const c = await new PostgreSqlContainer('postgres:16-alpine').withUsername('postgres').withPassword('postgres').start();
      stops.push(() => c.stop());
      pgUrl = c.getConnectionUri();
    }
    if (!redisUrl) {
      const { RedisContainer } = await import('@testcontainers/redis');
      const c = await new RedisContainer('redis:7-alpine').start();
      stops.push(() => c.stop());
      redisUrl = c.getConnectionUrl();
    }
  }
  return {
    pgUrl: pgUrl ?? LOCAL_PG,
    redisUrl: redisUrl ?? LOCAL_REDIS,
    stop: async () => {
      await Promise.allSettled(stops.map((s) => s()));
    },
  };
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

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const services = await resolveServices();
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
  };
}
