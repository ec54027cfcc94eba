import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, revokeApiKey } from '../../src/auth/api-keys.js';
import { createTestContext, TEST_TOKEN_SECRET, type TestContext } from '../helpers/context.js';
import { basicAuth, describeResponse, OBTAIN_TOKEN } from './helpers.js';

/**
 * Issue item 8, access: every data-import, batch, dashboard and metrics route refuses without valid
 * credentials. The routes are not listed by hand: they are read from Fastify's own route table
 * (printRoutes), so a route added later, by any means, is covered as soon as it exists. Only the
 * allow-list below may answer an anonymous request.
 */

/** The rendered reference of the API description (/docs) and its static assets: no data. */
const DOCS_ROUTES = ['/docs', '/docs/init.js', '/docs/swagger-ui.css', '/docs/swagger-ui-bundle.js', '/docs/favicon-32x32.png'].flatMap((p) => [`GET ${p}`, `HEAD ${p}`]);

/** Routes that are open on purpose: probes, the API description and its reference page, and the sign-in (ObtainToken) itself. */
const OPEN_ROUTES = new Set(['GET /healthz', 'HEAD /healthz', 'GET /readyz', 'HEAD /readyz', 'GET /openapi.json', 'HEAD /openapi.json', ...DOCS_ROUTES, 'GET /v1/graphql', 'HEAD /v1/graphql', 'POST /v1/graphql']);

const OPERATOR = { user: 'ops-user', password: 'correct horse battery staple' };
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

const isOperatorRoute = (path: string) => path === '/metrics' || path === '/admin/queues' || path.startsWith('/admin/queues/');

beforeAll(async () => {
  ctx = await createTestContext({ env: { OPERATOR_USER: OPERATOR.user, OPERATOR_PASSWORD: OPERATOR.password, LOGIN_MAX_FAILURES: '1000' } });
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
      if (OPEN_ROUTES.has(key)) continue;
      const res = await inject(method, concrete(path));
      expect401(res, method, key, 'not_authenticated');
      refusedOrOpen.push(key);
    }
    expect(refusedOrOpen.length).toBe(table.length - table.filter((r) => OPEN_ROUTES.has(`${r.method} ${r.path}`)).length);
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

describe('operator routes: the dashboard and /metrics (HTTP Basic)', () => {
  const operatorRoutes = () => table.filter((r) => isOperatorRoute(r.path));
  const BASIC_CHALLENGE = /^Basic realm="operators"/;

  it('are all in the table: the dashboard page, its deep pages, its API, its static files, /metrics', () => {
    const paths = new Set(operatorRoutes().map((r) => r.path));
    for (const p of ['/metrics', '/admin/queues', '/admin/queues/queue/:queueName', '/admin/queues/api/queues', '/admin/queues/static/*']) expect(paths).toContain(p);
  });

  it('every one refuses no credentials, a wrong user, a wrong password and a data-import token, with the Basic challenge and the security headers', async () => {
    const token = await ctx.authHeaders();
    const cases: Array<[string, Record<string, string>, string]> = [
      ['no credentials', {}, 'not_authenticated'],
      ['a wrong user', basicAuth('root', OPERATOR.password), 'authentication_failed'],
      ['a wrong password', basicAuth(OPERATOR.user, `${OPERATOR.password}!`), 'authentication_failed'],
      ['a password prefix', basicAuth(OPERATOR.user, OPERATOR.password.slice(0, -1)), 'authentication_failed'],
      ['a data-import token', token, 'not_authenticated'],
    ];
    for (const { method, path } of operatorRoutes()) {
      for (const [label, headers, code] of cases) {
        const res = await inject(method, concrete(path), headers);
        expect401(res, method, `${method} ${path} with ${label}`, code, BASIC_CHALLENGE);
        expect(res.headers['x-content-type-options']).toBe('nosniff');
        expect(res.headers['cache-control']).toBe('no-store');
      }
    }
  });

  it('no path trick reaches them anonymously (encoded, doubled slashes, case, dot segments)', async () => {
    for (const u of [
      '/admin/queues/',
      '/admin/queues//api/queues',
      '/admin/queues/api/queues/',
      '/admin/queues/%2e%2e/metrics',
      '/admin/queues/static/../api/queues',
      '/%61dmin/queues',
      '/ADMIN/QUEUES',
      '/metrics/',
      '/metrics?format=json',
      '/METRICS',
      '/metrics%2f',
      '//metrics',
      '/v1/../metrics',
      '/admin/queues;/api/queues',
    ]) {
      const res = await ctx.app.inject({ method: 'GET', url: u });
      expect([400, 401, 404], `GET ${u}: ${describeResponse(res)}`).toContain(res.statusCode);
      expect(res.body, u).not.toMatch(/# HELP|<div id="root">|"queues"/);
    }
  });

  it('work with the right credentials: the page with its security headers, a deep page, the API and /metrics', async () => {
    const auth = basicAuth(OPERATOR.user, OPERATOR.password);
    const page = await ctx.app.inject({ method: 'GET', url: '/admin/queues', headers: auth });
    expect(page.statusCode, describeResponse(page)).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    const csp = String(page.headers['content-security-policy']);
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("object-src 'none'");
    expect(csp).not.toMatch(/script-src[^;]*(unsafe|\*)/);

    const deep = await ctx.app.inject({ method: 'GET', url: '/admin/queues/queue/validate', headers: auth });
    expect(deep.statusCode).toBe(200);
    expect(deep.body).toContain('<div id="root">');

    const api = await ctx.app.inject({ method: 'GET', url: '/admin/queues/api/queues', headers: auth });
    expect(api.statusCode).toBe(200);
    expect(api.headers['cache-control']).toBe('no-store');
    expect((api.json() as { queues: unknown[] }).queues.length).toBeGreaterThan(0);

    const metrics = await ctx.app.inject({ method: 'GET', url: '/metrics', headers: auth });
    expect(metrics.statusCode).toBe(200);
    expect(metrics.body).toContain('# HELP');
    expect(metrics.headers['cache-control']).toBe('no-store');
  });

  it('a refused destructive dashboard call changes nothing (the queue survives an anonymous obliterate)', async () => {
    const auth = basicAuth(OPERATOR.user, OPERATOR.password);
    const res = await ctx.app.inject({ method: 'PUT', url: '/admin/queues/api/queues/validate/obliterate' });
    expect(res.statusCode).toBe(401);
    const api = await ctx.app.inject({ method: 'GET', url: '/admin/queues/api/queues', headers: auth });
    expect((api.json() as { queues: Array<{ name: string }> }).queues.map((q) => q.name)).toContain('validate');
  });
});
