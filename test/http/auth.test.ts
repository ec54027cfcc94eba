import { randomBytes, randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, revokeApiKey, type IssuedApiKey } from '../../src/auth/api-keys.js';
import { createTestContext, TEST_TOKEN_SECRET, type TestContext } from '../helpers/context.js';

let ctx: TestContext;
const S = 'AUTH_SUPPLIER';
const HOUR_S = 60 * 60;
const WEEK_S = 7 * 24 * HOUR_S;
/** The issuer TokenService stamps on (and requires of) every token. */
const ISSUER = 'data-import-service';

const OBTAIN_TOKEN = /* GraphQL */ `
  mutation ObtainToken($input: ObtainJSONWebTokenInput!) {
    obtainKrakenToken(input: $input) { token payload refreshToken refreshExpiresIn }
  }
`;

interface Obtained {
  token: string;
  payload: { sub: string; iat: number; exp: number };
  refreshToken: string;
  refreshExpiresIn: number;
}
interface GraphqlBody {
  data?: { obtainKrakenToken: Obtained | null } | null;
  errors?: Array<{ message: string; extensions?: { errorCode?: string; errorType?: string } }>;
}

beforeAll(async () => {
  // This suite makes many deliberate failed sign-ins from one address; the limiter has its own test (login-limit.test.ts).
  ctx = await createTestContext({ env: { LOGIN_MAX_FAILURES: '1000' } });
  await ctx.createSupplier(S);
});
afterAll(async () => ctx?.close());

const nowS = () => Math.floor(ctx.clock.now().getTime() / 1000);
const newKey = (): Promise<IssuedApiKey> => createApiKey(ctx.deps.db, `auth-test-${randomBytes(4).toString('hex')}`);

async function obtainRaw(input: Record<string, unknown>): Promise<{ status: number; body: GraphqlBody }> {
  const res = await ctx.app.inject({ method: 'POST', url: '/v1/graphql/', payload: { query: OBTAIN_TOKEN, variables: { input } } });
  return { status: res.statusCode, body: res.json<GraphqlBody>() };
}

async function obtain(input: Record<string, unknown>): Promise<Obtained> {
  const { status, body } = await obtainRaw(input);
  expect(body.errors).toBeUndefined();
  expect(status).toBe(200);
  return body.data!.obtainKrakenToken!;
}

/** A refusal as existing clients expect it: HTTP 200, no data, one VALIDATION error with the code. */
async function expectRefused(input: Record<string, unknown>, errorCode: 'KT-CT-1134' | 'KT-CT-1135'): Promise<void> {
  const { status, body } = await obtainRaw(input);
  expect(status).toBe(200);
  expect(body.data?.obtainKrakenToken ?? null).toBeNull();
  expect(body.errors).toHaveLength(1);
  expect(body.errors![0]).toMatchObject({ message: 'Invalid data.', extensions: { errorCode, errorType: 'VALIDATION' } });
}

const pending = (authorization?: string) =>
  ctx.app.inject({
    method: 'GET',
    url: `/v1/data-import/pending-account-import-processes/${S}/`,
    headers: authorization === undefined ? {} : { authorization },
  });

async function expect401(authorization: string | undefined, code: string): Promise<void> {
  const res = await pending(authorization);
  expect(res.statusCode).toBe(401);
  const body = res.json<{ detail: unknown }>();
  expect(body).toEqual({ detail: body.detail, code, errors: [] });
  expect(typeof body.detail).toBe('string');
}

const b64url = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

/** The claims a genuine access token carries, so a forged token differs only in what the test changes. */
const accessClaims = (sub: string) => {
  const iat = nowS();
  return { use: 'access', sub, iss: ISSUER, iat, exp: iat + HOUR_S, jti: randomUUID() };
};

const sign = (claims: Record<string, unknown>, secret: string, alg: 'HS256' | 'HS512') =>
  new SignJWT(claims).setProtectedHeader({ alg, typ: 'JWT' }).sign(new TextEncoder().encode(secret));

