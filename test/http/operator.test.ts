import type { Queue } from 'bullmq';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUEUE_NAMES } from '../../src/queue/contract.js';
import { registerOperatorRoutes, type OperatorCredentials } from '../../src/http/operator.js';
import { createMetrics, type Metrics } from '../../src/metrics.js';
import { loadConfig } from '../../src/config.js';
import { buildApp } from '../../src/http/app.js';
import { operatorSession, type ConsoleSession } from '../helpers/console.js';
import { createTestContext, type TestContext } from '../helpers/context.js';

const CREDENTIALS: OperatorCredentials = { user: 'ops', password: 'correct horse battery staple' };

const basic = (user: string, password: string) => ({
  authorization: `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`,
});
const AUTHORIZED = basic(CREDENTIALS.user, CREDENTIALS.password);

/**
 * /metrics on an app of its own, with only registerOperatorRoutes (as the worker's metrics port uses it).
 * The console (bull-board included) is part of the full app: those cases use ctx.app.
 */
async function buildOperatorTestApp(
  ctx: TestContext,
  // null, not undefined: undefined would select the default.
  credentials: OperatorCredentials | null = CREDENTIALS,
): Promise<{ app: FastifyInstance; metrics: Metrics }> {
  const app = Fastify({ logger: false, routerOptions: { ignoreTrailingSlash: true } });
  const metrics = createMetrics(ctx.deps);
  metrics.installHttpHook(app);
  app.get('/open', async () => ({ status: 'ok' }));
  await registerOperatorRoutes(app, ctx.deps, metrics, credentials ?? undefined);
  await app.ready();
  return { app, metrics };
}

let ctx: TestContext;
let app: FastifyInstance;

beforeAll(async () => {
  // Many deliberate wrong passwords from one address; the limiters have their own test (test/security/operator-limit.test.ts).
  // The full app gets the same Basic credentials, so that they can be shown to open /metrics there and nothing under /admin.
  ctx = await createTestContext({ env: { LOGIN_MAX_FAILURES: '1000', OPERATOR_USER: CREDENTIALS.user, OPERATOR_PASSWORD: CREDENTIALS.password } });
  ({ app } = await buildOperatorTestApp(ctx));
});

afterAll(async () => {
  await app?.close();
  await ctx?.close();
});

/** What registerOperatorRoutes guards with HTTP Basic (or the scrape token): /metrics only; people use the console. */
const GUARDED = [
  ['GET', '/metrics'],
  ['HEAD', '/metrics'],
] as const;

