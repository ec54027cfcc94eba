import { Readable } from 'node:stream';
import { userInfo } from 'node:os';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { main } from '../../src/cli/importctl.js';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { signIn } from '../helpers/console.js';

// Operator accounts from importctl (issue 13, part 1): created with a role and a password that is
// shown once (or read from stdin), hashed with scrypt, listed, disabled, re-enabled, re-passworded;
// each change in the audit log as the user who ran importctl. The sign-in they open is the console's.

let ctx: TestContext;

beforeAll(async () => {
  ctx = await createTestContext({ env: { LOGIN_MAX_FAILURES: '1000' } });
});
afterAll(async () => ctx?.close());

async function importctl(args: string[], stdin?: string): Promise<{ code: number; out: string; err: string; lines: string[] }> {
  let out = '';
  let err = '';
  const code = await main(args, {
    out: (s) => (out += s),
    err: (s) => (err += s),
    env: { DATABASE_URL: ctx.config.databaseUrl, NODE_ENV: 'test', REDIS_URL: 'redis://127.0.0.1:1' },
    ...(stdin !== undefined ? { stdin: Readable.from([stdin]) } : {}),
  });
  return { code, out, err, lines: out.split('\n').slice(0, -1) };
}

it('creates an operator with a generated password shown once, which signs in; only its scrypt hash is stored', async () => {
  const r = await importctl(['operator', 'create', 'alice', '--role', 'operator']);
  expect(r.code, r.err).toBe(0);
  expect(r.lines[0]).toBe("created operator 'alice'");
  const password = r.lines.at(-1)!;
  expect(password).toMatch(/^[A-Za-z0-9_-]{20}$/);
  const row = await ctx.deps.db.selectFrom('operators').selectAll().where('name', '=', 'alice').executeTakeFirstOrThrow();
  expect(row.role).toBe('operator');
  expect(row.password_hash).toMatch(/^scrypt\$32768\$8\$3\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
  expect(row.password_hash).not.toContain(password);
  expect(await signIn(ctx.app, 'alice', password)).toBeDefined();
  expect(await signIn(ctx.app, 'alice', `${password}x`)).toBeUndefined();
});

it('reads the password from stdin when asked, and refuses a short one', async () => {
  const ok = await importctl(['operator', 'create', 'bob', '--role', 'viewer', '--password-stdin'], 'bobs-long-password\n');
  expect(ok.code, ok.err).toBe(0);
  expect(ok.out).toBe("created viewer 'bob'\n");
  expect(await signIn(ctx.app, 'bob', 'bobs-long-password')).toBeDefined();
  const short = await importctl(['operator', 'create', 'carol', '--role', 'viewer', '--password-stdin'], 'short\n');
  expect(short.code).toBe(2);
  expect(short.err).toBe('importctl: a password needs at least 12 characters\n');
  expect(await ctx.deps.db.selectFrom('operators').select('name').where('name', '=', 'carol').executeTakeFirst()).toBeUndefined();
});

it('refuses a bad role, a bad name and a duplicate with one line each', async () => {
  const role = await importctl(['operator', 'create', 'dave', '--role', 'admin']);
  expect(role.code).toBe(2);
  expect(role.err).toMatch(/^importctl: .*Expected viewer or operator\.\n$/);
  const name = await importctl(['operator', 'create', 'Not A Name', '--role', 'viewer']);
  expect(name.code).toBe(1);
  expect(name.err).toMatch(/^importctl: operator name 'Not A Name' must be lower-case/);
  const dup = await importctl(['operator', 'create', 'alice', '--role', 'viewer']);
  expect(dup).toMatchObject({ code: 1, out: '', err: "importctl: operator 'alice' exists already\n" });
});

it('disables, enables, changes the role and the password; lists them; each change is in the audit log', async () => {
  await importctl(['operator', 'create', 'erin', '--role', 'viewer', '--password-stdin'], 'erins-long-password\n');
  expect((await importctl(['operator', 'disable', 'erin'])).code).toBe(0);
  expect(await signIn(ctx.app, 'erin', 'erins-long-password')).toBeUndefined();
  expect((await importctl(['operator', 'enable', 'erin'])).code).toBe(0);
  expect((await importctl(['operator', 'set-role', 'erin', 'operator'])).code).toBe(0);
  const pw = await importctl(['operator', 'set-password', 'erin']);
  expect(pw.code).toBe(0);
  expect(await signIn(ctx.app, 'erin', 'erins-long-password')).toBeUndefined();
  expect(await signIn(ctx.app, 'erin', pw.lines.at(-1)!)).toBeDefined();
  expect((await importctl(['operator', 'disable', 'nobody'])).err).toBe("importctl: no operator 'nobody'\n");

  const list = JSON.parse((await importctl(['operator', 'list', '--json'])).out) as Array<{ name: string; role: string; disabled_at: string | null }>;
  expect(list.find((o) => o.name === 'erin')).toMatchObject({ role: 'operator', disabled_at: null });
  expect(Object.keys(list[0]!)).not.toContain('password_hash');
  const lines = await ctx.deps.db.selectFrom('audit_log').select(['actor_kind', 'actor', 'action']).where('target_kind', '=', 'operator').where('target', '=', 'erin').orderBy('id').execute();
  expect(lines.map((l) => l.action)).toEqual(['operator.create', 'operator.disable', 'operator.enable', 'operator.role', 'operator.password']);
  expect(new Set(lines.map((l) => `${l.actor_kind}:${l.actor}`))).toEqual(new Set([`cli:${userInfo().username}`]));
});
