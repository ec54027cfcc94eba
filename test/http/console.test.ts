import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setOperatorDisabled, setOperatorPassword, setOperatorRole } from '../../src/console/operators.js';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { cookieOf, operatorSession, sessionOf, signIn, tokenIn } from '../helpers/console.js';

/**
 * The console's sign-in, sessions, roles and CSRF (issue 13, part 1), through the real app, its
 * PostgreSQL and its Redis. The pages' content is tested with a real batch in test/queue/console.test.ts
 * and in a browser in test/browser/console.test.ts.
 */

let ctx: TestContext;
let redis: Redis;

beforeAll(async () => {
  ctx = await createTestContext({ env: { LOGIN_MAX_FAILURES: '1000' } });
  await ctx.createSupplier('ACME');
  await ctx.createTeam('Ops');
  redis = new Redis(ctx.config.redisUrl, { lazyConnect: true });
});

afterAll(async () => {
  redis?.disconnect();
  await ctx?.close();
});

const form = (body: Record<string, string>) => ({ payload: new URLSearchParams(body).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
const supplierStatus = async (code: string) => (await ctx.deps.db.selectFrom('import_suppliers').select('status').where('code', '=', code).executeTakeFirstOrThrow()).status;

describe('without a session', () => {
  const PAGES = ['/admin', '/admin/', '/admin/suppliers', '/admin/suppliers/ACME', '/admin/audit', '/admin/accounts', '/admin/batches/new', '/admin/queues', '/admin/queues/api/queues', '/admin/no/such/page'];

  it.each(PAGES)('a browser asking for %s is sent to sign in, and comes back there after', async (url) => {
    const res = await ctx.app.inject({ method: 'GET', url, headers: { accept: 'text/html' } });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(`/admin/sign-in?next=${encodeURIComponent(url)}`);
    expect(res.headers['set-cookie']).toBeUndefined();
  });

  it.each(PAGES)('anything else asking for %s gets 401 in the envelope', async (url) => {
    const res = await ctx.app.inject({ method: 'GET', url });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ detail: expect.stringContaining('Sign in'), code: 'not_authenticated', errors: [] });
  });

  it('refuses every action, whatever credentials another surface takes', async () => {
    for (const [method, url] of [
      ['POST', '/admin/suppliers/ACME/status'],
      ['POST', '/admin/batches'],
      ['PUT', '/admin/queues/api/queues/validate/pause'],
    ] as const) {
      const res = await ctx.app.inject({ method, url, headers: { authorization: `Basic ${Buffer.from('ops:password').toString('base64')}` }, payload: 'status=PAUSED' });
      expect(res.statusCode, `${method} ${url}`).toBe(401);
    }
    expect(await supplierStatus('ACME')).toBe('ONGOING');
  });

  it('serves the sign-in page and its assets, and nothing is stored for a visitor', async () => {
    const page = await ctx.app.inject({ method: 'GET', url: '/admin/sign-in' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.body).toContain('name="password"');
    expect(page.headers['set-cookie']).toBeUndefined();
    const css = await ctx.app.inject({ method: 'GET', url: '/admin/static/console.css' });
    expect(css.statusCode).toBe(200);
    expect(css.headers['content-type']).toMatch(/^text\/css/);
    expect(await redis.keys(`${ctx.config.redisPrefix}:console-session:*`)).toEqual([]);
  });
});

describe('signing in', () => {
  it('takes the right name and password, with a session cookie scripts and other sites cannot use', async () => {
    const op = await operatorSession(ctx.app, ctx.deps.db, 'viewer');
    const res = await ctx.app.inject({ method: 'POST', url: '/admin/sign-in', ...form({ name: op.name, password: op.password, next: '/admin/suppliers' }) });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/admin/suppliers');
    const cookie = ([] as string[]).concat(res.headers['set-cookie'] ?? []).find((c) => c.startsWith('di_console='))!;
    expect(cookie).toMatch(/; HttpOnly/i);
    expect(cookie).toMatch(/; SameSite=Strict/i);
    expect(cookie).toMatch(/; Path=\/admin/i);
    // Not Secure here (NODE_ENV=test over plain HTTP); in production it is, and sign-in needs HTTPS (below).
    const page = await sessionOf(ctx.app, cookieOf(res)).get('/admin/suppliers');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(op.name);
  });

  it('refuses a wrong password, an unknown name and an empty form alike, with no session', async () => {
    const op = await operatorSession(ctx.app, ctx.deps.db, 'viewer');
    for (const body of [{ name: op.name, password: 'not-the-password' }, { name: 'nobody-here', password: op.password }, {}] as Array<Record<string, string>>) {
      const res = await ctx.app.inject({ method: 'POST', url: '/admin/sign-in', ...form(body) });
      expect(res.statusCode).toBe(401);
      expect(res.body).toContain('do not match an operator');
      expect(res.headers['set-cookie']).toBeUndefined();
    }
  });

  it('goes back only to a page of the console, never to another site', async () => {
    const op = await operatorSession(ctx.app, ctx.deps.db, 'viewer');
    for (const next of ['https://evil.example/', '//evil.example/admin/', '/\\evil.example', '/metrics', 'javascript:alert(1)']) {
      const res = await ctx.app.inject({ method: 'POST', url: '/admin/sign-in', ...form({ name: op.name, password: op.password, next }) });
      expect(res.headers.location, next).toBe('/admin/');
    }
  });

  it('issues a new session id at each sign-in, and signing out ends the session', async () => {
    const op = await operatorSession(ctx.app, ctx.deps.db, 'operator');
    const again = await signIn(ctx.app, op.name, op.password);
    expect(again!.cookie).not.toBe(op.cookie);
    const out = await op.post('/admin/sign-out', {});
    expect(out.statusCode).toBe(303);
    expect(out.headers.location).toBe('/admin/sign-in');
    expect((await op.get('/admin/')).statusCode).toBe(303);
    // The other session is its own.
    expect((await again!.get('/admin/')).statusCode).toBe(200);
  });

  it('keeps sessions in Redis with the idle timeout, and ends one past its absolute lifetime', async () => {
    const op = await operatorSession(ctx.app, ctx.deps.db, 'viewer');
    const keys = await redis.keys(`${ctx.config.redisPrefix}:console-session:*`);
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) {
      const ttl = await redis.pttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(ctx.config.consoleSession.idleMs);
    }
    // Signed in 13 hours ago (the default lifetime is 12): however recently used, the session is over.
    const id = decodeURIComponent(op.cookie.slice('di_console='.length)).split('.')[0]!;
    const key = `${ctx.config.redisPrefix}:console-session:${id}`;
    const stored = JSON.parse((await redis.get(key))!) as { operator: { signedInAt: number } };
    stored.operator.signedInAt -= 13 * 3_600_000;
    await redis.set(key, JSON.stringify(stored), 'PX', 60_000);
    expect((await op.get('/admin/')).statusCode).toBe(303);
    expect(await redis.exists(key)).toBe(0);
  });

  it('ends the sessions of an operator disabled, or whose password changed; a new role applies at once', async () => {
    const a = await operatorSession(ctx.app, ctx.deps.db, 'operator');
    await setOperatorDisabled(ctx.deps.db, a.name, true);
    expect((await a.get('/admin/')).statusCode).toBe(303);
    expect(await signIn(ctx.app, a.name, a.password)).toBeUndefined();

    const b = await operatorSession(ctx.app, ctx.deps.db, 'operator');
    await setOperatorPassword(ctx.deps.db, b.name, 'a-brand-new-password-1');
    expect((await b.get('/admin/')).statusCode).toBe(303);

    const c = await operatorSession(ctx.app, ctx.deps.db, 'operator');
    expect((await c.get('/admin/batches/new')).statusCode).toBe(200);
    await setOperatorRole(ctx.deps.db, c.name, 'viewer');
    expect((await c.get('/admin/batches/new')).statusCode).toBe(403);
  });

  it('in production, signs in over HTTPS only, with a Secure cookie', async () => {
    const prod = await createTestContext({ env: { NODE_ENV: 'production', TRUST_PROXY: 'true', LOGIN_MAX_FAILURES: '1000' } });
    try {
      const op = await operatorSession(prod.app, prod.deps.db, 'viewer').catch(() => undefined);
      expect(op).toBeUndefined();
      const plain = await prod.app.inject({ method: 'POST', url: '/admin/sign-in', ...form({ name: 'viewer-x', password: 'whatever-password' }) });
      expect(plain.statusCode).toBe(400);
      expect(plain.body).toContain('HTTPS only');
      const { createOperator } = await import('../../src/console/operators.js');
      await createOperator(prod.deps.db, 'prod-viewer', 'viewer', 'prod-viewer-password');
      const tls = await prod.app.inject({
        method: 'POST',
        url: '/admin/sign-in',
        payload: 'name=prod-viewer&password=prod-viewer-password',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-proto': 'https' },
      });
      expect(tls.statusCode).toBe(303);
      expect(([] as string[]).concat(tls.headers['set-cookie'] ?? []).find((c) => c.startsWith('di_console='))).toMatch(/; Secure/i);
    } finally {
      await prod.close();
    }
  });
});

