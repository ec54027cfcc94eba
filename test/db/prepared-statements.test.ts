import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createDb } from '../../src/db/create-db.js';
import type { Database } from '../../src/db/database.js';
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
    expect(loadConfig({ DATABASE_PREPARED_STATEMENTS: 'false' }).databasePreparedStatements).toBe(false);
    expect(loadConfig({}).databasePreparedStatements).toBe(true);
    expect(() => loadConfig({ DATABASE_PREPARED_STATEMENTS: 'no' })).toThrow(/DATABASE_PREPARED_STATEMENTS/);
    const { db } = createDb(database.url, { max: 1, preparedStatements: false });
    try {
      const prepared = await preparedAfter(db, async (trx) => lookup(trx, 'A'));
      expect(prepared).toEqual([]);
    } finally {
      await db.destroy();
    }
  });
});
