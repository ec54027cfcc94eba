import { createHash } from 'node:crypto';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { Database } from './database.js';

// Dates stay calendar strings (no time-zone shifts); numerics stay exact decimal strings; int8 stays a string.
pg.types.setTypeParser(pg.types.builtins.DATE, (v) => v);
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => v);

/** Statements with more parameters than this (big multi-row inserts, whose shapes vary) are not prepared. */
const MAX_PREPARED_PARAMETERS = 200;
/** Distinct statements one connection prepares at most; later ones run unnamed. Bounds each backend's memory. */
const MAX_PREPARED_PER_CONNECTION = 300;

const names = new Map<string, string>();
/** A statement's name: a digest of its text, so a text always maps to one name on every connection. */
function statementName(text: string): string {
  let name = names.get(text);
  if (name === undefined) {
    name = `k${createHash('sha1').update(text).digest('base64url')}`;
    if (names.size >= 5_000) names.clear();
    names.set(text, name);
  }
  return name;
}

/**
 * A pg client that runs Kysely's parameterised statements as named prepared statements: each
 * distinct text is parsed and planned once per connection, then only bound and executed. The
 * queue workers run the same few dozen statements for every account, and the profile showed
 * PostgreSQL spending much of its time parsing and planning them. Texts with many parameters are
 * left unnamed (their shapes vary with the row count), and each connection prepares a bounded
 * number, so a backend's memory stays bounded. A statement whose tables a migration changed while
 * the process runs is prepared again: run again at once outside a transaction; inside one, the
 * transaction fails once (a request's 500, a job's retry) and its retry succeeds.
 *
 * A prepared statement may run a generic plan, which PostgreSQL keeps until the statistics of its
 * tables change. A plan chosen while the tables were small is therefore replaced only because the
 * service keeps its tables' statistics current as they grow (db/statistics.ts), whether or not
 * autovacuum runs; planning every execution instead (plan_cache_mode = force_custom_plan) cost the
 * pipeline a third of its throughput (docs/decisions.md, "Plans and statistics").
 */
class PreparingClient extends pg.Client {
  /** The name each statement text (by its digest) has on this connection. */
  readonly #names = new Map<string, string>();
  #renamed = 0;

  // pg's overloads: only the (text, values) form Kysely uses is changed; everything else passes through.
  override query(...args: unknown[]): never {
    const [text, values, callback] = args;
    if (typeof text === 'string' && Array.isArray(values) && values.length > 0 && values.length <= MAX_PREPARED_PARAMETERS && callback === undefined) {
      const digest = statementName(text);
      let name = this.#names.get(digest);
      if (name === undefined && this.#names.size < MAX_PREPARED_PER_CONNECTION) this.#names.set(digest, (name = digest));
      if (name !== undefined) {
        // Outside a transaction a failed statement can simply run again; inside one it has aborted it.
        const idle = this.getTransactionStatus() === 'I';
        const run = (n: string) => (super.query as unknown as (config: pg.QueryConfig) => Promise<unknown>)({ name: n, text, values });
        return run(name).catch((err: unknown) => {
          if (!isStalePrepared(err)) throw err;
          // A migration changed a table under the prepared statement (or a pooler dropped it): it is
          // prepared again under a new name, and the old one goes with the connection.
          const fresh = `${digest}_${++this.#renamed}`;
          this.#names.set(digest, fresh);
          if (!idle) throw err;
          return run(fresh);
        }) as never;
      }
    }
    return (super.query as unknown as (...a: unknown[]) => never)(...args);
  }
}

/** PostgreSQL refuses a prepared statement whose tables changed shape, or that no longer exists. */
function isStalePrepared(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '26000' || (code === '0A000' && /cached plan must not change result type/.test(String((err as Error).message)));
}

export interface DbOptions {
  /** Pool size; the default suits one API process. */
  max?: number;
  /** Named prepared statements (default on). Turn off behind a pooler in transaction mode (PgBouncer before 1.21). */
  preparedStatements?: boolean;
  /** Runs on every pool error (idle clients dropped by the server): logged, never thrown. */
  onPoolError?: (err: Error) => void;
}

export function createDb(connectionString: string, options: DbOptions = {}): { db: Kysely<Database>; pool: pg.Pool } {
  const pool = new pg.Pool({
    connectionString,
    max: options.max ?? 20,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
    ...(options.preparedStatements === false ? {} : { Client: PreparingClient }),
  });
  pool.on('error', (err) => options.onPoolError?.(err));
  // The pool listens only to idle clients. A connection killed mid-transaction emits 'error' on the
  // checked-out client, which without a listener would crash the process; the query itself fails
  // and the caller (a request, a job) handles that.
  pool.on('connect', (client) => client.on('error', (err) => options.onPoolError?.(err)));
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return { db, pool };
}
