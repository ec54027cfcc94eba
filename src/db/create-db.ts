import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { Database } from './database.js';

// Dates stay calendar strings (no time-zone shifts); numerics stay exact decimal strings; int8 stays a string.
pg.types.setTypeParser(pg.types.builtins.DATE, (v) => v);
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => v);

export interface DbOptions {
  /** Pool size; the default suits one API process. */
  max?: number;
  /** Runs on every pool error (idle clients dropped by the server): logged, never thrown. */
  onPoolError?: (err: Error) => void;
}

export function createDb(connectionString: string, options: DbOptions = {}): { db: Kysely<Database>; pool: pg.Pool } {
  const pool = new pg.Pool({
    connectionString,
    max: options.max ?? 20,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
  });
  pool.on('error', (err) => options.onPoolError?.(err));
  // The pool listens only to idle clients. A connection killed mid-transaction emits 'error' on the
  // checked-out client, which without a listener would crash the process; the query itself fails
  // and the caller (a request, a job) handles that.
  pool.on('connect', (client) => client.on('error', (err) => options.onPoolError?.(err)));
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return { db, pool };
}
