import type { Queue } from 'bullmq';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUEUE_NAMES } from '../../src/queue/contract.js';
import { registerOperatorRoutes, type OperatorCredentials } from '../../src/http/operator.js';
import { createMetrics, type Metrics } from '../../src/metrics.js';
import { loadConfig } from '../../src/config.js';
import { createTestContext, type TestContext } from '../helpers/context.js';

const CREDENTIALS: OperatorCredentials = { user: 'ops', password: 'correct horse battery staple' };

const basic = (user: string, password: string) => ({
  authorization: `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`,
});
const AUTHORIZED = basic(CREDENTIALS.user, CREDENTIALS.password);

/** app.ts is wired by the caller; until then the operator surface is exercised on an app of its own, set up the same way. */
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
  // Many deliberate wrong passwords from one address; the limiter has its own test (test/security/operator-limit.test.ts).
  ctx = await createTestContext({ env: { LOGIN_MAX_FAILURES: '1000' } });
  ({ app } = await buildOperatorTestApp(ctx));
});

afterAll(async () => {
  await app?.close();
  await ctx?.close();
});

const GUARDED = [
  ['GET', '/admin/queues'],
  ['GET', '/admin/queues/'],
  ['GET', '/admin/queues/queue/validate'],
  ['GET', '/admin/queues/api/queues'],
  ['PUT', '/admin/queues/api/queues/validate/obliterate'],
  ['GET', '/admin/queues/static/images/logo.svg'],
  ['GET', '/admin/queues/no/such/page'],
  ['GET', '/metrics'],
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
        expect(res.json()).toEqual({ detail: expect.any(String), code, errors: [] });
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
});

describe('the dashboard, with credentials', () => {
  it('renders the bull-board page with security headers', async () => {
    const res = await app.inject({ method: 'GET', url: '/admin/queues', headers: AUTHORIZED });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toContain('<div id="root">');
    expect(res.body).toContain('<base href="/admin/queues/"');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    const csp = String(res.headers['content-security-policy']);
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/script-src[^;]*unsafe/);
    expect(csp).toContain("frame-ancestors 'none'");
  });

  it('serves a deep dashboard page and its static assets', async () => {
    const page = await app.inject({ method: 'GET', url: '/admin/queues/queue/validate', headers: AUTHORIZED });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<div id="root">');
    const scripts = [...page.body.matchAll(/<script defer src="([^"]+)"/g)].map((m) => m[1]!);
    expect(scripts.length).toBeGreaterThan(0);
    for (const src of scripts) {
      // Relative to <base href>: same origin, which is all script-src allows.
      expect(src).toMatch(/^static\//);
      const asset = await app.inject({ method: 'GET', url: `/admin/queues/${src}`, headers: AUTHORIZED });
      expect(asset.statusCode).toBe(200);
      expect(asset.headers['content-type']).toMatch(/javascript/);
    }
  });

  it('lists all five queues through its API', async () => {
    const res = await app.inject({ method: 'GET', url: '/admin/queues/api/queues', headers: AUTHORIZED });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['cache-control']).toBe('no-store');
    const names = (res.json() as { queues: Array<{ name: string }> }).queues.map((q) => q.name);
    expect(names.sort()).toEqual([...QUEUE_NAMES].sort());
  });

  it('answers unknown dashboard paths 404 once authenticated', async () => {
    const res = await app.inject({ method: 'GET', url: '/admin/queues/no/such/page', headers: AUTHORIZED });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ code: 'not_found', errors: [] });
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
    const { app: own } = await buildOperatorTestApp(ctx);
    try {
      expect((await own.inject({ method: 'GET', url: '/open' })).statusCode).toBe(200);
      expect((await own.inject({ method: 'GET', url: '/admin/queues/api/queues/validate/some-job', headers: AUTHORIZED })).statusCode).toBe(404);
      expect((await own.inject({ method: 'GET', url: '/nowhere/4711' })).statusCode).toBe(404);
      expect((await own.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(401);
      const body = (await scrape(own)).body;
      expect(body).toContain('# TYPE di_http_request_duration_seconds histogram');
      expect(body).toContain('di_http_request_duration_seconds_count{method="GET",route="/open",status_code="200"} 1');
      expect(body).toContain('di_http_request_duration_seconds_count{method="GET",route="/admin/queues/api/queues/:queueName/:jobId",status_code="404"} 1');
      expect(body).toContain('di_http_request_duration_seconds_count{method="GET",route="unmatched",status_code="404"} 1');
      expect(body).toContain('di_http_request_duration_seconds_count{method="GET",route="/metrics",status_code="401"} 1');
      expect(body).toMatch(/^di_http_request_duration_seconds_bucket\{le="\+Inf",method="GET",route="\/open",status_code="200"\} 1$/m);
      expect(body).not.toContain('4711');
    } finally {
      await own.close();
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

  it('refuses everything, whatever is sent', async () => {
    for (const [method, url] of GUARDED) {
      for (const headers of [{}, AUTHORIZED, basic('', '')]) {
        const res = await closed.inject({ method, url, headers });
        expect(res.statusCode, `${method} ${url}`).toBe(401);
        expect(res.json()).toMatchObject({ code: 'authorization' in headers ? 'authentication_failed' : 'not_authenticated', errors: [] });
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
    const dashboard = await withOperators.inject({ method: 'GET', url: '/admin/queues/api/queues', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(dashboard.statusCode).toBe(401);
    expect(dashboard.json()).toMatchObject({ code: 'not_authenticated' });
  });

  it('is refused at start-up when it is too short to be a secret', () => {
    expect(() => loadConfig({ NODE_ENV: 'test', METRICS_TOKEN: 'short' })).toThrow(/METRICS_TOKEN must be at least 32 characters/);
    expect(() => loadConfig({ NODE_ENV: 'test', METRICS_TOKEN: `${'x'.repeat(32)} y` })).toThrow(/METRICS_TOKEN must be printable ASCII without spaces/);
  });
});
