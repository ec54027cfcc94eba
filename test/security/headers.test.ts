import { randomUUID } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/auth/api-keys.js';
import { buildApp, type BuiltApp } from '../../src/http/app.js';
import { hasSecurityHeaders, registerSecurityHeaders } from '../../src/http/security-headers.js';
import { operatorSession } from '../helpers/console.js';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { accountPayload } from '../helpers/fixtures.js';
import { basicAuth, describeResponse, OBTAIN_TOKEN } from './helpers.js';

/**
 * Issue 13: the console (/admin/) and bull-board have headers of their own, checked at the end.
 *
 * Issue 10, item 11: every API and ObtainToken response carries `Cache-Control: no-store` and
 * `X-Content-Type-Options: nosniff`: the data-import and batch routes (JSON and CSV), their errors
 * (400, 401, 404, 413, 415, Fastify's own bad-URL refusal), unknown paths, the probes, the API
 * description and /v1/graphql/ (ObtainToken, its refusals, GET). Checked on real responses of the
 * app as buildApp builds it, with registerSecurityHeaders applied (a no-op once buildApp calls it).
 */

const S = 'HEADERS_CO';
const TEAM = 'Headers Team';
const OPERATOR = { user: 'ops-headers', password: 'headers-operator-password' };

let ctx: TestContext;
let built: BuiltApp;
let app: FastifyInstance;
let auth: { authorization: string };
let batchId: string;
/** Whether buildApp itself registers the headers (then its frameworkErrors handler is expected to add them too). */
let wiredInBuildApp = false;

beforeAll(async () => {
  ctx = await createTestContext({ env: { OPERATOR_USER: OPERATOR.user, OPERATOR_PASSWORD: OPERATOR.password, LOGIN_MAX_FAILURES: '1000' } });
  await ctx.createSupplier(S);
  await ctx.createTeam(TEAM);
  // The app as the service builds it; the registration only adds the hook when buildApp has not already.
  built = await buildApp(ctx.deps);
  app = built.app;
  wiredInBuildApp = hasSecurityHeaders(app);
  registerSecurityHeaders(app);
  await app.ready();
  auth = await ctx.authHeaders();
  const upload = await app.inject({
    method: 'POST',
    url: `/v1/data-import/batches/?import_supplier=${S}&operations_team_name=${encodeURIComponent(TEAM)}`,
    payload: `${JSON.stringify({ account: { external_account_number: 'H-1' }, notes: 'not a list' })}\n`,
    headers: { ...auth, 'content-type': 'application/x-ndjson' },
  });
  expect(upload.statusCode, upload.body).toBe(202);
  batchId = (upload.json() as { batch_id: string }).batch_id;
});
afterAll(async () => {
  await app?.close();
  await ctx?.close();
});

function expectSecurityHeaders(res: LightMyRequestResponse, what: string, status: number): void {
  expect(res.statusCode, `${what}: ${describeResponse(res)}`).toBe(status);
  expect(res.headers['cache-control'], what).toBe('no-store');
  expect(res.headers['x-content-type-options'], what).toBe('nosniff');
}

type Case = [what: string, status: number, request: () => Promise<LightMyRequestResponse>];
const json = (method: 'POST' | 'PUT', url: string, payload: unknown, headers: Record<string, string> = auth) =>
  app.inject({ method, url, payload: typeof payload === 'string' ? payload : JSON.stringify(payload), headers: { 'content-type': 'application/json', ...headers } });
const get = (url: string, headers: Record<string, string> = auth) => app.inject({ method: 'GET', url, headers });

