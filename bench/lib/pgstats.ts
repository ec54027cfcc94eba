import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { pgClient } from './pg.js';

/**
 * What a scenario asked of PostgreSQL, from pg_stat_database for its own database: transactions
 * and rows touched. Backends publish their counters lazily (at most once a second, and an idle one
 * within about ten seconds), so a reading waits until two consecutive ones agree.
 */
const COLUMNS = ['xact_commit', 'xact_rollback', 'tup_returned', 'tup_fetched', 'tup_inserted', 'tup_updated', 'tup_deleted', 'blks_read', 'blks_hit'] as const;
export type DbCounters = Record<(typeof COLUMNS)[number], number>;

async function read(client: pg.Client): Promise<DbCounters> {
  const { rows } = await client.query<Record<string, string>>(`SELECT ${COLUMNS.join(', ')} FROM pg_stat_database WHERE datname = current_database()`);
  return Object.fromEntries(COLUMNS.map((c) => [c, Number(rows[0]?.[c] ?? NaN)])) as DbCounters;
}

/** Counters once they have stopped moving (or after `settleMs`). Each reading is one read-only transaction. */
export async function settledCounters(url: string, settleMs: number): Promise<DbCounters> {
  const client = pgClient({ connectionString: url });
  await client.connect();
  try {
    let last = await read(client);
    const deadline = Date.now() + settleMs;
    while (Date.now() < deadline) {
      await sleep(1_000);
      const now = await read(client);
      // Our own readings commit too: ignore commits when comparing.
      const same = COLUMNS.every((c) => c === 'xact_commit' || now[c] === last[c]);
      last = now;
      if (same) break;
    }
    return last;
  } finally {
    await client.end();
  }
}

export interface PerUnit {
  /** Committed transactions, read-only ones included (every autocommit statement is one). */
  transactions: number;
  rollbacks: number;
  rows_inserted: number;
  rows_updated: number;
  rows_deleted: number;
  /** tup_returned: rows read by sequential scans plus index entries returned by index scans. */
  rows_scanned: number;
  /** tup_fetched: live rows fetched by index scans. */
  rows_fetched: number;
  /** Shared buffers hit or read. */
  buffers: number;
}

/** The difference between two readings, divided by `units` (accounts or lines). */
export function perUnit(before: DbCounters, after: DbCounters, units: number): PerUnit {
  const d = (c: keyof DbCounters) => Math.round(((after[c] - before[c]) / units) * 10) / 10;
  return {
    transactions: d('xact_commit'),
    rollbacks: d('xact_rollback'),
    rows_inserted: d('tup_inserted'),
    rows_updated: d('tup_updated'),
    rows_deleted: d('tup_deleted'),
    rows_scanned: d('tup_returned'),
    rows_fetched: d('tup_fetched'),
    buffers: Math.round(((after.blks_hit - before.blks_hit + after.blks_read - before.blks_read) / units) * 10) / 10,
  };
}
