import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOperator } from '../../src/console/operators.js';
import { cookieOf, sessionOf } from '../helpers/console.js';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { pollUntil } from '../helpers/poll.js';
import { basicAuth, describeResponse } from './helpers.js';

/**
 * Issue 10, item 5: operator credentials could be guessed without limit. Wrong guesses are limited
 * like ObtainToken's (LOGIN_MAX_FAILURES within LOGIN_FAILURE_WINDOW_S):
 * - HTTP Basic on /metrics (the only route it opens now), per client address;
 * - the console's sign-in form (issue 13), per client address and per operator name, so that neither
 *   many names from one address nor one name from many addresses goes past the limit.
 * Once blocked, even the right password is refused until the window passes.
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

function expectRetryAfter(res: LightMyRequestResponse): void {
  const retryAfter = Number(res.headers['retry-after']);
  expect(retryAfter, describeResponse(res)).toBeGreaterThanOrEqual(1);
  expect(retryAfter, describeResponse(res)).toBeLessThanOrEqual(WINDOW_S);
}

describe('/metrics (HTTP Basic)', () => {
  it('after the limit of wrong passwords, even the right one answers 429 with Retry-After, until the window passes; other addresses are unaffected', async () => {
    const ip = '127.0.3.1';
    for (let i = 0; i < MAX; i++) expect((await get('/metrics', ip, WRONG)).statusCode).toBe(401);

    const res = await get('/metrics', ip, RIGHT);
    expect(res.statusCode, describeResponse(res)).toBe(429);
    expect(res.json()).toEqual({ detail: expect.any(String), code: 'too_many_requests', errors: [] });
    expectRetryAfter(res);
    expect(res.body).not.toContain('# HELP');
    expect((await get('/metrics', ip, WRONG)).statusCode).toBe(429);

    // Another address scrapes as usual.
    const other = await get('/metrics', '127.0.3.2', RIGHT);
    expect(other.statusCode).toBe(200);
    expect(other.body).toContain('# HELP');

    // Once the window has passed, the right password works again from the blocked address.
    const after = await pollUntil(async () => {
      const r = await get('/metrics', ip, RIGHT);
      return r.statusCode === 200 ? r : null;
    }, { timeoutMs: 15_000, intervalMs: 200, what: 'the operator block to expire' });
    expect(after.body).toContain('# HELP');
  });

  it('of many simultaneous wrong guesses from one address, at most the limit get an answer other than 429', async () => {
    const answers = await Promise.all(Array.from({ length: 30 }, () => get('/metrics', '127.0.3.3', WRONG)));
    const statuses = answers.map((r) => r.statusCode);
    expect(statuses.filter((s) => s === 401)).toHaveLength(MAX);
    expect(statuses.filter((s) => s === 429)).toHaveLength(30 - MAX);
  });

  it('right credentials and requests without any never count: scrapes in parallel do not lock themselves out', async () => {
    const ip = '127.0.3.4';
    for (let i = 0; i < 2 * MAX; i++) expect((await get('/metrics', ip)).statusCode).toBe(401);
    const answers = await Promise.all(Array.from({ length: 4 * MAX }, () => get('/metrics', ip, RIGHT)));
    expect(answers.map((r) => r.statusCode)).toEqual(Array.from({ length: 4 * MAX }, () => 200));
    // Wrong guesses from that address still have their full allowance.
    for (let i = 0; i < MAX; i++) expect((await get('/metrics', ip, WRONG)).statusCode).toBe(401);
    expect((await get('/metrics', ip, RIGHT)).statusCode).toBe(429);
  });
});

describe('the console sign-in (/admin/sign-in)', () => {
  let n = 0;
  /** A new operator account (its own name, so each test starts with a clean per-name allowance). */
  async function newOperator(): Promise<{ name: string; password: string }> {
    const account = { name: `limit-${++n}`, password: `password-of-limit-${n}-0123` };
    await createOperator(ctx.deps.db, account.name, 'operator', account.password);
    return account;
  }
  const signIn = (name: string, password: string, remoteAddress: string) =>
    ctx.app.inject({
      method: 'POST',
      url: '/admin/sign-in',
      remoteAddress,
      payload: new URLSearchParams({ name, password }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });

  function expectSignedIn(res: LightMyRequestResponse, what: string): void {
    expect(res.statusCode, `${what}: ${describeResponse(res)}`).toBe(303);
    expect(String(res.headers['set-cookie']), what).toMatch(/^di_console=[^;]+;/);
  }
  function expectRefused(res: LightMyRequestResponse, what: string): void {
    expect(res.statusCode, `${what}: ${describeResponse(res)}`).toBe(401);
    expect(res.headers['set-cookie'], what).toBeUndefined();
  }
  function expectLimited(res: LightMyRequestResponse, what: string): void {
    expect(res.statusCode, `${what}: ${describeResponse(res)}`).toBe(429);
    expect(res.headers['content-type'], what).toMatch(/^text\/html/);
    expectRetryAfter(res);
    // No session is handed out, whatever was typed.
    expect(res.headers['set-cookie'], what).toBeUndefined();
  }

  it('per address: after the limit of failures, even the right password answers 429 with Retry-After, until the window passes; other addresses are unaffected', async () => {
    const ip = '127.0.4.1';
    const account = await newOperator();
    // Failures for several names (unknown ones, so no name reaches its own limit): the address's count.
    for (let i = 0; i < MAX; i++) expectRefused(await signIn(`nobody-${i}`, 'not-the-password-0', ip), `failure ${i + 1}`);

    expectLimited(await signIn(account.name, account.password, ip), 'the right password, blocked address');
    expectLimited(await signIn(`nobody-${MAX}`, 'not-the-password-0', ip), 'another wrong one');

    // Another address signs the same operator in as usual.
    expectSignedIn(await signIn(account.name, account.password, '127.0.4.2'), 'another address');

    // Once the window has passed, the right password works again from the blocked address.
    const after = await pollUntil(async () => {
      const r = await signIn(account.name, account.password, ip);
      return r.statusCode === 303 ? r : null;
    }, { timeoutMs: 15_000, intervalMs: 250, what: 'the console sign-in block to expire' });
    expectSignedIn(after, 'after the window');
  });

  it('per name: failures for one operator from many addresses block that name everywhere, and only that name', async () => {
    const target = await newOperator();
    const other = await newOperator();
    // Spellings that reach the same operator count as the same name (case, surrounding spaces).
    const spellings = [target.name, target.name.toUpperCase(), ` ${target.name} `];
    for (let i = 0; i < MAX; i++) expectRefused(await signIn(spellings[i % spellings.length]!, `wrong-password-${i}-0123`, `127.0.5.${i + 1}`), `failure ${i + 1}`);

    const fresh = '127.0.5.100';
    expectLimited(await signIn(target.name, target.password, fresh), 'the right password from a fresh address');
    // The address itself is not blocked: another operator signs in from it.
    expectSignedIn(await signIn(other.name, other.password, fresh), 'another operator from that address');
  });

  it('of many simultaneous wrong sign-ins from one address, at most the limit get an answer other than 429', async () => {
    const total = 4 * MAX;
    const answers = await Promise.all(Array.from({ length: total }, (_, i) => signIn(`nobody-parallel-${i}`, 'not-the-password-0', '127.0.4.3')));
    const statuses = answers.map((r) => r.statusCode);
    expect(statuses.filter((s) => s === 401)).toHaveLength(MAX);
    expect(statuses.filter((s) => s === 429)).toHaveLength(total - MAX);
  });

  it('right passwords and signed-in requests never count: a dashboard loading in parallel does not lock itself out', async () => {
    const ip = '127.0.4.4';
    const account = await newOperator();
    for (let i = 0; i < 2 * MAX; i++) expectSignedIn(await signIn(account.name, account.password, ip), `sign-in ${i + 1}`);
    const session = sessionOf(ctx.app, cookieOf(await signIn(account.name, account.password, ip)));
    const answers = await Promise.all(
      Array.from({ length: 4 * MAX }, () => ctx.app.inject({ method: 'GET', url: '/admin/queues/api/queues', remoteAddress: ip, headers: { cookie: session.cookie } })),
    );
    expect(answers.map((r) => r.statusCode)).toEqual(Array.from({ length: 4 * MAX }, () => 200));
    // Nor do requests without a session.
    for (let i = 0; i < 2 * MAX; i++) expect((await get('/admin/queues/api/queues', ip)).statusCode).toBe(401);
    // Wrong passwords from that address still have their full allowance.
    for (let i = 0; i < MAX; i++) expectRefused(await signIn(`nobody-after-${i}`, 'not-the-password-0', ip), `failure ${i + 1}`);
    expectLimited(await signIn(account.name, account.password, ip), 'the right password, now blocked');
  });

  it('the two limits are apart: HTTP Basic failures on /metrics do not count against the sign-in, nor the other way round', async () => {
    const ip = '127.0.4.5';
    const account = await newOperator();
    for (let i = 0; i < MAX; i++) expect((await get('/metrics', ip, WRONG)).statusCode).toBe(401);
    expect((await get('/metrics', ip, RIGHT)).statusCode).toBe(429);
    expectSignedIn(await signIn(account.name, account.password, ip), 'sign-in with /metrics blocked');

    const ip2 = '127.0.4.6';
    for (let i = 0; i < MAX; i++) expectRefused(await signIn(`nobody-apart-${i}`, 'not-the-password-0', ip2), `failure ${i + 1}`);
    expectLimited(await signIn(account.name, account.password, ip2), 'sign-in blocked');
    expect((await get('/metrics', ip2, RIGHT)).statusCode).toBe(200);
  });
});
