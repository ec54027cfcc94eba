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
