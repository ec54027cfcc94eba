import { randomUUID } from 'node:crypto';
import type { Queue } from 'bullmq';
import type { LightMyRequestResponse } from 'fastify';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, revokeApiKey } from '../../src/auth/api-keys.js';
import { QUEUE_NAMES } from '../../src/queue/contract.js';
import { cookieOf, operatorSession, sessionOf } from '../helpers/console.js';
import { createTestContext, TEST_TOKEN_SECRET, type TestContext } from '../helpers/context.js';
import { basicAuth, describeResponse, OBTAIN_TOKEN } from './helpers.js';

/**
 * Issue item 8, access: every data-import, batch, console (dashboard included) and metrics route refuses
 * without valid credentials: a token for the API, HTTP Basic or the scrape token for /metrics, an
 * operator's session for everything under /admin/ (issue 13). The routes are not listed by hand: they are read from Fastify's own route table
 * (printRoutes), so a route added later, by any means, is covered as soon as it exists. Only the
 * allow-list below may answer an anonymous request.
 */

/** The rendered reference of the API description (/docs) and its static assets: no data. */
const DOCS_ROUTES = ['/docs', '/docs/init.js', '/docs/swagger-ui.css', '/docs/swagger-ui-bundle.js', '/docs/favicon-32x32.png'].flatMap((p) => [`GET ${p}`, `HEAD ${p}`]);

/** Routes that are open on purpose: probes, the API description and its reference page, and the sign-in (ObtainToken) itself. */
const OPEN_ROUTES = new Set(['GET /healthz', 'HEAD /healthz', 'GET /readyz', 'HEAD /readyz', 'GET /openapi.json', 'HEAD /openapi.json', ...DOCS_ROUTES, 'GET /v1/graphql', 'HEAD /v1/graphql', 'POST /v1/graphql']);

const OPERATOR = { user: 'ops-user', password: 'correct horse battery staple' };
const METRICS_TOKEN = 'routes-scrape-token-0123456789-abcdefghij';
const S = 'ROUTES_CO';
const HOUR_MS = 60 * 60 * 1000;

let ctx: TestContext;
let table: RouteEntry[];

interface RouteEntry {
  method: string;
  /** As Fastify stores it: no trailing slash (ignoreTrailingSlash), `:param` and `*` kept. */
  path: string;
}

/**
 * Reads `app.printRoutes()`: find-my-way's radix tree, one node per line, each carrying a fragment of
 * the path (so the fragments from the root down concatenate to the full pattern) and, where a route
 * ends, its methods in parentheses; four characters of indentation per level. (The
 * `commonPrefix: false` rendering is not used: it drops fragments above wildcard nodes.)
 * Every parsed pattern is checked against app.hasRoute below, so a misparse cannot hide a route.
 */
function parseRouteTree(text: string): RouteEntry[] {
  const entries: RouteEntry[] = [];
  const stack: string[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const m = /^((?:│ {3}| {4})*)(?:├── |└── )(.+?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!m) throw new Error(`unexpected printRoutes line: ${JSON.stringify(line)}`);
    const depth = m[1]!.length / 4;
    const path = (depth === 0 ? '' : stack[depth - 1]!) + m[2]!;
    stack.length = depth;
    stack[depth] = path;
    for (const method of m[3]?.split(',').map((s) => s.trim()) ?? []) entries.push({ method, path });
  }
  return entries;
}

/** A concrete URL for a route pattern. */
function concrete(path: string): string {
  return path
    .replace(/:batch_id/g, randomUUID())
    .replace(/:(\w+)/g, (_m, name: string) => `x-${name}`)
    .replace(/\*$/, 'x.js');
}

const inject = (method: string, url: string, headers: Record<string, string> = {}) =>
  ctx.app.inject({
    method: method as 'GET',
    url,
    headers: { ...(['POST', 'PUT', 'PATCH'].includes(method) ? { 'content-type': url.includes('/batches') && method === 'POST' ? 'application/x-ndjson' : 'application/json' } : {}), ...headers },
    ...(['POST', 'PUT', 'PATCH'].includes(method) ? { payload: url.includes('/batches') && method === 'POST' ? '{}\n' : '{}' } : {}),
  });