describe('Cache-Control: no-store and X-Content-Type-Options: nosniff on every API response', () => {
  const cases: Case[] = [
    // Successes.
    ['201 stage an account', 201, () => json('POST', '/v1/data-import/account-import-process/create-or-update/', accountPayload(S, 'H-OK'))],
    ['200 validate an account', 200, () => json('POST', '/v1/data-import/validate-account/', accountPayload(S, 'H-VALID'))],
    ['200 list batches', 200, () => get(`/v1/data-import/batches/?import_supplier=${S}`)],
    ['200 batch status', 200, () => get(`/v1/data-import/batches/${batchId}/`)],
    ['200 batch items (JSON)', 200, () => get(`/v1/data-import/batches/${batchId}/items/`)],
    ['200 batch items (CSV)', 200, () => get(`/v1/data-import/batches/${batchId}/items/`, { ...auth, accept: 'text/csv' })],
    ['200 account transfer status list', 200, () => get(`/v1/data-import/all-account-import-processes/${S}/`)],
    // Refusals and errors.
    ['400 invalid_request', 400, () => json('POST', '/v1/data-import/validate-account/', {})],
    ['400 invalid_json', 400, () => json('POST', '/v1/data-import/notes/create/', '{"not json')],
    ['400 bad query', 400, () => get(`/v1/data-import/batches/${batchId}/items/?state=nope`)],
    ['401 no token', 401, () => get(`/v1/data-import/batches/?import_supplier=${S}`, {})],
    ['401 a wrong token', 401, () => get(`/v1/data-import/batches/${batchId}/`, { authorization: 'Token nope' })],
    ['404 batch_not_found', 404, () => get(`/v1/data-import/batches/${randomUUID()}/`)],
    ['404 account_not_found', 404, () => get(`/v1/data-import/account-transfer-status/${S}/NOPE/`)],
    ['404 no such endpoint', 404, () => get('/v1/data-import/nope/')],
    ['404 no such endpoint, anonymous', 404, () => get('/nope', {})],
    ['413 body over the limit', 413, () => json('POST', '/v1/data-import/notes/create/', { notes: [{ body: 'x'.repeat(10 * 1024 * 1024 + 1) }] })],
    ['415 upload that is not NDJSON', 415, () => json('POST', `/v1/data-import/batches/?import_supplier=${S}&operations_team_name=${encodeURIComponent(TEAM)}`, {})],
    // Open routes.
    ['200 /healthz', 200, () => get('/healthz', {})],
    ['200 /readyz', 200, () => get('/readyz', {})],
    ['200 /openapi.json', 200, () => get('/openapi.json', {})],
  ];
  it.each(cases)('%s', async (what, status, request) => expectSecurityHeaders(await request(), what, status));

  // Fastify runs no hook for the replies of its frameworkErrors option: buildApp's handler must add
  // SECURITY_HEADERS itself, in the same change that registers the hook there (src/http/app.ts).
  it("400 bad URL (Fastify refuses it before routing, in buildApp's frameworkErrors)", async ({ skip }) => {
    skip(!wiredInBuildApp, 'buildApp does not register the security headers yet');
    expectSecurityHeaders(await get('/v1/data-import/batches/%E0%A4%A/'), 'bad URL', 400);
  });

  it('every token route, anonymous (401) and with a token (whatever it answers)', async () => {
    for (const r of built.routes.filter((x) => x.auth === 'token')) {
      const url = r.url.replace(/:batch_id/g, randomUUID()).replace(/:(\w+)/g, 'x');
      for (const headers of [{}, auth]) {
        const res = await app.inject({ method: r.method, url, headers: { ...headers, ...(r.method === 'POST' ? { 'content-type': 'application/json' } : {}) }, ...(r.method === 'POST' ? { payload: '{}' } : {}) });
        if (Object.keys(headers).length === 0) expect(res.statusCode, `${r.method} ${r.url}`).toBe(401);
        expect(res.headers['cache-control'], `${r.method} ${r.url} → ${res.statusCode}`).toBe('no-store');
        expect(res.headers['x-content-type-options'], `${r.method} ${r.url} → ${res.statusCode}`).toBe('nosniff');
      }
    }
  });
});

describe('/v1/graphql/ (ObtainToken)', () => {
  const obtain = (input: Record<string, unknown>) => app.inject({ method: 'POST', url: '/v1/graphql/', payload: { query: OBTAIN_TOKEN, variables: { input } } });

  it('a token: 200, and the token is never cached', async () => {
    const { key } = await createApiKey(ctx.deps.db, 'headers-obtain');
    const res = await obtain({ APIKey: key });
    expectSecurityHeaders(res, 'ObtainToken', 200);
    expect((res.json() as { data: { obtainKrakenToken: { token: string } } }).data.obtainKrakenToken.token).toMatch(/^ey/);
  });

  it('a refused sign-in, an invalid document, a GET and a body that is not JSON', async () => {
    const refused = await obtain({ APIKey: 'dik_nope' });
    expect(refused.headers['cache-control']).toBe('no-store');
    expect(refused.headers['x-content-type-options']).toBe('nosniff');
    expect(refused.json()).toMatchObject({ errors: [expect.anything()] });
    for (const res of [
      await app.inject({ method: 'POST', url: '/v1/graphql/', payload: { query: '{ nope }' } }),
      await app.inject({ method: 'GET', url: '/v1/graphql/?query=%7Bping%7D' }),
      await app.inject({ method: 'POST', url: '/v1/graphql/', payload: '{"query', headers: { 'content-type': 'application/json' } }),
    ]) {
      expect(res.headers['cache-control'], describeResponse(res)).toBe('no-store');
      expect(res.headers['x-content-type-options'], describeResponse(res)).toBe('nosniff');
    }
  });
});

