import { setTimeout as sleep } from 'node:timers/promises';
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createDb } from '../../src/db/create-db.js';
import type { Database } from '../../src/db/database.js';
import { startStatisticsKeeper } from '../../src/db/statistics.js';
import { createLogger } from '../../src/log.js';
import { listProcesses, listProcessesQuery } from '../../src/imports/accounts/account.repository.js';
import { createTestDatabase } from '../helpers/context.js';

let database: Awaited<ReturnType<typeof createTestDatabase>>;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => database?.drop());

/** The statements the connection has prepared, after running `work` on it (one transaction: one connection). */
async function preparedAfter(db: Kysely<Database>, work: (trx: Kysely<Database>) => Promise<unknown>): Promise<string[]> {
  return db.transaction().execute(async (trx) => {
    await work(trx);
    const { rows } = await sql<{ statement: string }>`SELECT statement FROM pg_prepared_statements`.execute(trx);
    return rows.map((r) => r.statement);
  });
}

const lookup = (trx: Kysely<Database>, code: string) => trx.selectFrom('import_suppliers').select('id').where('code', '=', code).execute();

describe('named prepared statements', () => {
  it('prepares a parameterised statement once per connection and reuses it', async () => {
    const { db } = createDb(database.url, { max: 1 });
    try {
      const prepared = await preparedAfter(db, async (trx) => {
        for (const code of ['A', 'B', 'C']) expect(await lookup(trx, code)).toEqual([]);
      });
      expect(prepared.filter((s) => s.includes('from "import_suppliers"'))).toHaveLength(1);
    } finally {
      await db.destroy();
    }
  });

  it('leaves statements with many parameters unnamed (their shapes vary with the row count)', async () => {
    const { db } = createDb(database.url, { max: 1 });
    try {
      const codes = Array.from({ length: 300 }, (_, i) => `C${i}`);
      const prepared = await preparedAfter(db, async (trx) => {
        expect(await trx.selectFrom('import_suppliers').select('id').where('code', 'in', codes).execute()).toEqual([]);
      });
      expect(prepared.filter((s) => s.includes('from "import_suppliers"'))).toEqual([]);
    } finally {
      await db.destroy();
    }
  });

  it('survives a migration that changes a table under a prepared statement while the process runs', async () => {
    const { db } = createDb(database.url, { max: 1 });
    const { db: migrator } = createDb(database.url, { max: 1, preparedStatements: false });
    const everything = (trx: Kysely<Database>) => trx.selectFrom('operations_teams').selectAll().where('name', '=', 'T').execute();
    try {
      await db.insertInto('operations_teams').values({ name: 'T' }).execute();
      for (let i = 0; i < 3; i++) expect(await everything(db)).toHaveLength(1);
      await sql`ALTER TABLE operations_teams ADD COLUMN region text`.execute(migrator);
      // Outside a transaction: prepared again and run again, unnoticed by the caller.
      const [row] = await everything(db);
      expect(row).toHaveProperty('region', null);
      await sql`ALTER TABLE operations_teams DROP COLUMN region`.execute(migrator);
      // Inside one: that transaction fails once (its caller retries), and the retry succeeds.
      await expect(db.transaction().execute(everything)).rejects.toThrow(/cached plan must not change result type/);
      expect(await db.transaction().execute(everything)).toEqual([expect.not.objectContaining({ region: expect.anything() })]);
    } finally {
      await db.destroy();
      await migrator.destroy();
    }
  });

  it('can be turned off (DATABASE_PREPARED_STATEMENTS=false), for poolers in transaction mode', async () => {
    expect(loadConfig({ NODE_ENV: 'test', DATABASE_PREPARED_STATEMENTS: 'false' }).databasePreparedStatements).toBe(false);
    expect(loadConfig({ NODE_ENV: 'test' }).databasePreparedStatements).toBe(true);
    expect(() => loadConfig({ NODE_ENV: 'test', DATABASE_PREPARED_STATEMENTS: 'no' })).toThrow(/DATABASE_PREPARED_STATEMENTS/);
    const { db } = createDb(database.url, { max: 1, preparedStatements: false });
    try {
      const prepared = await preparedAfter(db, async (trx) => lookup(trx, 'A'));
      expect(prepared).toEqual([]);
    } finally {
      await db.destroy();
    }
  });

  it('plans a list for the tables as they are now: a plan chosen while they were small does not stay as they grow', async () => {
    // One connection, as a pooled connection of the API lives: it lists while a migration has just
    // begun (a hundred accounts, never analyzed, as on a server without autovacuum), then 20,000
    // accounts arrive, then it lists again.
    const { db } = createDb(database.url, { max: 1 });
    const { db: loader } = createDb(database.url, { max: 1, preparedStatements: false });
    try {
      const { rows } = await sql<{ supplier: string; team: string }>`
        WITH s AS (INSERT INTO import_suppliers (code, name) VALUES ('GROW', 'Grows') RETURNING id),
             t AS (INSERT INTO operations_teams (name) VALUES ('Growth') RETURNING id)
        SELECT s.id AS supplier, t.id AS team FROM s, t`.execute(loader);
      const { supplier, team } = rows[0]!;
      const load = (from: number, to: number) => sql`
        WITH a AS (
          INSERT INTO accounts (number, import_supplier_id, external_account_number, operations_team_id, account_type, communication_preference)
          SELECT 'A-' || lpad(upper(to_hex(g)), 8, '0'), ${supplier}, 'G-' || lpad(g::text, 7, '0'), ${team}, 'DOMESTIC', 'ONLINE'
            FROM generate_series(${from}::int, ${to}::int) g
          RETURNING id, external_account_number)
        INSERT INTO account_import_processes (import_supplier_id, external_account_number, payload, account_id)
        SELECT ${supplier}, external_account_number, '{}'::jsonb, id FROM a`.execute(loader);
      await load(1, 100);
      for (let i = 0; i < 10; i++) expect(await listProcesses(db, supplier, 'imported', null, 1000)).toHaveLength(100);
      await load(101, 20_000);

      const page = await listProcesses(db, supplier, 'imported', null, 1000);
      expect(page).toHaveLength(1000);
      expect(page[0]!.external_account_number).toBe('G-0000001');
      // The plan that connection runs, as it runs it.
      const { sql: text, parameters } = listProcessesQuery(db, supplier, 'imported', null, 1000).compile();
      const explain = (analyze: boolean) =>
        db.connection().execute(async (conn) => {
          const named = await sql<{ name: string }>`SELECT name FROM pg_prepared_statements WHERE statement = ${text}`.execute(conn);
          expect(named.rows).toHaveLength(1);
          const args = parameters.map((p) => (typeof p === 'number' ? String(p) : `'${String(p)}'`)).join(', ');
          const explained = await sql<{ 'QUERY PLAN': string }>`EXPLAIN (ANALYZE ${sql.raw(analyze ? 'true' : 'false')}) EXECUTE ${sql.id(named.rows[0]!.name)}(${sql.raw(args)})`.execute(conn);
          return explained.rows.map((r) => r['QUERY PLAN']).join('\n');
        });
      // A generic plan chosen at a hundred accounts joins each row of the page against every
      // account (500,000 comparisons for a page of 1,000, and more as the table grows). The service's
      // statistics keeper (db/statistics.ts, in every server and worker process) analyzes the grown
      // tables, which retires that plan: within a few of its ticks the same connection walks the
      // (supplier, account number) index and stops after the page, with no join filter and no sort.
      const keeper = startStatisticsKeeper(loader, { intervalMs: 100, log: createLogger('silent') });
      let plan = '';
      try {
        const deadline = Date.now() + 20_000;
        do {
          await listProcesses(db, supplier, 'imported', null, 1000);
          plan = await explain(true);
          if (!/Rows Removed by Join Filter/.test(plan)) break;
          await sleep(100);
        } while (Date.now() < deadline);
      } finally {
        await keeper.stop();
      }
      expect(plan).not.toMatch(/Rows Removed by Join Filter/);
      expect(plan).toMatch(/Index Scan using \S+ on account_import_processes/);
      expect(plan).not.toMatch(/Seq Scan on account_import_processes|Sort/);
    } finally {
      await db.destroy();
      await loader.destroy();
    }
  });
});
