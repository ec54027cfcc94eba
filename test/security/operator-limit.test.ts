import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { pollUntil } from '../helpers/poll.js';
import { basicAuth, describeResponse } from './helpers.js';

/**
 * Issue 10, item 5: the operator credentials (HTTP Basic on /admin/* and /metrics) could be guessed
 * without limit. Wrong guesses are now limited per client address, like ObtainToken's.
 */

const OPERATOR = { user: 'ops-user', password: 'correct horse battery staple' };
const RIGHT = basicAuth(OPERATOR.user, OPERATOR.password);
const WRONG = basicAuth(OPERATOR.user, `${OPERATOR.password}?`);
const MAX = 3;
const WINDOW_S = 5;

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({
    env: { OPERATOR_USER: OPERATOR.user, OPERATOR_PASSWORD: OPERATOR.password, LOGIN_MAX_FAILURES: String(MAX), LOGIN_FAILURE_WINDOW_S: String(WINDOW_S) },
  });
});
afterAll(async () => ctx?.close());

const get = (url: string, remoteAddress: string, headers: Record<string, string> = {}) => ctx.app.inject({ method: 'GET', url, remoteAddress, headers });

it('after the limit of wrong passwords, even the right one answers 429 with Retry-After, until the window passes; other addresses are unaffected', async () => {
  const ip = '127.0.3.1';
  for (let i = 0; i < MAX; i++) expect((await get('/metrics', ip, WRONG)).statusCode).toBe(401);

  for (const url of ['/metrics', '/admin/queues/api/queues']) {
    const res = await get(url, ip, RIGHT);
    expect(res.statusCode, describeResponse(res)).toBe(429);
    expect(res.json()).toEqual({ detail: expect.any(String), code: 'too_many_requests', errors: [] });
    const retryAfter = Number(res.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(WINDOW_S);
    expect(res.body).not.toContain('# HELP');
  }
  expect((await get('/metrics', ip, WRONG)).statusCode).toBe(429);

  // Another address signs in as usual.
  const other = await get('/metrics', '127.0.3.2', RIGHT);
  expect(other.statusCode).toBe(200);
  expect(other.body).toContain('# HELP');

  // Once the window has passed, the right password works again from the blocked address.
  const after = await pollUntil(async () => {
    const res = await get('/metrics', ip, RIGHT);
    return res.statusCode === 200 ? res : null;
  }, { timeoutMs: 15_000, intervalMs: 200, what: 'the operator block to expire' });
  expect(after.body).toContain('# HELP');
});

it('of many simultaneous wrong guesses from one address, at most the limit get an answer other than 429', async () => {
  const answers = await Promise.all(Array.from({ length: 30 }, () => get('/metrics', '127.0.3.3', WRONG)));
  const statuses = answers.map((r) => r.statusCode);
  expect(statuses.filter((s) => s === 401)).toHaveLength(MAX);
  expect(statuses.filter((s) => s === 429)).toHaveLength(30 - MAX);
});

it('right credentials and requests without any never count: a dashboard loading in parallel does not lock itself out', async () => {
  const ip = '127.0.3.4';
  for (let i = 0; i < 2 * MAX; i++) expect((await get('/metrics', ip)).statusCode).toBe(401);
  const answers = await Promise.all(Array.from({ length: 4 * MAX }, () => get('/admin/queues/api/queues', ip, RIGHT)));
  expect(answers.map((r) => r.statusCode)).toEqual(Array.from({ length: 4 * MAX }, () => 200));
  // Wrong guesses from that address still have their full allowance.
  for (let i = 0; i < MAX; i++) expect((await get('/metrics', ip, WRONG)).statusCode).toBe(401);
  expect((await get('/metrics', ip, RIGHT)).statusCode).toBe(429);
});
