import { setTimeout as sleep } from 'node:timers/promises';
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createDb } from '../../src/db/create-db.js';
import type { Database } from '../../src/db/database.js';
import { analyzeGrownTables, type AnalyzeOutcome } from '../../src/db/statistics.js';
import { createTestDatabase } from '../helpers/context.js';

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let db: Kysely<Database>;
beforeAll(async () => {
  database = await createTestDatabase();
  db = createDb(database.url, { max: 4 }).db;
});
afterAll(async () => {
  await db?.destroy();
  await database?.drop();
});

/** What PostgreSQL's planner believes about a table, and when it was last analyzed by anyone. */
async function planner(table: string): Promise<{ reltuples: number; analyzed: boolean }> {
  const { rows } = await sql<{ reltuples: number; analyzed: boolean }>`
    SELECT c.reltuples::float8 AS reltuples, (s.last_analyze IS NOT NULL OR s.last_autoanalyze IS NOT NULL) AS analyzed
      FROM pg_class c JOIN pg_stat_user_tables s ON s.relid = c.oid
     WHERE c.relname = ${table} AND s.schemaname = current_schema()`.execute(db);
  return rows[0]!;
}

/**
 * Runs analyzeGrownTables until it has analyzed `table`: a backend reports its row changes to the
 * cumulative statistics within about a second of committing, so the first checks may not see them.
 */
async function analyzeUntil(table: string, deadlineMs = 15_000): Promise<AnalyzeOutcome & { ran: true }> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const outcome = await analyzeGrownTables(db);
    if (outcome.ran && outcome.tables.some((t) => t.table === table)) return outcome;
    if (Date.now() > deadline) throw new Error(`${table} was not analyzed within ${deadlineMs} ms: ${JSON.stringify(outcome)}`);
    await sleep(200);
  }
}

describe('statistics after bulk writes', () => {
  it('analyzes a table that grew past the threshold, and leaves the planner with its real size', async () => {
    await sql`INSERT INTO operations_teams (name) SELECT 'team ' || g FROM generate_series(1, 5000) g`.execute(db);
    const outcome = await analyzeUntil('operations_teams');
    expect(outcome.tables.find((t) => t.table === 'operations_teams')!.changed).toBeGreaterThanOrEqual(5000);
    const after = await planner('operations_teams');
    expect(after.analyzed).toBe(true);
    expect(after.reltuples).toBe(5000);

    // Nothing changed since: the next check analyzes nothing.
    const again = await analyzeGrownTables(db);
    expect(again).toEqual({ ran: true, tables: [] });
  });

  it('leaves a table alone until its changes pass the threshold (1,000 rows plus a fifth of its size)', async () => {
    // operations_teams has 5,000 rows from the first test: 1,500 more is under 1,000 + 1,000.
    await sql`INSERT INTO operations_teams (name) SELECT 'more ' || g FROM generate_series(1, 1500) g`.execute(db);
    const early = await analyzeGrownTables(db);
    expect(early.ran && early.tables.map((t) => t.table)).not.toContain('operations_teams');

    await sql`INSERT INTO operations_teams (name) SELECT 'most ' || g FROM generate_series(1, 600) g`.execute(db);
    await analyzeUntil('operations_teams');
    expect((await planner('operations_teams')).reltuples).toBe(7100);
  });

  it('runs in one process of a deployment at a time: a second caller is told busy and waits for the next tick', async () => {
    const other = createDb(database.url, { max: 1 }).db;
    try {
      const outcome = await other.connection().execute(async (conn) => {
        await sql`SELECT pg_advisory_lock(${0x64_69_61_6e})`.execute(conn);
        try {
          return await analyzeGrownTables(db);
        } finally {
          await sql`SELECT pg_advisory_unlock(${0x64_69_61_6e})`.execute(conn);
        }
      });
      expect(outcome).toEqual({ ran: false, reason: 'busy' });
    } finally {
      await other.destroy();
    }
  });

  it('is configured by DATABASE_ANALYZE_INTERVAL_S (default 15 s; 0 leaves it to autovacuum)', () => {
    expect(loadConfig({ NODE_ENV: 'test' }).databaseAnalyzeIntervalMs).toBe(15_000);
    expect(loadConfig({ NODE_ENV: 'test', DATABASE_ANALYZE_INTERVAL_S: '0' }).databaseAnalyzeIntervalMs).toBe(0);
    expect(() => loadConfig({ NODE_ENV: 'test', DATABASE_ANALYZE_INTERVAL_S: 'soon' })).toThrow(/DATABASE_ANALYZE_INTERVAL_S/);
  });
});
