import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createDb } from '../../src/db/create-db.js';
import type { Db } from '../../src/db/database.js';
import { createReferenceData } from '../../src/imports/reference/reference.service.js';
import { REFERENCE_SEED } from '../../src/imports/reference/reference.seed.js';
import { createTestDatabase } from '../helpers/context.js';
import { expectOneErrorLine, startImportctl, type RunResult } from './run-cli.js';

// The reference lists of decisions §6: what a migrated database holds, and `importctl reference`.

let database: { url: string; drop: () => Promise<void> };
let env: Record<string, string>;
let db: Db;

beforeAll(async () => {
  database = await createTestDatabase();
  env = { DATABASE_URL: database.url };
  db = createDb(database.url, { max: 2 }).db;
});
afterAll(async () => {
  await db?.destroy();
  await database?.drop();
});

const importctl = async (args: string[]): Promise<RunResult> => (await startImportctl(args, env, 30_000)).done;

// Each test spawns importctl several times, and each spawn compiles the CLI (2-12 s under a loaded suite): bounded, but generous.
describe('reference lists', { timeout: 180_000 }, () => {
  test('a migrated database holds the published lists and decisions §6 additions, the not-enabled types retired', async () => {
    const rows = await db.selectFrom('reference_values').select(['kind', 'value', 'retired_at']).orderBy('kind').orderBy('value').execute();
    const seed = REFERENCE_SEED.map((s) => ({ kind: s.kind, value: s.value, enabled: s.enabled })).sort((a, b) => `${a.kind} ${a.value}`.localeCompare(`${b.kind} ${b.value}`));
    expect(rows.map((r) => ({ kind: r.kind, value: r.value, enabled: r.retired_at === null })).sort((a, b) => `${a.kind} ${a.value}`.localeCompare(`${b.kind} ${b.value}`))).toEqual(seed);
    const enabled = (kind: string) => rows.filter((r) => r.kind === kind && r.retired_at === null).map((r) => r.value);
    expect(enabled('PAYMENT_INSTRUCTION_TYPE').sort()).toEqual(['CARD', 'DIRECT_DEBIT']);
    expect(enabled('CREDIT_REASON')).toContain('GENERAL_CREDIT');
    expect(enabled('PAYMENT_PAYMENT_TYPE')).toContain('DIRECT_CREDIT');
    expect(enabled('REPAYMENT_PAYMENT_TYPE')).toContain('');
  });

  test('importctl reference add, list and retire; a reader sees each change once the version moves', async () => {
    const reader = createReferenceData(db, { maxAgeMs: 0 });
    await reader.refresh();
    expect(reader.values('CHARGE_REASON').has('WINTER_FUEL_26')).toBe(false);

    const added = await importctl(['reference', 'add', 'charge_reason', 'WINTER_FUEL_26']);
    expect({ code: added.code, lines: added.lines, stderr: added.stderr }).toEqual({ code: 0, lines: ['added CHARGE_REASON "WINTER_FUEL_26"'], stderr: '' });
    await reader.refresh();
    expect(reader.values('CHARGE_REASON').has('WINTER_FUEL_26')).toBe(true);

    const again = await importctl(['reference', 'add', 'CHARGE_REASON', 'WINTER_FUEL_26']);
    expect(again.lines).toEqual(['CHARGE_REASON "WINTER_FUEL_26" is already in use']);

    const listed = await importctl(['reference', 'list', 'CHARGE_REASON']);
    expect(listed.code).toBe(0);
    expect(listed.lines).toContain('CHARGE_REASON\tWINTER_FUEL_26\tOPERATOR');
    expect(listed.lines).toContain('CHARGE_REASON\tIMPORTED_CHARGE\tPUBLISHED');

    const retired = await importctl(['reference', 'retire', 'CHARGE_REASON', 'WINTER_FUEL_26']);
    expect(retired.lines).toEqual(['retired CHARGE_REASON "WINTER_FUEL_26"']);
    await reader.refresh();
    expect(reader.values('CHARGE_REASON').has('WINTER_FUEL_26')).toBe(false);
    expect((await importctl(['reference', 'list', 'CHARGE_REASON'])).lines.find((l) => l.startsWith('CHARGE_REASON\tWINTER_FUEL_26\t'))).toMatch(/\tretired \d{4}-\d\d-\d\dT/);

    // Taking a retired value back into use.
    expect((await importctl(['reference', 'add', 'CHARGE_REASON', 'WINTER_FUEL_26'])).lines).toEqual(['added CHARGE_REASON "WINTER_FUEL_26"']);
  });

  test('refuses an unknown list (usage, exit 2) and retiring a value not in use (exit 1), each in one line', async () => {
    expectOneErrorLine(expect, await importctl(['reference', 'add', 'FAVOURITE_COLOUR', 'BLUE']), 2, /unknown reference list 'FAVOURITE_COLOUR'/);
    expectOneErrorLine(expect, await importctl(['reference', 'retire', 'CHARGE_REASON', 'NEVER_THERE']), 1, /has no value "NEVER_THERE" in use/);
  });

  test('a reader that has never loaded refuses every value rather than accepting any', () => {
    const reader = createReferenceData(db);
    expect(reader.values('CHARGE_REASON').size).toBe(0);
  });
});