/** 401 in the envelope (HEAD has no body, so only its status and challenge are checked). */
function expect401(res: LightMyRequestResponse, method: string, what: string, code?: string, challenge?: RegExp): void {
  expect(res.statusCode, `${what}: ${describeResponse(res)}`).toBe(401);
  if (challenge) expect(String(res.headers['www-authenticate']), what).toMatch(challenge);
  if (method === 'HEAD') return;
  const body = res.json() as { detail: unknown; code: unknown; errors: unknown };
  expect(body, what).toEqual({ detail: expect.any(String), code: code ?? expect.stringMatching(/^(not_authenticated|authentication_failed|token_expired)$/), errors: [] });
}

/** Behind HTTP Basic (OPERATOR_USER / OPERATOR_PASSWORD) or the scrape token (METRICS_TOKEN). */
const isMetricsRoute = (path: string) => path === '/metrics';
/** The console (src/console/): its pages and bull-board, behind an operator's session. */
const isConsoleRoute = (path: string) => path === '/admin' || path.startsWith('/admin/');
/** The only console routes that answer without a session: the sign-in form and its two assets. */
const CONSOLE_PUBLIC = new Set(['GET /admin/sign-in', 'HEAD /admin/sign-in', 'POST /admin/sign-in', ...['console.css', 'console.js'].flatMap((f) => [`GET /admin/static/${f}`, `HEAD /admin/static/${f}`])]);

beforeAll(async () => {
  ctx = await createTestContext({ env: { OPERATOR_USER: OPERATOR.user, OPERATOR_PASSWORD: OPERATOR.password, METRICS_TOKEN, LOGIN_MAX_FAILURES: '1000' } });
  await ctx.createSupplier(S);
  table = parseRouteTree(ctx.app.printRoutes());
});
afterAll(async () => ctx?.close());

describe("Fastify's route table", () => {
  it('is read completely: every declared route and every known extra route is in it', () => {
    const keys = new Set(table.map((r) => `${r.method} ${r.path}`));
    for (const r of ctx.built.routes) expect(keys, `${r.method} ${r.url}`).toContain(`${r.method} ${r.url.replace(/\/$/, '')}`);
    for (const extra of ['POST /v1/graphql', 'GET /openapi.json', 'GET /metrics', 'GET /admin/queues', 'GET /admin/queues/api/queues', 'PUT /admin/queues/api/queues/:queueName/obliterate']) {
      expect(keys).toContain(extra);
    }
    // Sanity of the parser: dozens of dashboard routes, and each parsed pattern is one Fastify knows.
    expect(table.length).toBeGreaterThan(60);
    for (const r of table) expect(ctx.app.hasRoute({ method: r.method as 'GET', url: r.path }), `${r.method} ${r.path}`).toBe(true);
  });

  it('has no open route beyond the allow-list: every other route and method refuses an anonymous request with 401', async () => {
    const refusedOrOpen: string[] = [];
    for (const { method, path } of table) {
      const key = `${method} ${path}`;
      if (OPEN_ROUTES.has(key) || CONSOLE_PUBLIC.has(key)) continue;
      const res = await inject(method, concrete(path));
      expect401(res, method, key, 'not_authenticated');
      refusedOrOpen.push(key);
    }
    expect(refusedOrOpen.length).toBe(table.length - table.filter((r) => OPEN_ROUTES.has(`${r.method} ${r.path}`) || CONSOLE_PUBLIC.has(`${r.method} ${r.path}`)).length);
  });

  it('every route is one of: open, a token route, /metrics, or the console', () => {
    const tokenUrls = new Set(ctx.built.routes.filter((r) => r.auth === 'token').map((r) => `${r.method} ${r.url.replace(/\/$/, '')}`));
    const unclassified = table
      .map((r) => `${r.method} ${r.path}`)
      .filter((k) => !OPEN_ROUTES.has(k) && !tokenUrls.has(k) && !tokenUrls.has(k.replace(/^HEAD /, 'GET ')))
      .filter((k) => !isMetricsRoute(k.split(' ')[1]!) && !isConsoleRoute(k.split(' ')[1]!));
    expect(unclassified).toEqual([]);
  });

  it('declares auth for every REST route: token for the data-import and batch routes, none only for the probes', () => {
    for (const r of ctx.built.routes) {
      const expected = r.url.startsWith('/v1/data-import/') || r.url.startsWith('/v2/data-import/') ? 'token' : 'none';
      expect(`${r.method} ${r.url} ${r.auth}`).toBe(`${r.method} ${r.url} ${expected}`);
      if (r.auth === 'none') expect(OPEN_ROUTES.has(`${r.method} ${r.url}`)).toBe(true);
    }
  });

  it('the open routes really are the harmless ones (the probes answer without revealing anything)', async () => {
    for (const url of ['/healthz', '/readyz']) {
      const res = await ctx.app.inject({ method: 'GET', url });
      expect(res.statusCode).toBe(200);
      expect(Object.keys(res.json() as object).sort()).toEqual(url === '/healthz' ? ['status'] : ['postgres', 'redis', 'status']);
    }
  });
});

