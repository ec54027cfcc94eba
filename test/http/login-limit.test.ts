import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApiKey } from '../../src/auth/api-keys.js';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { pollUntil } from '../helpers/poll.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ env: { LOGIN_MAX_FAILURES: '3', LOGIN_FAILURE_WINDOW_S: '2' } });
});
afterAll(async () => ctx?.close());

const MUTATION = 'mutation ObtainToken($input: ObtainJSONWebTokenInput!) { obtainKrakenToken(input: $input) { token } }';
async function obtain(APIKey: string, remoteAddress: string) {
  const res = await ctx.app.inject({ method: 'POST', url: '/v1/graphql/', remoteAddress, payload: { query: MUTATION, variables: { input: { APIKey } } } });
  expect(res.statusCode).toBe(200);
  const body = res.json() as { data?: { obtainKrakenToken: { token: string } | null }; errors?: Array<{ message: string; extensions?: { errorCode?: string } }> };
  return { token: body.data?.obtainKrakenToken?.token, code: body.errors?.[0]?.extensions?.errorCode, message: body.errors?.[0]?.message };
}

it('rate-limits failed sign-ins per client address, in Redis, and lets the address in again after the window', async () => {
  const key = await createApiKey(ctx.deps.db, 'limited');
  for (let i = 0; i < 3; i++) expect((await obtain('dik_wrongwrongwro_' + 'x'.repeat(43), '127.0.0.9')).code).toBe('KT-CT-1134');
  // The address is now blocked: further attempts, even with a valid key, get KT-CT-1199.
  const blocked = await obtain('dik_wrongwrongwro_' + 'x'.repeat(43), '127.0.0.9');
  expect(blocked).toMatchObject({ code: 'KT-CT-1199', message: 'Too many requests.' });
  expect((await obtain(key.key, '127.0.0.9')).code).toBe('KT-CT-1199');
  // Another address is not affected.
  expect((await obtain(key.key, '127.0.0.10')).token).toEqual(expect.any(String));
  // The window passes (Redis expires the counter) and the blocked address may sign in again.
  const after = await pollUntil(async () => {
    const r = await obtain(key.key, '127.0.0.9');
    return r.token ? r : null;
  }, { timeoutMs: 10_000, intervalMs: 200, what: 'the block to expire' });
  expect(after.token).toEqual(expect.any(String));
});
