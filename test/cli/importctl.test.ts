import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, inject, test } from 'vitest';
import { verifyApiKey } from '../../src/auth/api-keys.js';
import { createDb } from '../../src/db/create-db.js';
import type { Db } from '../../src/db/database.js';
import { createTestDatabase } from '../helpers/context.js';
import { expectOneErrorLine, startImportctl, type RunResult } from './run-cli.js';

const importctl = async (args: string[], env: Record<string, string>): Promise<RunResult> => (await startImportctl(args, env, 30_000)).done;

let database: { url: string; drop: () => Promise<void> };
let env: Record<string, string>;
let pool: pg.Pool;
let db: Db;

beforeAll(async () => {
  database = await createTestDatabase();
  env = { DATABASE_URL: database.url };
  pool = new pg.Pool({ connectionString: database.url, max: 3 });
  db = createDb(database.url, { max: 2 }).db;
});

afterAll(async () => {
  await db?.destroy();
  await pool?.end();
  await database?.drop();
});

// The tests share a run queue (MAX_PARALLEL_RUNS), so time spent waiting for it counts against each test.
describe.concurrent('importctl', { timeout: 120_000 }, () => {
  test('db migrate creates a missing database, applies every migration, and is idempotent', async ({ expect }) => {
    const adminUrl = inject('adminDatabaseUrl');
    const name = `di_t_cli_${randomBytes(6).toString('hex')}`;
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    const files = readdirSync(new URL('../../migrations/', import.meta.url))
      .filter((f) => /^\d+_.+\.sql$/.test(f))
      .sort();
    try {
      const first = await importctl(['db', 'migrate'], { DATABASE_URL: url.toString() });
      expect({ code: first.code, stderr: first.stderr }).toEqual({ code: 0, stderr: '' });
      expect(first.lines).toEqual([
        `created database ${url.host}/${name}`,
        ...files.map((f) => `applied ${f}`),
        `${files.length} migration(s) applied, 0 already applied`,
      ]);

      const second = await importctl(['db', 'migrate'], { DATABASE_URL: url.toString() });
      expect({ code: second.code, stderr: second.stderr, lines: second.lines }).toEqual({
        code: 0,
        stderr: '',
        lines: [`database is up to date (${files.length} already applied)`],
      });

      const c = new pg.Client({ connectionString: url.toString() });
      await c.connect();
      try {
        const applied = await c.query<{ name: string }>('SELECT name FROM schema_migrations ORDER BY name');
        expect(applied.rows.map((r) => r.name)).toEqual(files);
        const suppliers = await c.query('SELECT count(*)::int AS n FROM import_suppliers');
        expect(suppliers.rows[0]).toEqual({ n: 0 });
      } finally {
        await c.end();
      }
    } finally {
      const admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
      await admin.end();
    }
  });

  test('supplier set-team: the team its scheduled (v2) accounts go to; unknown supplier or team is one clear line', async ({ expect }) => {
    const [supplier, team] = await Promise.all([importctl(['supplier', 'create', 'CLI_V2'], env), importctl(['team', 'create', 'Scheduled V2 Team'], env)]);
    expect([supplier.code, team.code]).toEqual([0, 0]);
    const set = await importctl(['supplier', 'set-team', 'CLI_V2', 'Scheduled V2 Team'], env);
    expect([set.code, set.stderr, set.lines]).toEqual([0, '', ["supplier CLI_V2 schedules its v2 accounts into team 'Scheduled V2 Team'"]]);
    const row = await pool.query(
      "SELECT t.name FROM import_suppliers s JOIN operations_teams t ON t.id = s.default_operations_team_id WHERE s.code = 'CLI_V2'",
    );
    expect(row.rows).toEqual([{ name: 'Scheduled V2 Team' }]);
    const [noSupplier, noTeam] = await Promise.all([
      importctl(['supplier', 'set-team', 'CLI_NOBODY', 'Scheduled V2 Team'], env),
      importctl(['supplier', 'set-team', 'CLI_V2', 'No Such Team'], env),
    ]);
    expectOneErrorLine(expect, noSupplier, 1, /CLI_NOBODY' does not exist/);
    expectOneErrorLine(expect, noTeam, 1, /'No Such Team' does not exist/);
  });

  test('supplier create, duplicate, set-status (any case; bad status; unknown code) and list', async ({ expect }) => {
    const [full, plain] = await Promise.all([
      importctl(
        ['supplier', 'create', 'CLI_ACME', '--name', 'Acme Energy', '--status', 'Paused', '--documents-root', 's3://docs/acme', '--send-customer-emails'],
        env,
      ),
      importctl(['supplier', 'create', 'CLI_BETA'], env),
    ]);
    expect([full.code, full.stderr, plain.code, plain.stderr]).toEqual([0, '', 0, '']);

    const suppliers = await pool.query(
      "SELECT code, name, status, documents_root, send_customer_emails FROM import_suppliers WHERE code IN ('CLI_ACME', 'CLI_BETA') ORDER BY code",
    );
    expect(suppliers.rows).toEqual([
      { code: 'CLI_ACME', name: 'Acme Energy', status: 'PAUSED', documents_root: 's3://docs/acme', send_customer_emails: true },
      { code: 'CLI_BETA', name: 'CLI_BETA', status: 'ONGOING', documents_root: '', send_customer_emails: false },
    ]);

    const [duplicate, resumed, completed, badStatus, badCreateStatus, unknown, badCode] = await Promise.all([
      importctl(['supplier', 'create', 'CLI_ACME'], env),
      importctl(['supplier', 'set-status', 'CLI_ACME', 'ongoing'], env),
      importctl(['supplier', 'set-status', 'CLI_BETA', 'COMPLETE'], env),
      importctl(['supplier', 'set-status', 'CLI_ACME', 'finished'], env),
      importctl(['supplier', 'create', 'CLI_GAMMA', '--status', 'stopped'], env),
      importctl(['supplier', 'set-status', 'CLI_NOPE', 'paused'], env),
      importctl(['supplier', 'create', 'has space'], env),
    ]);
    expectOneErrorLine(expect, duplicate, 1, /CLI_ACME' already exists/);
    expect([resumed.code, resumed.lines, completed.code]).toEqual([0, ['supplier CLI_ACME status ONGOING'], 0]);
    expectOneErrorLine(expect, badStatus, 2, /'finished'.*ongoing, paused or complete/);
    expectOneErrorLine(expect, badCreateStatus, 2, /'stopped'.*ongoing, paused or complete/);
    expectOneErrorLine(expect, unknown, 1, /CLI_NOPE' does not exist/);
    expectOneErrorLine(expect, badCode, 1, /not a valid supplier code/);

    const statuses = await pool.query("SELECT code, status FROM import_suppliers WHERE code IN ('CLI_ACME', 'CLI_BETA') ORDER BY code");
    expect(statuses.rows).toEqual([
      { code: 'CLI_ACME', status: 'ONGOING' },
      { code: 'CLI_BETA', status: 'COMPLETE' },
    ]);

    const list = await importctl(['supplier', 'list'], env);
    expect([list.code, list.stderr]).toEqual([0, '']);
    const [header, ...rows] = list.lines;
    expect(header).toMatch(/^CODE\s+NAME\s+STATUS\s+DOCUMENTS_ROOT\s+CUSTOMER_EMAILS\s+CREATED_AT$/);
    const acme = rows.find((r) => r.startsWith('CLI_ACME '));
    const beta = rows.find((r) => r.startsWith('CLI_BETA '));
    // Aligned: every value starts in its header's column.
    const col = (name: string) => header!.indexOf(name);
    expect(acme!.slice(col('NAME'), col('STATUS')).trimEnd()).toBe('Acme Energy');
    expect(acme!.slice(col('STATUS'), col('DOCUMENTS_ROOT')).trimEnd()).toBe('ONGOING');
    expect(acme!.slice(col('DOCUMENTS_ROOT'), col('CUSTOMER_EMAILS')).trimEnd()).toBe('s3://docs/acme');
    expect(acme!.slice(col('CUSTOMER_EMAILS'), col('CREATED_AT')).trimEnd()).toBe('yes');
    expect(acme!.slice(col('CREATED_AT'))).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(beta!.slice(col('STATUS'), col('DOCUMENTS_ROOT')).trimEnd()).toBe('COMPLETE');
    expect(beta!.slice(col('CUSTOMER_EMAILS'), col('CREATED_AT')).trimEnd()).toBe('no');

    // --json: the same suppliers, for scripts.
    const json = await importctl(['supplier', 'list', '--json'], env);
    const listed = JSON.parse(json.stdout) as Array<Record<string, unknown>>;
    expect(listed.find((x) => x.code === 'CLI_ACME')).toMatchObject({ name: 'Acme Energy', status: 'ONGOING', documents_root: 's3://docs/acme', send_customer_emails: true });
    expect(listed.find((x) => x.code === 'CLI_BETA')).toMatchObject({ status: 'COMPLETE', send_customer_emails: false });
  });

  test('team create (trimmed), duplicate and list', async ({ expect }) => {
    const created = await importctl(['team', 'create', '  CLI Ops Team  '], env);
    expect([created.code, created.stderr, created.lines]).toEqual([0, '', ['created team CLI Ops Team']]);

    const [duplicate, blank, list] = await Promise.all([
      importctl(['team', 'create', 'CLI Ops Team'], env),
      importctl(['team', 'create', '   '], env),
      importctl(['team', 'list'], env),
    ]);
    expectOneErrorLine(expect, duplicate, 1, /'CLI Ops Team' already exists/);
    expectOneErrorLine(expect, blank, 1, /team name/);
    expect([list.code, list.stderr]).toEqual([0, '']);
    expect(list.lines[0]).toMatch(/^NAME\s+CREATED_AT$/);
    const row = list.lines.find((l) => l.startsWith('CLI Ops Team '));
    expect(row?.slice(list.lines[0]!.indexOf('CREATED_AT'))).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

    const json = await importctl(['team', 'list', '--json'], env);
    expect((JSON.parse(json.stdout) as Array<{ name: string; created_at: string }>).find((t) => t.name === 'CLI Ops Team')?.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

    const teams = await pool.query("SELECT name FROM operations_teams WHERE name LIKE 'CLI%'");
    expect(teams.rows).toEqual([{ name: 'CLI Ops Team' }]);
  });

  test('api-key create prints a working key once, stores only its hash; revoke disables it', async ({ expect }) => {
    const created = await importctl(['api-key', 'create', 'cli-partner'], env);
    expect([created.code, created.stderr]).toEqual([0, '']);
    expect(created.lines.some((l) => /shown only once/i.test(l))).toBe(true);
    const key = created.lines.at(-1)!;
    expect(key).toMatch(/^dik_[A-Za-z0-9]{12}_[A-Za-z0-9_-]{43}$/);

    const { rows } = await pool.query<{ id: string; json: string; hash: Buffer }>(
      "SELECT id::text AS id, row_to_json(k)::text AS json, secret_hash AS hash FROM api_keys k WHERE name = 'cli-partner'",
    );
    expect(rows).toHaveLength(1);
    const secret = key.slice('dik_'.length + 12 + 1);
    const stored = rows[0]!;
    expect(stored.json).not.toContain(key);
    expect(stored.json).not.toContain(secret);
    expect(stored.hash.toString('utf8')).not.toContain(secret);
    expect(stored.hash.equals(createHash('sha256').update(secret).digest())).toBe(true);
    expect(await verifyApiKey(db, key)).toBe(stored.id);

    const [again, unknown] = await Promise.all([
      importctl(['api-key', 'create', 'cli-partner'], env),
      importctl(['api-key', 'revoke', 'cli-nobody'], env),
    ]);
    expectOneErrorLine(expect, again, 1, /'cli-partner' already exists/);
    expectOneErrorLine(expect, unknown, 1, /'cli-nobody'/);

    const revoked = await importctl(['api-key', 'revoke', 'cli-partner'], env);
    expect([revoked.code, revoked.stderr, revoked.lines]).toEqual([0, '', ["revoked API key 'cli-partner'"]]);
    expect(await verifyApiKey(db, key)).toBeNull();
    const after = await pool.query("SELECT revoked_at FROM api_keys WHERE name = 'cli-partner'");
    expect(after.rows[0].revoked_at).toBeInstanceOf(Date);
  });

  test('api-key create --supplier scopes a key to those suppliers, says so, and refuses an unknown supplier', async ({ expect }) => {
    await pool.query("INSERT INTO import_suppliers (code, name) VALUES ('SCOPEA', 'A'), ('SCOPEB', 'B')");
    const scoped = await importctl(['api-key', 'create', 'cli-scoped', '--supplier', 'SCOPEA', '--supplier', 'SCOPEB'], env);
    expect([scoped.code, scoped.stderr]).toEqual([0, '']);
    expect(scoped.lines).toContain('scope: suppliers SCOPEA, SCOPEB only; every other supplier is invisible to it');
    const rows = await pool.query<{ code: string }>(
      "SELECT s.code FROM api_key_suppliers ks JOIN api_keys k ON k.id = ks.api_key_id JOIN import_suppliers s ON s.id = ks.import_supplier_id WHERE k.name = 'cli-scoped' ORDER BY s.code",
    );
    expect(rows.rows.map((r) => r.code)).toEqual(['SCOPEA', 'SCOPEB']);

    const everyone = await importctl(['api-key', 'create', 'cli-everyone'], env);
    expect(everyone.lines.some((l) => /^scope: EVERY supplier/.test(l))).toBe(true);

    const unknown = await importctl(['api-key', 'create', 'cli-nowhere', '--supplier', 'SCOPEA', '--supplier', 'NOPE'], env);
    expectOneErrorLine(expect, unknown, 1, /no import supplier 'NOPE'/);
    expect((await pool.query("SELECT 1 FROM api_keys WHERE name = 'cli-nowhere'")).rowCount).toBe(0);
  });

  test('account skip marks new and staged accounts, refuses imported ones and unknown suppliers', async ({ expect }) => {
    const supplier = await pool.query<{ id: string }>(
      "INSERT INTO import_suppliers (code, name) VALUES ('SKIPCO', 'Skip Co') RETURNING id::text AS id",
    );
    const supplierId = supplier.rows[0]!.id;
    const team = await pool.query<{ id: string }>("INSERT INTO operations_teams (name) VALUES ('skip team') RETURNING id::text AS id");
    const account = await pool.query<{ id: string }>(
      `INSERT INTO accounts (number, import_supplier_id, external_account_number, operations_team_id, account_type, communication_preference)
       VALUES ('A-0000C11A', $1, 'EXT-IMPORTED', $2, 'DOMESTIC', 'ONLINE') RETURNING id::text AS id`,
      [supplierId, team.rows[0]!.id],
    );
    await pool.query(
      `INSERT INTO account_import_processes (import_supplier_id, external_account_number, payload, account_id, staged_at)
       VALUES ($1, 'EXT-IMPORTED', '{}', $2, now()), ($1, 'EXT-STAGED', '{"staged": true}', NULL, now())`,
      [supplierId, account.rows[0]!.id],
    );

    const [fresh, staged, imported, unknown] = await Promise.all([
      importctl(['account', 'skip', 'SKIPCO', 'EXT-NEW'], env),
      importctl(['account', 'skip', 'SKIPCO', 'EXT-STAGED'], env),
      importctl(['account', 'skip', 'SKIPCO', 'EXT-IMPORTED'], env),
      importctl(['account', 'skip', 'NOWHERE', 'EXT-NEW'], env),
    ]);
    expect([fresh.code, fresh.stderr, fresh.lines]).toEqual([0, '', ["account 'EXT-NEW' of supplier 'SKIPCO' marked to skip"]]);
    expect([staged.code, staged.stderr]).toEqual([0, '']);
    expectOneErrorLine(expect, imported, 1, /already imported/);
    expectOneErrorLine(expect, unknown, 1, /'NOWHERE' does not exist/);

    const processes = await pool.query(
      `SELECT external_account_number, marked_to_skip, payload, account_id IS NOT NULL AS imported
       FROM account_import_processes WHERE import_supplier_id = $1 ORDER BY external_account_number`,
      [supplierId],
    );
    expect(processes.rows).toEqual([
      { external_account_number: 'EXT-IMPORTED', marked_to_skip: false, payload: {}, imported: true },
      { external_account_number: 'EXT-NEW', marked_to_skip: true, payload: null, imported: false },
      { external_account_number: 'EXT-STAGED', marked_to_skip: true, payload: { staged: true }, imported: false },
    ]);
  });

  test('bad configuration, unreachable database and usage errors: one line, non-zero', async ({ expect }) => {
    const [unreachable, badUrl, badMigrate, unknownCommand, missingSub, extraArg, help] = await Promise.all([
      importctl(['supplier', 'list'], { DATABASE_URL: 'postgres://postgres:hunter2secret@127.0.0.1:1/nowhere' }),
      importctl(['team', 'list'], { DATABASE_URL: 'not a url' }),
      importctl(['db', 'migrate'], { DATABASE_URL: 'postgres://postgres:hunter2secret@127.0.0.1:1/nowhere' }),
      importctl(['suplier', 'list'], env),
      importctl(['supplier'], env),
      importctl(['team', 'create', 'a', 'b'], env),
      importctl(['--help'], env),
    ]);
    expectOneErrorLine(expect, unreachable, 1, /PostgreSQL at 127\.0\.0\.1:1\/nowhere.*ECONNREFUSED/);
    expect(unreachable.stderr).not.toContain('hunter2secret');
    expectOneErrorLine(expect, badUrl, 2, /invalid configuration: DATABASE_URL/);
    expectOneErrorLine(expect, badMigrate, 1, /ECONNREFUSED/);
    expect(badMigrate.stderr).not.toContain('hunter2secret');
    expectOneErrorLine(expect, unknownCommand, 2, /unknown command 'suplier'/);
    expectOneErrorLine(expect, missingSub, 2, /importctl supplier --help/);
    expectOneErrorLine(expect, extraArg, 2, /too many arguments/);
    expect([help.code, help.stderr]).toEqual([0, '']);
    const packageVersion = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
    for (const v of await Promise.all([importctl(['--version'], env), importctl(['-V'], env)])) expect([v.code, v.stderr, v.lines]).toEqual([0, '', [packageVersion]]);
    // npm run importctl: the launcher runs the compiled CLI when it is fresh, the sources otherwise; the same answer either way.
    const launched = spawnSync(process.execPath, ['src/cli/run.mjs', '--version'], { cwd: new URL('../../', import.meta.url), encoding: 'utf8', timeout: 30_000 });
    expect([launched.status, launched.stderr, launched.stdout]).toEqual([0, '', `${packageVersion}\n`]);
    expect(help.stdout).toMatch(/Exit status:[\s\S]*1 {2}the command failed[\s\S]*2 {2}usage error/);
  });
});