describe('token routes (every declared route with auth: token)', () => {
  const tokenRoutes = () => ctx.built.routes.filter((r) => r.auth === 'token');
  const url = (path: string) => concrete(path);

  async function obtain(apiKey: string): Promise<{ token: string; refreshToken: string }> {
    const res = await ctx.app.inject({ method: 'POST', url: '/v1/graphql/', payload: { query: OBTAIN_TOKEN, variables: { input: { APIKey: apiKey } } } });
    return (res.json() as { data: { obtainKrakenToken: { token: string; refreshToken: string } } }).data.obtainKrakenToken;
  }

  it('answer a genuine token with something other than 401 (the control for the refusals below)', async () => {
    const auth = await ctx.authHeaders();
    for (const r of tokenRoutes()) {
      const res = await inject(r.method, url(r.url), auth);
      expect(res.statusCode, `${r.method} ${r.url}: ${describeResponse(res)}`).not.toBe(401);
      expect(res.statusCode, `${r.method} ${r.url}: ${describeResponse(res)}`).toBeLessThan(500);
    }
  });

  it('refuse no header (not_authenticated), with the Token challenge, with and without the trailing slash', async () => {
    for (const r of tokenRoutes()) {
      for (const u of [url(r.url), url(r.url).replace(/\/$/, '')]) expect401(await inject(r.method, u), r.method, `${r.method} ${u}`, 'not_authenticated', /^Token$/);
    }
  });

  it('refuse garbage, wrong schemes, forged and foreign credentials (authentication_failed)', async () => {
    const key = await createApiKey(ctx.deps.db, `routes-${randomUUID()}`);
    const t = await obtain(key.key);
    const nowS = Math.floor(ctx.clock.now().getTime() / 1000);
    const claims = { use: 'access', sub: key.id, iss: 'data-import-service', iat: nowS, exp: nowS + 3600, jti: randomUUID() };
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const sign = (c: object, secret: string, alg: 'HS256' | 'HS384' | 'HS512') => new SignJWT({ ...c }).setProtectedHeader({ alg, typ: 'JWT' }).sign(new TextEncoder().encode(secret));
    // Control: the same claims signed as the service signs them are accepted.
    expect((await inject('GET', `/v1/data-import/pending-account-import-processes/${S}/`, { authorization: `Token ${await sign(claims, TEST_TOKEN_SECRET, 'HS256')}` })).statusCode).toBe(200);

    const headers = [
      'Token garbage',
      'Token not.a.jwt',
      `Bearer ${t.token}`,
      `Token ${t.refreshToken}`, // a refresh token is not an access token
      `Token ${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`,
      `Token ${await sign(claims, TEST_TOKEN_SECRET, 'HS512')}`,
      `Token ${await sign(claims, TEST_TOKEN_SECRET, 'HS384')}`,
      `Token ${await sign(claims, `another-${TEST_TOKEN_SECRET}`, 'HS256')}`,
      `Token ${await sign({ ...claims, use: 'refresh' }, TEST_TOKEN_SECRET, 'HS256')}`,
      `Token ${t.token.slice(0, -2)}`,
      basicAuth(OPERATOR.user, OPERATOR.password).authorization, // operator credentials open nothing here
    ];
    for (const r of tokenRoutes()) {
      for (const authorization of headers) expect401(await inject(r.method, url(r.url), { authorization }), r.method, `${r.method} ${r.url} with ${authorization.slice(0, 40)}`);
    }
  });

  it('refuse an expired token (token_expired) the second its 60 minutes are over', async () => {
    const t = await obtain((await createApiKey(ctx.deps.db, `routes-${randomUUID()}`)).key);
    const start = ctx.clock.now();
    try {
      ctx.clock.advance(HOUR_MS - 1000);
      expect((await inject('GET', `/v1/data-import/pending-account-import-processes/${S}/`, { authorization: `Token ${t.token}` })).statusCode).toBe(200);
      ctx.clock.advance(1000);
      for (const r of tokenRoutes()) expect401(await inject(r.method, url(r.url), { authorization: `Token ${t.token}` }), r.method, `${r.method} ${r.url}`, 'token_expired', /^Token$/);
    } finally {
      ctx.clock.set(start);
    }
  });

  it("refuse a revoked key's token at once (authentication_failed)", async () => {
    const key = await createApiKey(ctx.deps.db, `routes-${randomUUID()}`);
    const t = await obtain(key.key);
    expect((await inject('GET', `/v1/data-import/pending-account-import-processes/${S}/`, { authorization: `Token ${t.token}` })).statusCode).toBe(200);
    await revokeApiKey(ctx.deps.db, key.name, ctx.clock.now());
    for (const r of tokenRoutes()) expect401(await inject(r.method, url(r.url), { authorization: `Token ${t.token}` }), r.method, `${r.method} ${r.url}`, 'authentication_failed');
  });
});

