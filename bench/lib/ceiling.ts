import { readFileSync } from 'node:fs';
import type pg from 'pg';
import type { AccountBundle } from '../../src/cohort/generate.js';
import type { AccountData } from '../../src/imports/accounts/account.schemas.js';
import type { CohortFile } from './cohort.js';
import { onCleanup } from './cleanup.js';
import { TEAM } from './env.js';
import { pgPool } from './pg.js';
import { Meter, type CpuSeconds } from './meter.js';
import { perUnit, settledCounters, type PerUnit } from './pgstats.js';
import { addAccountRows, emptyRows, Ids, insertStatements, TABLES, type TableRows } from './rows.js';
import { round } from './stats.js';

/**
 * The ceiling: the rows the pipeline writes for each account, written by a tight loop over a pg
 * pool: one transaction per account, one multi-row INSERT per table, no queue, no validation, no
 * HTTP, no vendor call. What PostgreSQL on this machine allows; the pipeline is measured against it.
 */
export interface CeilingResult {
  accounts: number;
  concurrency: number;
  seconds: number;
  accounts_per_s: number;
  /** Statements per account (BEGIN and COMMIT included). */
  round_trips_per_account: number;
  /** Rows per table afterwards (the tables the pipeline writes for an account). */
  cpu_s: CpuSeconds;
  rows: Record<string, number>;
  pg_per_account: PerUnit;
  problems: string[];
}

/** Sends statements on one client, counting them. */
class Writer {
  trips = 0;
  constructor(private readonly client: pg.PoolClient) {}

  async query(text: string, values: unknown[] = []): Promise<void> {
    this.trips++;
    await this.client.query(text, values);
  }

  /** One transaction: every table's rows with as few multi-row INSERTs as the parameter limit allows, parents first. */
  async writeAll(rows: TableRows): Promise<void> {
    await this.query('BEGIN');
    try {
      for (const table of TABLES) for (const st of insertStatements(table, rows[table])) await this.query(st.text, st.values);
      await this.query('COMMIT');
    } catch (err) {
      await this.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  }
}

/**
 * The cohort's accounts as the rows the pipeline writes. The bundles are the generator's output,
 * which is already in the schema's output form, so they are used as the validated data without a
 * parse (the pipeline's validation is what the ceiling leaves out).
 */
const dataOf = (b: AccountBundle): AccountData => b.account as unknown as AccountData;

/**
 * What both loads start from: the cohort's lines, a pool of `connections` with every connection open
 * before the clock starts (as the services' pools are warm when they are measured), and the supplier
 * and team the rows belong to. The pool is closed before its database is dropped, also when the run is
 * interrupted.
 */
async function openLoad(databaseUrl: string, cohort: CohortFile, connections: number, name: string) {
  const lines = readFileSync(cohort.file, 'utf8').split('\n').filter((l) => l.length > 0);
  const pool = pgPool({ connectionString: databaseUrl, max: connections });
  let ended: Promise<void> | undefined;
  const end = () => (ended ??= pool.end().catch(() => undefined));
  onCleanup(`close the ${name} pool`, end);
  try {
    const one = async <T extends pg.QueryResultRow>(text: string, params: unknown[] = []) => (await pool.query<T>(text, params)).rows[0]!;
    const supplierCode = (JSON.parse(lines[0]!) as AccountBundle).account.import_supplier as string;
    const supplier = await one<{ id: string }>("INSERT INTO import_suppliers (code, name, documents_root) VALUES ($1, $1, '') RETURNING id", [supplierCode]);
    const team = await one<{ id: string }>('INSERT INTO operations_teams (name) VALUES ($1) RETURNING id', [TEAM]);
    const clients = await Promise.all(Array.from({ length: connections }, () => pool.connect()));
    clients.forEach((c) => c.release());
    return { lines, pool, end, owner: { supplier: supplier.id, team: team.id }, tableIds: new Ids() };
  } catch (err) {
    await end();
    throw err;
  }
}

export async function runCeiling(databaseUrl: string, cohort: CohortFile, concurrency: number, settleMs: number): Promise<CeilingResult> {
  const { lines, pool, end, owner: ids, tableIds } = await openLoad(databaseUrl, cohort, concurrency, 'ceiling');
  try {
    const pgBefore = await settledCounters(databaseUrl, settleMs);
    const meter = new Meter({});
    let next = 0;
    let trips = 0;
    meter.start();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        const client = await pool.connect();
        const w = new Writer(client);
        try {
          for (let i = next++; i < lines.length; i = next++) {
            const b = JSON.parse(lines[i]!) as AccountBundle;
            const rows = emptyRows();
            addAccountRows(rows, tableIds, b, dataOf(b), ids, i + 1, new Date());
            await w.writeAll(rows);
          }
        } finally {
          trips += w.trips;
          client.release();
        }
      }),
    );
    const measured = meter.stop();
    const pgAfter = await settledCounters(databaseUrl, settleMs);

    const rows = await countRows(pool);
    const problems = rows.accounts === lines.length ? [] : [`ceiling wrote ${rows.accounts} accounts, expected ${lines.length}`];
    return {
      accounts: lines.length,
      concurrency,
      seconds: round(measured.seconds),
      accounts_per_s: round(lines.length / measured.seconds),
      round_trips_per_account: round(trips / lines.length, 1),
      cpu_s: measured.cpu,
      rows,
      pg_per_account: perUnit(pgBefore, pgAfter, lines.length),
      problems,
    };
  } finally {
    await end();
  }
}