describe('the operator surface keeps its own headers', () => {
  it('/metrics refused: no-store and nosniff as before', async () => {
    const res = await get('/metrics', {});
    expectSecurityHeaders(res, '/metrics', 401);
  });

  it('/metrics answered: no-store, nosniff, and a CSP that allows nothing', async () => {
    const res = await get('/metrics', basicAuth(OPERATOR.user, OPERATOR.password));
    expectSecurityHeaders(res, '/metrics', 200);
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(String(res.headers['content-security-policy'])).toContain("default-src 'none'");
  });

  it("bull-board, signed in: its own CSP (inline styles, never inline scripts), DENY, no-referrer, no-store, nosniff", async () => {
    const session = await operatorSession(app, ctx.deps.db, 'viewer');
    for (const url of ['/admin/queues', '/admin/queues/queue/validate', '/admin/queues/api/queues']) {
      const res = await session.get(url);
      expectSecurityHeaders(res, url, 200);
      expect(res.headers['x-frame-options'], url).toBe('DENY');
      expect(res.headers['referrer-policy'], url).toBe('no-referrer');
      const csp = cspOf(res);
      expect(csp['default-src'], url).toEqual(["'self'"]);
      expect(csp['script-src'], url).toEqual(["'self'"]);
      expect(csp['script-src-attr'], url).toEqual(["'none'"]);
      expect(csp['object-src'], url).toEqual(["'none'"]);
      expect(csp['frame-ancestors'], url).toEqual(["'none'"]);
      expect(csp['style-src'], url).toEqual(expect.arrayContaining(["'self'"]));
    }
  });

  it("console pages: a strict CSP (scripts and styles from 'self' only, nothing inline), DENY, no referrer to other sites, no-store, nosniff, signed in or not", async () => {
    const session = await operatorSession(app, ctx.deps.db, 'operator');
    const signInForm = (payload: Record<string, string>) =>
      app.inject({ method: 'POST', url: '/admin/sign-in', payload: new URLSearchParams(payload).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    const cases: Case[] = [
      ['200 the batches page', 200, () => session.get('/admin/')],
      ['200 a supplier page', 200, () => session.get(`/admin/suppliers/${S}`)],
      ['200 the audit log', 200, () => session.get('/admin/audit')],
      ['200 a confirmation page', 200, () => session.get(`/admin/batches/${batchId}/cancel`)],
      ['404 an error page', 404, () => session.get(`/admin/batches/${randomUUID()}`)],
      ['403 a form without its CSRF token', 403, () => app.inject({ method: 'POST', url: `/admin/batches/${batchId}/cancel`, payload: '', headers: { cookie: session.cookie, 'content-type': 'application/x-www-form-urlencoded' } })],
      ['200 the sign-in form, anonymous', 200, () => get('/admin/sign-in', { accept: 'text/html' })],
      ['401 a refused sign-in', 401, () => signInForm({ name: 'nobody', password: 'not-the-password-0' })],
    ];
    for (const [what, status, request] of cases) {
      const res = await request();
      expectSecurityHeaders(res, what, status);
      expect(res.headers['content-type'], what).toMatch(/^text\/html/);
      expect(res.headers['x-frame-options'], what).toBe('DENY');
      // Console URLs (batch ids, search terms) never reach another site. (same-origin rather than no-referrer:
      // with no-referrer browsers send `Origin: null` on the forms' POSTs, which the origin check refuses.)
      expect(['same-origin', 'no-referrer'], what).toContain(res.headers['referrer-policy']);
      const csp = cspOf(res);
      expect(csp['default-src'], what).toEqual(["'none'"]);
      expect(csp['script-src'], what).toEqual(["'self'"]);
      expect(csp['style-src'], what).toEqual(["'self'"]);
      expect(csp['frame-ancestors'], what).toEqual(["'none'"]);
      expect(csp['form-action'], what).toEqual(["'self'"]);
      expect(csp['base-uri'], what).toEqual(["'none'"]);
      expect(String(res.headers['content-security-policy']), what).not.toMatch(/unsafe-|\*|https?:/);
      // And the pages keep to it: no inline script or style, no style attribute, no handler attribute.
      expect(res.body, what).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>|<style[\s>]|\sstyle=|\son[a-z]+=/i);
    }
    // A successful sign-in's redirect carries them too (with the new session's cookie).
    const signedIn = await signInForm({ name: session.name, password: session.password });
    expect(signedIn.statusCode).toBe(303);
    expect(signedIn.headers['cache-control']).toBe('no-store');
    expect(signedIn.headers['x-frame-options']).toBe('DENY');
  });
});

/** The directives of a response's Content-Security-Policy, each with its sources. */
function cspOf(res: LightMyRequestResponse): Record<string, string[]> {
  const header = res.headers['content-security-policy'];
  expect(header, describeResponse(res)).toBeDefined();
  return Object.fromEntries(
    String(header)
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .filter((parts) => parts[0])
      .map(([name, ...sources]) => [name!, sources]),
  );
}