describe('/metrics (HTTP Basic or the scrape token)', () => {
  const BASIC_CHALLENGE = /^Basic realm="operators"/;

  it('is the only route outside the console and the API behind operator credentials', () => {
    expect(table.filter((r) => isMetricsRoute(r.path)).map((r) => `${r.method} ${r.path}`).sort()).toEqual(['GET /metrics', 'HEAD /metrics']);
  });

  it('refuses no credentials, a wrong user, a wrong password, a data-import token and a console session, with the Basic challenge and the security headers', async () => {
    const token = await ctx.authHeaders();
    const session = await operatorSession(ctx.app, ctx.deps.db, 'operator');
    const cases: Array<[string, Record<string, string>, string]> = [
      ['no credentials', {}, 'not_authenticated'],
      ['a wrong user', basicAuth('root', OPERATOR.password), 'authentication_failed'],
      ['a wrong password', basicAuth(OPERATOR.user, `${OPERATOR.password}!`), 'authentication_failed'],
      ['a password prefix', basicAuth(OPERATOR.user, OPERATOR.password.slice(0, -1)), 'authentication_failed'],
      ['a data-import token', token, 'not_authenticated'],
      // An operator account is for people, in the console: it opens nothing here.
      ['a console session', { cookie: session.cookie }, 'not_authenticated'],
      ['a console operator as Basic credentials', basicAuth(session.name, session.password), 'authentication_failed'],
    ];
    for (const { method, path } of table.filter((r) => isMetricsRoute(r.path))) {
      for (const [label, headers, code] of cases) {
        const res = await inject(method, concrete(path), headers);
        expect401(res, method, `${method} ${path} with ${label}`, code, BASIC_CHALLENGE);
        expect(res.headers['x-content-type-options']).toBe('nosniff');
        expect(res.headers['cache-control']).toBe('no-store');
      }
    }
  });

  it('answers the right credentials, with no-store', async () => {
    const metrics = await ctx.app.inject({ method: 'GET', url: '/metrics', headers: basicAuth(OPERATOR.user, OPERATOR.password) });
    expect(metrics.statusCode, describeResponse(metrics)).toBe(200);
    expect(metrics.body).toContain('# HELP');
    expect(metrics.headers['cache-control']).toBe('no-store');
  });

  it('no path trick reaches it anonymously', async () => {
    for (const u of ['/metrics/', '/metrics?format=json', '/METRICS', '/metrics%2f', '//metrics', '/v1/../metrics', '/admin/queues/%2e%2e/metrics', '/admin/../metrics', '/%6detrics']) {
      const res = await ctx.app.inject({ method: 'GET', url: u });
      expect([400, 401, 404], `GET ${u}: ${describeResponse(res)}`).toContain(res.statusCode);
      expect(res.body, u).not.toContain('# HELP');
    }
  });
});