describe('operator routes refuse without valid credentials', () => {
  const cases = [
    ['no Authorization header', {}, 'not_authenticated'],
    ['a non-Basic scheme', { authorization: 'Bearer abc' }, 'not_authenticated'],
    ['a malformed Basic header', { authorization: 'Basic !!!' }, 'not_authenticated'],
    ['a wrong user', basic('root', CREDENTIALS.password), 'authentication_failed'],
    ['a wrong password', basic(CREDENTIALS.user, 'correct horse battery stapler'), 'authentication_failed'],
    ['an empty password', basic(CREDENTIALS.user, ''), 'authentication_failed'],
  ] as const;

  for (const [method, url] of GUARDED) {
    for (const [label, headers, code] of cases) {
      it(`${method} ${url} with ${label} → 401 ${code}`, async () => {
        const res = await app.inject({ method, url, headers });
        expect(res.statusCode).toBe(401);
        if (method !== 'HEAD') expect(res.json()).toEqual({ detail: expect.any(String), code, errors: [] });
        expect(res.headers['www-authenticate']).toMatch(/^Basic realm="operators"/);
        // Refusals carry the security headers as well.
        expect(res.headers['x-content-type-options']).toBe('nosniff');
        expect(res.headers['cache-control']).toBe('no-store');
      });
    }
  }

  it('leaves routes outside the operator surface alone', async () => {
    const res = await app.inject({ method: 'GET', url: '/open' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['www-authenticate']).toBeUndefined();
    expect(res.headers['content-security-policy']).toBeUndefined();
  });

  it('mounts nothing under /admin any more: the bare app has no dashboard for Basic credentials to open', async () => {
    for (const url of ['/admin/queues', '/admin/queues/api/queues']) {
      const res = await app.inject({ method: 'GET', url, headers: AUTHORIZED });
      expect(res.statusCode, url).toBe(404);
      expect(res.body).not.toMatch(/<div id="root">|"queues"/);
    }
  });
});

describe('the dashboard (bull-board at /admin/queues), in the console: an operator session, never HTTP Basic', () => {
  let operator: ConsoleSession;
  let viewer: ConsoleSession;
  /** A request as bull-board's own scripts send it: the session cookie, JSON. */
  const api = (session: ConsoleSession, method: 'GET' | 'PUT' | 'POST', url: string, headers: Record<string, string> = {}) =>
    ctx.app.inject({ method, url, headers: { cookie: session.cookie, accept: 'application/json', ...headers } });

  beforeAll(async () => {
    operator = await operatorSession(ctx.app, ctx.deps.db, 'operator');
    viewer = await operatorSession(ctx.app, ctx.deps.db, 'viewer');
  });

  const PAGES = ['/admin/queues', '/admin/queues/', '/admin/queues/queue/validate', '/admin/queues/api/queues', '/admin/queues/static/images/logo.svg', '/admin/queues/no/such/page'];

  it('without a session: a browser is sent to sign in (303, back to the page afterwards), anything else gets 401 not_authenticated', async () => {
    for (const url of PAGES) {
      const browser = await ctx.app.inject({ method: 'GET', url, headers: { accept: 'text/html,application/xhtml+xml' } });
      expect(browser.statusCode, url).toBe(303);
      expect(browser.headers.location).toBe(`/admin/sign-in?next=${encodeURIComponent(url)}`);
      const script = await ctx.app.inject({ method: 'GET', url, headers: { accept: 'application/json' } });
      expect(script.statusCode, url).toBe(401);
      expect(script.json()).toEqual({ detail: expect.any(String), code: 'not_authenticated', errors: [] });
      expect(script.headers['x-content-type-options']).toBe('nosniff');
      expect(script.headers['cache-control']).toBe('no-store');
    }
    const obliterate = await ctx.app.inject({ method: 'PUT', url: '/admin/queues/api/queues/validate/obliterate', headers: { accept: 'text/html' } });
    expect(obliterate.statusCode).toBe(401);
    expect(obliterate.json()).toMatchObject({ code: 'not_authenticated' });
  });

  it('HTTP Basic credentials open nothing there, not even the ones /metrics takes on this very app', async () => {
    expect((await ctx.app.inject({ method: 'GET', url: '/metrics', headers: AUTHORIZED })).statusCode).toBe(200);
    const asOperator = basic('operator-as-basic', 'password-of-operator-as-basic-0123');
    await operatorSession(ctx.app, ctx.deps.db, 'operator', 'operator-as-basic');
    for (const headers of [AUTHORIZED, asOperator, basic(CREDENTIALS.user, 'wrong'), { authorization: 'Bearer abc' }]) {
      for (const url of PAGES) {
        const res = await ctx.app.inject({ method: 'GET', url, headers: { ...headers, accept: 'application/json' } });
        expect(res.statusCode, `${url} ${headers.authorization}`).toBe(401);
        expect(res.json()).toEqual({ detail: expect.any(String), code: 'not_authenticated', errors: [] });
        // No Basic challenge: a browser must not offer a password prompt for it.
        expect(res.headers['www-authenticate']).toBeUndefined();
      }
      const obliterate = await ctx.app.inject({ method: 'PUT', url: '/admin/queues/api/queues/validate/obliterate', headers });
      expect(obliterate.statusCode).toBe(401);
    }
  });

  it('renders the bull-board page with its security headers for a signed-in operator', async () => {
    const res = await operator.get('/admin/queues');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toContain('<div id="root">');
    expect(res.body).toContain('<base href="/admin/queues/"');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['cache-control']).toBe('no-store');
    const csp = String(res.headers['content-security-policy']);
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/script-src[^;]*unsafe/);
    expect(csp).toContain("frame-ancestors 'none'");
  });

  it('serves a deep dashboard page and its static assets', async () => {
    const page = await operator.get('/admin/queues/queue/validate');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<div id="root">');
    const scripts = [...page.body.matchAll(/<script defer src="([^"]+)"/g)].map((m) => m[1]!);
    expect(scripts.length).toBeGreaterThan(0);
    for (const src of scripts) {
      // Relative to <base href>: same origin, which is all script-src allows.
      expect(src).toMatch(/^static\//);
      const asset = await operator.get(`/admin/queues/${src}`, { accept: '*/*' });
      expect(asset.statusCode).toBe(200);
      expect(asset.headers['content-type']).toMatch(/javascript/);
      // Without the session, the same asset is refused.
      expect((await ctx.app.inject({ method: 'GET', url: `/admin/queues/${src}` })).statusCode).toBe(401);
    }
  });

  it(`lists all ${QUEUE_NAMES.length} queues through its API, webhooks included`, async () => {
    expect(QUEUE_NAMES).toContain('webhooks');
    const res = await api(operator, 'GET', '/admin/queues/api/queues');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['cache-control']).toBe('no-store');
    const names = (res.json() as { queues: Array<{ name: string }> }).queues.map((q) => q.name);
    expect(names.sort()).toEqual([...QUEUE_NAMES].sort());
  });

  it('answers unknown dashboard paths 404 once signed in', async () => {
    const res = await api(operator, 'GET', '/admin/queues/no/such/page');
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ code: 'not_found', errors: [] });
  });

  it('a viewer sees the dashboard but cannot act through its API; an operator can, from this origin only', async () => {
    for (const url of ['/admin/queues', '/admin/queues/queue/validate']) expect((await viewer.get(url)).statusCode, url).toBe(200);
    expect((await api(viewer, 'GET', '/admin/queues/api/queues')).statusCode).toBe(200);
    const isPaused = async () =>
      ((await api(operator, 'GET', '/admin/queues/api/queues')).json() as { queues: Array<{ name: string; isPaused: boolean }> }).queues.find((q) => q.name === 'emails')!.isPaused;
    try {
      for (const [method, url] of [
        ['PUT', '/admin/queues/api/queues/emails/pause'],
        ['PUT', '/admin/queues/api/queues/emails/obliterate'],
        ['PUT', '/admin/queues/api/queues/emails/retry/failed'],
      ] as const) {
        const res = await api(viewer, method, url, { origin: 'http://localhost:80' });
        expect(res.statusCode, `${method} ${url}`).toBe(403);
        expect(res.json()).toEqual({ detail: expect.any(String), code: 'permission_denied', errors: [] });
      }
      expect(await isPaused()).toBe(false);
      // Another origin is refused before the role is even looked at.
      const foreign = await api(operator, 'PUT', '/admin/queues/api/queues/emails/pause', { origin: 'https://evil.example' });
      expect(foreign.statusCode).toBe(403);
      expect(foreign.json()).toEqual({ detail: expect.any(String), code: 'cross_origin_refused', errors: [] });
      expect(await isPaused()).toBe(false);
      // The control: the operator, from this origin, pauses the queue.
      const paused = await api(operator, 'PUT', '/admin/queues/api/queues/emails/pause', { origin: 'http://localhost:80' });
      expect(paused.statusCode, paused.body).toBe(200);
      expect(await isPaused()).toBe(true);
    } finally {
      await (ctx.deps.queues.emails as Queue).resume();
    }
  });
});