describe('ObtainToken', () => {
  it('exchanges an API key for a 60-minute token, its claims and a 7-day refresh token', async () => {
    const key = await newKey();
    const t = await obtain({ APIKey: key.key });
    const iat = nowS();
    expect(t.payload).toEqual({ sub: key.id, iat, exp: iat + HOUR_S });
    expect(t.refreshExpiresIn).toBe(iat + WEEK_S);
    expect(t.refreshToken).toEqual(expect.any(String));
    expect(t.refreshToken).not.toBe(t.token);

    const res = await pending(`Token ${t.token}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual([]);
  });

  it('renews the access token with the refresh token until the refresh token is 7 days old', async () => {
    const key = await newKey();
    const first = await obtain({ APIKey: key.key });

    ctx.clock.advance((WEEK_S - 1) * 1000);
    const renewed = await obtain({ refreshToken: first.refreshToken });
    expect(renewed.token).not.toBe(first.token);
    expect(renewed.payload).toEqual({ sub: key.id, iat: nowS(), exp: nowS() + HOUR_S });
    expect(renewed.refreshExpiresIn).toBe(first.refreshExpiresIn);
    expect((await pending(`Token ${renewed.token}`)).statusCode).toBe(200);

    ctx.clock.advance(1000);
    await expectRefused({ refreshToken: first.refreshToken }, 'KT-CT-1135');
    // The access token renewed a second ago is unaffected: it has its own 60 minutes.
    expect((await pending(`Token ${renewed.token}`)).statusCode).toBe(200);
  });

  it('refuses bad, unknown and revoked API keys with KT-CT-1134', async () => {
    const key = await newKey();
    await expectRefused({ APIKey: 'not-a-key' }, 'KT-CT-1134');
    await expectRefused({ APIKey: '' }, 'KT-CT-1134');
    // Well-formed, right key id, wrong secret.
    await expectRefused({ APIKey: `${key.key.slice(0, -43)}${'A'.repeat(43)}` }, 'KT-CT-1134');
    expect(await revokeApiKey(ctx.deps.db, key.name, ctx.clock.now())).toBe(true);
    await expectRefused({ APIKey: key.key }, 'KT-CT-1134');
  });

  it('requires exactly one of APIKey and refreshToken', async () => {
    const key = await newKey();
    const t = await obtain({ APIKey: key.key });
    const neither = await obtainRaw({});
    const both = await obtainRaw({ APIKey: key.key, refreshToken: t.refreshToken });
    for (const { status, body } of [neither, both]) {
      expect(status).toBe(200);
      expect(body.data?.obtainKrakenToken ?? null).toBeNull();
      expect(body.errors?.[0]?.extensions).toMatchObject({ errorCode: expect.stringMatching(/^KT-CT-113[45]$/), errorType: 'VALIDATION' });
    }
  });

  it('keeps access and refresh tokens apart', async () => {
    const key = await newKey();
    const t = await obtain({ APIKey: key.key });
    await expect401(`Token ${t.refreshToken}`, 'authentication_failed');
    await expectRefused({ refreshToken: t.token }, 'KT-CT-1135');
    await expectRefused({ refreshToken: 'garbage' }, 'KT-CT-1135');
    // The same, after each token has been accepted for its own use (verified tokens are remembered).
    const u = await obtain({ APIKey: key.key });
    expect((await pending(`Token ${u.token}`)).statusCode).toBe(200);
    await obtain({ refreshToken: u.refreshToken });
    await expectRefused({ refreshToken: u.token }, 'KT-CT-1135');
    await expect401(`Token ${u.refreshToken}`, 'authentication_failed');
  });

  it('stops renewing once the API key is revoked', async () => {
    const key = await newKey();
    const t = await obtain({ APIKey: key.key });
    await revokeApiKey(ctx.deps.db, key.name, ctx.clock.now());
    await expectRefused({ refreshToken: t.refreshToken }, 'KT-CT-1135');
  });
});

describe('Authorization: Token on REST', () => {
  it('answers 401 not_authenticated without a header, with the envelope and a challenge', async () => {
    const res = await pending();
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ detail: expect.any(String), code: 'not_authenticated', errors: [] });
    expect(res.headers['www-authenticate']).toBe('Token');
  });

  it('answers 401 authentication_failed for anything but a genuine token', async () => {
    const key = await newKey();
    const claims = accessClaims(key.id);
    // Control: the hand-made token is accepted when signed as the service signs, so each failure below is the one change.
    expect((await pending(`Token ${await sign(claims, TEST_TOKEN_SECRET, 'HS256')}`)).statusCode).toBe(200);

    const otherSecret = await sign(claims, `other-${TEST_TOKEN_SECRET}`, 'HS256');
    const algNone = `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url(claims)}.`;
    const hs512 = await sign(claims, TEST_TOKEN_SECRET, 'HS512');
    const t = await obtain({ APIKey: key.key });
    for (const header of [
      'Bearer x',
      `Bearer ${t.token}`,
      'Token',
      'Token not.a.jwt',
      'Token garbage',
      `Token ${t.token} extra`,
      `Token ${otherSecret}`,
      `Token ${algNone}`,
      `Token ${hs512}`,
      `Token ${await sign({ ...claims, iss: 'someone-else' }, TEST_TOKEN_SECRET, 'HS256')}`,
      `Token ${await sign({ ...claims, sub: '999999999' }, TEST_TOKEN_SECRET, 'HS256')}`,
    ]) {
      await expect401(header, 'authentication_failed');
    }
  });

  it('answers 401 token_expired once the 60 minutes are over', async () => {
    const key = await newKey();
    const t = await obtain({ APIKey: key.key });
    ctx.clock.advance((HOUR_S - 1) * 1000);
    expect((await pending(`Token ${t.token}`)).statusCode).toBe(200);
    ctx.clock.advance(1000);
    await expect401(`Token ${t.token}`, 'token_expired');
  });

  it('locks a revoked key out on the very next request', async () => {
    const key = await newKey();
    const t = await obtain({ APIKey: key.key });
    expect((await pending(`Token ${t.token}`)).statusCode).toBe(200);
    await revokeApiKey(ctx.deps.db, key.name, ctx.clock.now());
    await expect401(`Token ${t.token}`, 'authentication_failed');
  });

  it('locks a revoked key out while requests of other keys are in flight with it', async () => {
    const [a, b] = [await newKey(), await newKey()];
    const [ta, tb] = [await obtain({ APIKey: a.key }), await obtain({ APIKey: b.key })];
    await revokeApiKey(ctx.deps.db, a.name, ctx.clock.now());
    const answers = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => (await pending(`Token ${(i % 2 === 0 ? ta : tb).token}`)).statusCode),
    );
    expect(answers).toEqual(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? 401 : 200)));
  });

  it('guards every token route: none answers without credentials', async () => {
    const guarded = ctx.built.routes.filter((r) => r.auth === 'token');
    expect(guarded.map((r) => r.url)).toContain('/v1/data-import/pending-account-import-processes/:import_supplier_code/');
    for (const route of guarded) {
      const url = route.url.replace(/:(\w+)/g, (_m, name: string) => `dummy-${name}`);
      const res = await ctx.app.inject({ method: route.method, url, ...(route.method === 'POST' ? { payload: {} } : {}) });
      expect({ route: `${route.method} ${route.url}`, status: res.statusCode, body: res.json() as unknown }).toEqual({
        route: `${route.method} ${route.url}`,
        status: 401,
        body: { detail: expect.any(String), code: 'not_authenticated', errors: [] },
      });
    }
  });
});