describe('console routes: everything under /admin/, bull-board included (operator sessions)', () => {
  const consoleRoutes = () => table.filter((r) => isConsoleRoute(r.path));
  const guarded = () => consoleRoutes().filter((r) => !CONSOLE_PUBLIC.has(`${r.method} ${r.path}`));

  it('are all in the table: the console pages, sign-in and its assets, the dashboard page, its deep pages, its API, its static files', () => {
    const keys = new Set(consoleRoutes().map((r) => `${r.method} ${r.path}`));
    for (const k of [
      'GET /admin',
      'GET /admin/batches/:id',
      'POST /admin/batches/:id/retry',
      'POST /admin/sign-out',
      'GET /admin/queues',
      'GET /admin/queues/queue/:queueName',
      'GET /admin/queues/api/queues',
      'PUT /admin/queues/api/queues/:queueName/obliterate',
      'GET /admin/queues/static/*',
      ...CONSOLE_PUBLIC,
    ]) {
      expect(keys).toContain(k);
    }
    // The public ones are exactly the sign-in form and its two assets.
    expect(consoleRoutes().filter((r) => CONSOLE_PUBLIC.has(`${r.method} ${r.path}`))).toHaveLength(CONSOLE_PUBLIC.size);
  });

  it('only the sign-in form and its assets answer without a session, and they reveal nothing', async () => {
    for (const url of ['/admin/sign-in', '/admin/static/console.css', '/admin/static/console.js']) {
      const res = await ctx.app.inject({ method: 'GET', url });
      expect(res.statusCode, `${url}: ${describeResponse(res)}`).toBe(200);
      expect(res.body, url).not.toMatch(/<div id="root">|"queues"|ROUTES_CO/);
    }
    const refused = await ctx.app.inject({ method: 'POST', url: '/admin/sign-in', payload: new URLSearchParams({ name: 'nobody', password: 'not-a-password-at-all' }).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(refused.statusCode, describeResponse(refused)).toBe(401);
    expect(refused.headers['set-cookie']).toBeUndefined();
  });

  it('every other one refuses no session, HTTP Basic (even the right /metrics credentials), a data-import token, the scrape token and forged cookies: 401 not_authenticated, without a Basic challenge', async () => {
    const token = await ctx.authHeaders();
    const session = await operatorSession(ctx.app, ctx.deps.db, 'operator');
    // A signed-out session's cookie (the Redis entry is gone) and tampered ones (the signature no longer matches).
    const gone = await operatorSession(ctx.app, ctx.deps.db, 'operator');
    expect((await gone.post('/admin/sign-out', {})).statusCode).toBe(303);
    const [cookieName, cookieValue] = session.cookie.split('=') as [string, string];
    const [sid, signature] = decodeURIComponent(cookieValue).split('.') as [string, string];
    const cases: Array<[string, Record<string, string>]> = [
      ['no session', {}],
      ['the /metrics Basic credentials', basicAuth(OPERATOR.user, OPERATOR.password)],
      ["an operator's name and password as Basic", basicAuth(session.name, session.password)],
      ['a data-import token', token],
      ['the scrape token', { authorization: `Bearer ${METRICS_TOKEN}` }],
      ['a signed-out session', { cookie: gone.cookie }],
      ['an unsigned session id', { cookie: `${cookieName}=${sid}` }],
      ['a session id with a forged signature', { cookie: `${cookieName}=${encodeURIComponent(`${sid}.${'A'.repeat(signature.length)}`)}` }],
      ['another session id with the signature', { cookie: `${cookieName}=${encodeURIComponent(`${sid.slice(0, -1)}${sid.endsWith('A') ? 'B' : 'A'}.${signature}`)}` }],
      ['garbage', { cookie: `${cookieName}=garbage` }],
      ['the cookie under another name', { cookie: `x_${cookieName}=${cookieValue}` }],
    ];
    for (const { method, path } of guarded()) {
      for (const [label, headers] of cases) {
        const res = await inject(method, concrete(path), headers);
        expect401(res, method, `${method} ${path} with ${label}`, 'not_authenticated');
        // No Basic challenge: a browser must not offer a password prompt that opens nothing.
        expect(res.headers['www-authenticate'], `${method} ${path}`).toBeUndefined();
        expect(res.headers['x-content-type-options']).toBe('nosniff');
        expect(res.headers['cache-control']).toBe('no-store');
        // No session is handed out: at most the stale cookie is cleared.
        const setCookie = res.headers['set-cookie'];
        if (setCookie !== undefined) expect(String(setCookie), `${method} ${path} with ${label}`).toMatch(/^di_console=; Max-Age=0;/);
      }
    }
  });

  it('a browser without a session is sent to the sign-in form (303, next= the page) on every GET; other methods still get 401', async () => {
    for (const { method, path } of guarded()) {
      const url = concrete(path);
      const res = await inject(method, url, { accept: 'text/html,application/xhtml+xml' });
      if (method === 'GET') {
        expect(res.statusCode, `${method} ${path}: ${describeResponse(res)}`).toBe(303);
        expect(res.headers.location).toBe(`/admin/sign-in?next=${encodeURIComponent(url)}`);
        expect(res.body).not.toMatch(/<div id="root">|"queues"/);
      } else {
        expect401(res, method, `${method} ${path}`, 'not_authenticated');
      }
    }
  });

  it('answer a signed-in operator with something other than 401 (the control for the refusals above), and a viewer too', async () => {
    for (const role of ['operator', 'viewer'] as const) {
      const session = await operatorSession(ctx.app, ctx.deps.db, role);
      for (const { method, path } of guarded()) {
        const res = await inject(method, concrete(path), { cookie: session.cookie });
        expect(res.statusCode, `${role} ${method} ${path}: ${describeResponse(res)}`).not.toBe(401);
        expect(res.statusCode, `${role} ${method} ${path}: ${describeResponse(res)}`).toBeLessThan(500);
      }
    }
  });

  it('a viewer may read but every other method is refused 403 permission_denied (bull-board API included)', async () => {
    const viewer = await operatorSession(ctx.app, ctx.deps.db, 'viewer');
    const acting = guarded().filter((r) => !['GET', 'HEAD'].includes(r.method) && r.path !== '/admin/sign-out');
    expect(acting.some((r) => r.path.startsWith('/admin/queues/'))).toBe(true);
    for (const { method, path } of acting) {
      const res = await inject(method, concrete(path), { cookie: viewer.cookie });
      expect(res.statusCode, `${method} ${path}: ${describeResponse(res)}`).toBe(403);
      expect(res.json()).toEqual({ detail: expect.any(String), code: 'permission_denied', errors: [] });
    }
    for (const url of ['/admin/', '/admin/queues', '/admin/queues/api/queues', '/admin/queues/queue/validate']) {
      expect((await viewer.get(url)).statusCode, url).toBe(200);
    }
  });

  it('every non-GET request from another origin is refused 403 cross_origin_refused, sign-in included, even for an operator', async () => {
    const session = await operatorSession(ctx.app, ctx.deps.db, 'operator');
    const nonGet = consoleRoutes().filter((r) => !['GET', 'HEAD'].includes(r.method));
    expect(nonGet.some((r) => r.path === '/admin/sign-in')).toBe(true);
    const foreigners: Array<Record<string, string>> = [{ origin: 'https://evil.example' }, { origin: 'null' }, { origin: 'http://localhost:81' }, { 'sec-fetch-site': 'cross-site' }, { 'sec-fetch-site': 'same-site' }];
    for (const foreign of foreigners) {
      for (const { method, path } of nonGet) {
        const res = await inject(method, concrete(path), { cookie: session.cookie, ...foreign });
        expect(res.statusCode, `${method} ${path} ${JSON.stringify(foreign)}: ${describeResponse(res)}`).toBe(403);
        expect(res.json()).toEqual({ detail: expect.any(String), code: 'cross_origin_refused', errors: [] });
      }
    }
  });

  it('no path trick reaches them without a session (encoded, doubled slashes, case, dot segments, ;, through the public routes)', async () => {
    for (const u of [
      '/admin',
      '/admin/',
      '/admin/queues/',
      '/admin/queues//api/queues',
      '/admin//queues/api/queues',
      '/admin/queues/api/queues/',
      '/admin/queues/%2e%2e/metrics',
      '/admin/queues/static/../api/queues',
      '/admin/queues/static/%2e%2e/api/queues',
      '/%61dmin/queues',
      '/%61dmin/queues/api/queues',
      '/ADMIN/QUEUES',
      '/Admin/queues/api/queues',
      '/admin/queues;/api/queues',
      '/admin/queues/api/queues;x',
      '/admin/sign-in/../queues/api/queues',
      '/admin/sign-in/%2e%2e/queues/api/queues',
      '/admin/sign-in%2f..%2fqueues%2fapi%2fqueues',
      '/admin/sign-in;/../queues/api/queues',
      '/admin/static/../queues/api/queues',
      '/admin/static/console.css/../../queues/api/queues',
      '/admin/static/%2e%2e/%2e%2e/admin/queues/api/queues',
      '/admin/sign-in?next=/admin/queues/api/queues',
    ]) {
      const res = await ctx.app.inject({ method: 'GET', url: u });
      expect([200, 400, 401, 404], `GET ${u}: ${describeResponse(res)}`).toContain(res.statusCode);
      // 200 only for the sign-in form itself.
      if (res.statusCode === 200) expect(u.startsWith('/admin/sign-in?'), u).toBe(true);
      expect(res.body, u).not.toMatch(/# HELP|<div id="root">|"queues"|ROUTES_CO/);
    }
  });

  it('work with a session: the dashboard page with its security headers, a deep page, the API; the session cookie is HttpOnly, SameSite=Strict, Path=/admin', async () => {
    const signIn = await ctx.app.inject({
      method: 'POST',
      url: '/admin/sign-in',
      payload: new URLSearchParams({ name: (await operatorSession(ctx.app, ctx.deps.db, 'viewer', 'routes-cookie')).name, password: 'password-of-routes-cookie-0123', next: '/admin/queues' }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(signIn.statusCode, describeResponse(signIn)).toBe(303);
    expect(signIn.headers.location).toBe('/admin/queues');
    const setCookie = String(signIn.headers['set-cookie']);
    expect(setCookie).toMatch(/^di_console=[^;]+;/);
    expect(setCookie).toMatch(/; HttpOnly/i);
    expect(setCookie).toMatch(/; SameSite=Strict/i);
    expect(setCookie).toMatch(/; Path=\/admin(;|$)/);
    const session = sessionOf(ctx.app, cookieOf(signIn));

    const page = await session.get('/admin/queues');
    expect(page.statusCode, describeResponse(page)).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.body).toContain('<div id="root">');
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    expect(page.headers['cache-control']).toBe('no-store');
    const csp = String(page.headers['content-security-policy']);
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("object-src 'none'");
    expect(csp).not.toMatch(/script-src[^;]*(unsafe|\*)/);

    const deep = await session.get('/admin/queues/queue/validate');
    expect(deep.statusCode).toBe(200);
    expect(deep.body).toContain('<div id="root">');

    const api = await session.get('/admin/queues/api/queues', { accept: 'application/json' });
    expect(api.statusCode).toBe(200);
    expect(api.headers['cache-control']).toBe('no-store');
    expect((api.json() as { queues: Array<{ name: string }> }).queues.map((q) => q.name).sort()).toEqual([...QUEUE_NAMES].sort());
  });

  it('a refused destructive dashboard call changes nothing (the queue and its job survive obliterate without a session, with Basic, by a viewer, from another origin)', async () => {
    const validate = ctx.deps.queues.validate as Queue;
    await validate.add('validate', { batchId: 'routes-obliterate', line: 1, round: 0 });
    const viewer = await operatorSession(ctx.app, ctx.deps.db, 'viewer');
    const operator = await operatorSession(ctx.app, ctx.deps.db, 'operator');
    const waiting = async () => {
      const api = await operator.get('/admin/queues/api/queues', { accept: 'application/json' });
      return (api.json() as { queues: Array<{ name: string; counts: { waiting: number } }> }).queues.find((q) => q.name === 'validate')?.counts.waiting;
    };
    try {
      expect(await waiting()).toBe(1);
      const url = '/admin/queues/api/queues/validate/obliterate';
      const attempts: Array<[number, Record<string, string>]> = [
        [401, {}],
        [401, basicAuth(OPERATOR.user, OPERATOR.password)],
        [403, { cookie: viewer.cookie }],
        [403, { cookie: operator.cookie, origin: 'https://evil.example' }],
      ];
      for (const [status, headers] of attempts) {
        const res = await ctx.app.inject({ method: 'PUT', url, headers });
        expect(res.statusCode, `${JSON.stringify(headers)}: ${describeResponse(res)}`).toBe(status);
      }
      expect(await waiting()).toBe(1);
    } finally {
      await validate.obliterate({ force: true });
    }
  });
});