describe('/metrics, with credentials', () => {
  const scrape = async (target: FastifyInstance = app) => {
    const res = await target.inject({ method: 'GET', url: '/metrics', headers: AUTHORIZED });
    expect(res.statusCode).toBe(200);
    return res;
  };

  it('is Prometheus text with queue counts, permits and process metrics', async () => {
    const validate = ctx.deps.queues.validate as Queue;
    await validate.addBulk([1, 2, 3].map((line) => ({ name: 'validate', data: { batchId: 'b-metrics', line, round: 0 } })));
    try {
      const res = await scrape();
      expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.body).toContain('# TYPE di_queue_jobs gauge');
      expect(res.body).toContain('di_queue_jobs{queue="validate",state="waiting"} 3');
      for (const queue of QUEUE_NAMES) {
        for (const state of ['active', 'delayed', 'completed', 'failed']) {
          expect(res.body).toContain(`di_queue_jobs{queue="${queue}",state="${state}"} 0`);
        }
      }
      expect(res.body).toContain('di_queue_jobs{queue="stage",state="waiting"} 0');
      expect(res.body).toMatch(/^di_process_permits_in_use 0$/m);
      expect(res.body).toMatch(/^di_process_permits_limit 0$/m);
      expect(res.body).toContain('process_cpu_user_seconds_total');
      expect(res.body).toContain('nodejs_heap_size_used_bytes');
    } finally {
      await validate.obliterate({ force: true });
    }
    // Counts are read at every scrape, not remembered.
    expect((await scrape()).body).toContain('di_queue_jobs{queue="validate",state="waiting"} 0');
  });

  it('reports job durations the workers observe', async () => {
    const { app: own, metrics } = await buildOperatorTestApp(ctx);
    try {
      metrics.observeJob('process', 'completed', 0.2);
      metrics.observeJob('process', 'failed', 3);
      const body = (await scrape(own)).body;
      expect(body).toContain('di_job_duration_seconds_count{queue="process",outcome="completed"} 1');
      expect(body).toContain('di_job_duration_seconds_bucket{le="0.25",queue="process",outcome="completed"} 1');
      expect(body).toContain('di_job_duration_seconds_sum{queue="process",outcome="failed"} 3');
    } finally {
      await own.close();
    }
  });

  it('times HTTP requests by route pattern, never by raw URL', async () => {
    // The full app (the dashboard lives in the console), with a registry of its own so the counts start at zero.
    const own = await buildApp(ctx.deps);
    await own.app.ready();
    try {
      const session = await operatorSession(own.app, ctx.deps.db, 'viewer');
      expect((await own.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
      expect((await own.app.inject({ method: 'GET', url: '/admin/queues/api/queues/validate/some-job', headers: { cookie: session.cookie } })).statusCode).toBe(404);
      expect((await own.app.inject({ method: 'GET', url: '/nowhere/4711' })).statusCode).toBe(404);
      expect((await own.app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(401);
      const body = (await scrape(own.app)).body;
      expect(body).toContain('# TYPE di_http_request_duration_seconds histogram');
      expect(body).toContain('di_http_request_duration_seconds_count{method="GET",route="/healthz",status_code="200"} 1');
      expect(body).toContain('di_http_request_duration_seconds_count{method="GET",route="/admin/queues/api/queues/:queueName/:jobId",status_code="404"} 1');
      expect(body).toContain('di_http_request_duration_seconds_count{method="GET",route="unmatched",status_code="404"} 1');
      expect(body).toContain('di_http_request_duration_seconds_count{method="GET",route="/metrics",status_code="401"} 1');
      expect(body).toMatch(/^di_http_request_duration_seconds_bucket\{le="\+Inf",method="GET",route="\/healthz",status_code="200"\} 1$/m);
      // Neither raw URL became a label (a metric's value may happen to hold the digits 4711).
      expect(body.split('\n').filter((line) => /\{[^}]*(4711|some-job)[^}]*\}/.test(line))).toEqual([]);
    } finally {
      await own.app.close();
    }
  });

  it('keeps registries apart, so several apps in one process do not collide', () => {
    const a = createMetrics(ctx.deps);
    const b = createMetrics(ctx.deps);
    a.observeJob('emails', 'completed', 1);
    expect(a.registry).not.toBe(b.registry);
  });
});

describe('without configured credentials', () => {
  let closed: FastifyInstance;
  beforeAll(async () => {
    ({ app: closed } = await buildOperatorTestApp(ctx, null));
  });
  afterAll(async () => {
    await closed?.close();
  });

  it('refuses every scrape, whatever is sent', async () => {
    for (const [method, url] of GUARDED) {
      for (const [headers, code] of [
        [{}, 'not_authenticated'],
        [AUTHORIZED, 'authentication_failed'],
        [basic('', ''), 'authentication_failed'],
        // No METRICS_TOKEN configured here: a bearer is no credential at all.
        [{ authorization: 'Bearer scrape-token-0123456789-abcdefghijklmnop' }, 'not_authenticated'],
      ] as const) {
        const res = await closed.inject({ method, url, headers });
        expect(res.statusCode, `${method} ${url}`).toBe(401);
        if (method !== 'HEAD') expect(res.json()).toMatchObject({ code, errors: [] });
      }
    }
  });
});

describe('/metrics with a scrape token (METRICS_TOKEN)', () => {
  const TOKEN = 'scrape-token-0123456789-abcdefghijklmnop';
  let tokenCtx: TestContext;
  let withOperators: FastifyInstance;
  let tokenOnly: FastifyInstance;

  beforeAll(async () => {
    tokenCtx = await createTestContext({ env: { METRICS_TOKEN: TOKEN, LOGIN_MAX_FAILURES: '1000' } });
    ({ app: withOperators } = await buildOperatorTestApp(tokenCtx));
    ({ app: tokenOnly } = await buildOperatorTestApp(tokenCtx, null));
  });
  afterAll(async () => {
    await withOperators?.close();
    await tokenOnly?.close();
    await tokenCtx?.close();
  });

  it('answers the token as Prometheus sends it, beside the operator credentials', async () => {
    for (const target of [withOperators, tokenOnly]) {
      const res = await target.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
      expect(res.statusCode).toBe(200);
      expect(res.body).toContain('# TYPE di_queue_jobs gauge');
    }
    expect((await withOperators.inject({ method: 'GET', url: '/metrics', headers: AUTHORIZED })).statusCode).toBe(200);
  });

  it('refuses a wrong token, and the token anywhere but /metrics', async () => {
    const wrong = await withOperators.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}x` } });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json()).toMatchObject({ code: 'authentication_failed' });
    // The full app: the scrape token opens neither the console nor the dashboard.
    for (const url of ['/admin/queues/api/queues', '/admin/']) {
      const dashboard = await tokenCtx.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${TOKEN}` } });
      expect(dashboard.statusCode, url).toBe(401);
      expect(dashboard.json()).toMatchObject({ code: 'not_authenticated' });
    }
    expect((await tokenCtx.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } })).statusCode).toBe(200);
  });

  it('the console needs neither: without OPERATOR_USER, an operator session still opens the dashboard', async () => {
    const session = await operatorSession(tokenCtx.app, tokenCtx.deps.db, 'viewer');
    const res = await session.get('/admin/queues/api/queues', { accept: 'application/json' });
    expect(res.statusCode).toBe(200);
    expect((res.json() as { queues: unknown[] }).queues).toHaveLength(QUEUE_NAMES.length);
  });

  it('is refused at start-up when it is too short to be a secret', () => {
    expect(() => loadConfig({ NODE_ENV: 'test', METRICS_TOKEN: 'short' })).toThrow(/METRICS_TOKEN must be at least 32 characters/);
    expect(() => loadConfig({ NODE_ENV: 'test', METRICS_TOKEN: `${'x'.repeat(32)} y` })).toThrow(/METRICS_TOKEN must be printable ASCII without spaces/);
  });
});
