import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, type IssuedApiKey } from '../../src/auth/api-keys.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { OBTAIN_TOKEN } from './helpers.js';

/**
 * Issue 10, item 4: the ObtainToken limiter. Simultaneous attempts used to all reach the key check
 * before any failure was counted; and behind a load balancer every client had the balancer's address.
 */

const MAX = 5;
const WRONG_KEY = `dik_wrongwrongwro_${'x'.repeat(43)}`;

let direct: TestContext;
let proxied: TestContext;
let key: IssuedApiKey;
beforeAll(async () => {
  [direct, proxied] = await Promise.all([
    createTestContext({ env: { LOGIN_MAX_FAILURES: String(MAX) } }),
    createTestContext({ env: { LOGIN_MAX_FAILURES: String(MAX), TRUST_PROXY: '1' } }),
  ]);
  key = await createApiKey(direct.deps.db, 'login-limit-direct');
}, 60_000);
afterAll(async () => {
  await Promise.all([direct?.close(), proxied?.close()]);
});

interface Outcome {
  token: string | undefined;
  code: string | undefined;
}

async function obtain(ctx: TestContext, APIKey: string, remoteAddress: string, headers: Record<string, string> = {}): Promise<Outcome> {
  const res = await ctx.app.inject({ method: 'POST', url: '/v1/graphql/', remoteAddress, headers, payload: { query: OBTAIN_TOKEN, variables: { input: { APIKey } } } });
  expect(res.statusCode, res.body).toBe(200);
  const body = res.json<{ data?: { obtainKrakenToken: { token: string } | null }; errors?: Array<{ extensions?: { errorCode?: string } }> }>();
  return { token: body.data?.obtainKrakenToken?.token, code: body.errors?.[0]?.extensions?.errorCode };
}

const count = (outcomes: Outcome[], code: string) => outcomes.filter((o) => o.code === code).length;

describe('simultaneous attempts', () => {
  it('of 50 at once from one address, at most the limit are checked: the rest, even the right key sent last, get KT-CT-1199', async () => {
    const attempts = [...Array.from({ length: 49 }, () => WRONG_KEY), key.key];
    const outcomes = await Promise.all(attempts.map((k) => obtain(direct, k, '127.0.1.1')));
    expect(count(outcomes, 'KT-CT-1134')).toBe(MAX);
    expect(count(outcomes, 'KT-CT-1199')).toBe(50 - MAX);
    // The right key, last of the burst, was never checked: guessing in parallel gains nothing.
    expect(outcomes.at(-1)).toEqual({ token: undefined, code: 'KT-CT-1199' });
    // Another address is not affected.
    expect((await obtain(direct, key.key, '127.0.1.2')).token).toEqual(expect.any(String));
  });

  it('a successful sign-in gives its point back: after failures below the limit, the right key signs in again and again', async () => {
    const ip = '127.0.1.3';
    for (let i = 0; i < MAX - 1; i++) expect((await obtain(direct, WRONG_KEY, ip)).code).toBe('KT-CT-1134');
    for (let i = 0; i < MAX + 2; i++) expect((await obtain(direct, key.key, ip)).token, `sign-in ${i + 1}`).toEqual(expect.any(String));
    // The failures are still counted: one more is checked, and then the address is blocked.
    expect((await obtain(direct, WRONG_KEY, ip)).code).toBe('KT-CT-1134');
    expect(await obtain(direct, key.key, ip)).toEqual({ token: undefined, code: 'KT-CT-1199' });
  });
});

describe('client address behind a proxy (TRUST_PROXY)', () => {
  it('without TRUST_PROXY, X-Forwarded-For is ignored: one address is limited whatever it claims', async () => {
    const outcomes: Outcome[] = [];
    for (let i = 0; i <= MAX; i++) outcomes.push(await obtain(direct, WRONG_KEY, '127.0.2.1', { 'x-forwarded-for': `203.0.113.${i + 1}` }));
    expect(outcomes.map((o) => o.code)).toEqual([...Array.from({ length: MAX }, () => 'KT-CT-1134'), 'KT-CT-1199']);
    expect((await obtain(direct, key.key, '127.0.2.1', { 'x-forwarded-for': '203.0.113.200' })).code).toBe('KT-CT-1199');
  });

  it('with TRUST_PROXY=1, clients behind the same proxy are limited separately, by the address the proxy saw', async () => {
    const proxiedKey = await createApiKey(proxied.deps.db, 'login-limit-proxied');
    const proxy = '127.0.2.2';
    for (let i = 0; i < MAX; i++) expect((await obtain(proxied, WRONG_KEY, proxy, { 'x-forwarded-for': '198.51.100.7' })).code).toBe('KT-CT-1134');
    expect((await obtain(proxied, proxiedKey.key, proxy, { 'x-forwarded-for': '198.51.100.7' })).code).toBe('KT-CT-1199');
    // Only the nearest hop is believed: a client cannot escape its block by prepending addresses of its own.
    expect((await obtain(proxied, proxiedKey.key, proxy, { 'x-forwarded-for': '10.9.9.9, 198.51.100.7' })).code).toBe('KT-CT-1199');
    // Another client through the same proxy is not affected.
    expect((await obtain(proxied, proxiedKey.key, proxy, { 'x-forwarded-for': '198.51.100.8' })).token).toEqual(expect.any(String));
  });
});

describe('TRUST_PROXY configuration', () => {
  it('takes true, false, a hop count, or addresses and CIDR ranges', () => {
    const trust = (v: string | undefined) => loadConfig({ NODE_ENV: 'test', ...(v === undefined ? {} : { TRUST_PROXY: v }) }).trustProxy;
    expect(trust(undefined)).toBe(false);
    expect(trust('false')).toBe(false);
    expect(trust('true')).toBe(true);
    expect(trust('2')).toBe(2);
    expect(trust('10.0.0.0/8, 192.0.2.10,fd00::/8')).toEqual(['10.0.0.0/8', '192.0.2.10', 'fd00::/8']);
  });

  it('refuses anything else with an error naming the variable', () => {
    for (const bad of ['yes', '10.0.0.0/33', '1.2.3', '10.0.0.1,,10.0.0.2', '-1']) {
      expect(() => loadConfig({ NODE_ENV: 'test', TRUST_PROXY: bad }), bad).toThrow(ConfigError);
      expect(() => loadConfig({ NODE_ENV: 'test', TRUST_PROXY: bad }), bad).toThrow(/TRUST_PROXY must be true, false, a hop count/);
    }
  });
});