describe('viewers and operators', () => {
  it('lets a viewer see every page but act on nothing: no forms, and 403 when they try', async () => {
    const viewer = await operatorSession(ctx.app, ctx.deps.db, 'viewer');
    for (const url of ['/admin/', '/admin/suppliers', '/admin/suppliers/ACME', '/admin/audit', '/admin/accounts', '/admin/queues', '/admin/queues/api/queues']) {
      expect((await viewer.get(url)).statusCode, url).toBe(200);
    }
    expect((await viewer.get('/admin/suppliers/ACME')).body).not.toContain('/status?status=');
    for (const url of ['/admin/batches/new', '/admin/suppliers/ACME/status?status=PAUSED']) {
      const res = await viewer.get(url);
      expect(res.statusCode, url).toBe(403);
      expect(res.body).toContain('operator role');
    }
    const post = await viewer.post('/admin/suppliers/ACME/status', { status: 'PAUSED' });
    expect(post.statusCode).toBe(403);
    expect(post.json()).toMatchObject({ code: 'permission_denied' });
    const board = await ctx.app.inject({ method: 'PUT', url: '/admin/queues/api/queues/validate/pause', headers: { cookie: viewer.cookie } });
    expect(board.statusCode).toBe(403);
    expect(await supplierStatus('ACME')).toBe('ONGOING');
    expect(await ctx.deps.queues.validate.isPaused()).toBe(false);
  });

  it("changes a supplier's status behind a confirmation, as the operator, in the audit log", async () => {
    const op = await operatorSession(ctx.app, ctx.deps.db, 'operator');
    const confirm = await op.get('/admin/suppliers/ACME/status?status=PAUSED');
    expect(confirm.statusCode).toBe(200);
    expect(confirm.body).toContain('Set supplier ACME from ONGOING to PAUSED?');
    expect(await supplierStatus('ACME')).toBe('ONGOING');
    const done = await op.post('/admin/suppliers/ACME/status', { status: 'PAUSED' }, { tokenFrom: '/admin/suppliers/ACME/status?status=PAUSED' });
    expect(done.statusCode).toBe(303);
    expect(await supplierStatus('ACME')).toBe('PAUSED');
    const line = await ctx.deps.db.selectFrom('audit_log').selectAll().where('action', '=', 'supplier.set_status').orderBy('id', 'desc').executeTakeFirstOrThrow();
    expect(line).toMatchObject({ actor_kind: 'operator', actor: op.name, target_kind: 'supplier', target: 'ACME', detail: { status: 'PAUSED', was: 'ONGOING' } });
    expect((await op.get('/admin/audit')).body).toContain(op.name);
    await op.post('/admin/suppliers/ACME/status', { status: 'ONGOING' });
    expect(await supplierStatus('ACME')).toBe('ONGOING');
  });

  it('refuses an action without the CSRF token, with a token of another session, or from another origin', async () => {
    const op = await operatorSession(ctx.app, ctx.deps.db, 'operator');
    const other = await operatorSession(ctx.app, ctx.deps.db, 'operator');
    const attempt = (csrf: string | undefined, headers: Record<string, string> = {}) =>
      ctx.app.inject({
        method: 'POST',
        url: '/admin/suppliers/ACME/status',
        payload: new URLSearchParams({ status: 'COMPLETE', ...(csrf === undefined ? {} : { _csrf: csrf }) }).toString(),
        headers: { cookie: op.cookie, 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html', ...headers },
      });
    const none = await attempt(undefined);
    expect(none.statusCode).toBe(403);
    expect(none.body).toContain('did not come from this console');
    expect((await attempt('made-up-token')).statusCode).toBe(403);
    expect((await attempt(await other.token())).statusCode).toBe(403);
    const crossSite = await attempt(await op.token(), { origin: 'https://evil.example' });
    expect(crossSite.statusCode).toBe(403);
    expect(crossSite.json()).toMatchObject({ code: 'cross_origin_refused' });
    expect((await attempt(await op.token(), { 'sec-fetch-site': 'cross-site' })).statusCode).toBe(403);
    expect(await supplierStatus('ACME')).toBe('ONGOING');
    // The same request with its own token goes through (so the refusals above were the token's).
    expect((await attempt(await op.token(), { origin: 'http://localhost:80' })).statusCode).toBe(303);
    expect(await supplierStatus('ACME')).toBe('COMPLETE');
    await op.post('/admin/suppliers/ACME/status', { status: 'ONGOING' });
  });

  it('answers bad input on its pages with a 4xx, never a 500', async () => {
    const op = await operatorSession(ctx.app, ctx.deps.db, 'operator');
    for (const url of ['/admin/batches/not-a-uuid', '/admin/batches/00000000-0000-4000-8000-000000000000', '/admin/?state=NOPE', '/admin/?before=x', '/admin/suppliers/NOPE', '/admin/accounts/NOPE/x', '/admin/accounts/ACME/never', '/admin/audit?kind=nope', '/admin/suppliers/ACME/status?status=gone']) {
      const res = await op.get(url);
      expect(res.statusCode, url).toBeGreaterThanOrEqual(400);
      expect(res.statusCode, url).toBeLessThan(500);
    }
    const upload = await ctx.app.inject({ method: 'POST', url: '/admin/batches', payload: 'x=1', headers: { cookie: op.cookie, 'content-type': 'application/x-www-form-urlencoded' } });
    expect(upload.statusCode).toBe(415);
    expect(tokenIn((await op.get('/admin/')).body)).toMatch(/\S{10,}/);
  });
});