/** Rows in each table an account's import writes, in one statement. */
export async function countRows(db: { query: <R extends pg.QueryResultRow>(text: string) => Promise<pg.QueryResult<R>> }): Promise<Record<string, number>> {
  const { rows } = await db.query<Record<string, string>>(`SELECT ${TABLES.map((t) => `(SELECT count(*) FROM ${t}) AS ${t}`).join(', ')}`);
  return Object.fromEntries(Object.entries(rows[0]!).map(([k, v]) => [k, Number(v)]));
}

/** What the limit measured: the same rows bulk-loaded in large sets. */
export interface LimitResult {
  accounts: number;
  loaders: number;
  set_size: number;
  seconds: number;
  accounts_per_s: number;
  statements_per_set: number;
  cpu_s: CpuSeconds;
  rows: Record<string, number>;
  pg_per_account: PerUnit;
  problems: string[];
}

/**
 * The limit: the ceiling's rows bulk-loaded in sets of `setSize` accounts, one transaction and one
 * multi-row INSERT per table (cut only by PostgreSQL's parameter limit) per set, by `loaders`
 * concurrent connections. No queue, no validation, no per-account round trips: the most this
 * PostgreSQL on this machine takes, and what a set-based pipeline could approach.
 */
export async function runLimit(databaseUrl: string, cohort: CohortFile, loaders: number, setSize: number, settleMs: number): Promise<LimitResult> {
  const { lines, pool, end, owner, tableIds } = await openLoad(databaseUrl, cohort, loaders, 'limit');
  try {
    const pgBefore = await settledCounters(databaseUrl, settleMs);
    const meter = new Meter({});
    let next = 0;
    let trips = 0;
    let sets = 0;
    meter.start();
    await Promise.all(
      Array.from({ length: loaders }, async () => {
        const client = await pool.connect();
        const w = new Writer(client);
        try {
          for (let from = next, to = (next += setSize); from < lines.length; from = next, to = next += setSize) {
            const rows = emptyRows();
            for (let i = from; i < Math.min(to, lines.length); i++) {
              const b = JSON.parse(lines[i]!) as AccountBundle;
              addAccountRows(rows, tableIds, b, dataOf(b), owner, i + 1, new Date());
            }
            await w.writeAll(rows);
            sets++;
          }
        } finally {
          trips += w.trips;
          client.release();
        }
      }),
    );
    const measured = meter.stop();
    const pgAfter = await settledCounters(databaseUrl, settleMs);
    const rows = await countRows(pool);
    const problems = rows.accounts === lines.length ? [] : [`limit wrote ${rows.accounts} accounts, expected ${lines.length}`];
    return {
      accounts: lines.length,
      loaders,
      set_size: setSize,
      seconds: round(measured.seconds),
      accounts_per_s: round(lines.length / measured.seconds),
      statements_per_set: round(trips / Math.max(1, sets), 1),
      cpu_s: measured.cpu,
      rows,
      pg_per_account: perUnit(pgBefore, pgAfter, lines.length),
      problems,
    };
  } finally {
    await end();
  }
}
