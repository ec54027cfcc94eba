import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/auth/api-keys.js';
import { TokenService } from '../../src/auth/tokens.js';
import { main as importctl } from '../../src/cli/importctl.js';
import { ConfigError, DEVELOPMENT_TOKEN_SECRET, loadConfig } from '../../src/config.js';
import { createTestContext, createTestDatabase, type TestContext } from '../helpers/context.js';

/**
 * The token secret fails closed: the published development secret signs tokens only when NODE_ENV
 * says `development` or `test`. Unset NODE_ENV means production, where a missing TOKEN_SECRET or
 * the development one stops start-up with one line naming TOKEN_SECRET. (The real server process
 * refusing to start is in test/faults/startup.test.ts.)
 */

const OWN_SECRET = `production-secret-${randomBytes(16).toString('hex')}`;

function configError(env: Record<string, string>, opts?: { signsTokens?: boolean }): string {
  try {
    loadConfig(env, opts);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    const message = (err as Error).message;
    expect(message, 'one line').not.toContain('\n');
    return message;
  }
  throw new Error(`loadConfig(${JSON.stringify(env)}) did not throw`);
}

describe('TOKEN_SECRET and NODE_ENV', () => {
  it('NODE_ENV unset (or empty) and no TOKEN_SECRET: refused, naming TOKEN_SECRET', () => {
    for (const env of [{}, { NODE_ENV: '', TOKEN_SECRET: '' }] as Array<Record<string, string>>) {
      expect(configError(env)).toBe(
        'invalid configuration: TOKEN_SECRET is required unless NODE_ENV is development or test (NODE_ENV is unset, which means production)',
      );
    }
    expect(configError({ NODE_ENV: 'production' })).toMatch(/^invalid configuration: TOKEN_SECRET is required .*\(NODE_ENV=production\)$/);
  });

  it('the published development secret is refused outside development and test, even when set explicitly', () => {
    for (const env of [{ NODE_ENV: 'production' }, {}] as Array<Record<string, string>>) {
      expect(configError({ ...env, TOKEN_SECRET: DEVELOPMENT_TOKEN_SECRET })).toMatch(/^invalid configuration: TOKEN_SECRET is the published development secret/);
    }
  });

  it('an unknown NODE_ENV is refused in one clear line, not mistaken for development', () => {
    for (const nodeEnv of ['staging', 'prod', 'Production', 'dev']) {
      expect(configError({ NODE_ENV: nodeEnv, TOKEN_SECRET: OWN_SECRET })).toBe(
        'invalid configuration: NODE_ENV must be development, test or production (unset means production)',
      );
    }
  });

  it('development and test may run without a secret, on the development one (the server then warns)', () => {
    for (const nodeEnv of ['development', 'test'] as const) {
      const config = loadConfig({ NODE_ENV: nodeEnv });
      expect(config).toMatchObject({ nodeEnv, tokenSecret: DEVELOPMENT_TOKEN_SECRET, usingDevelopmentSecret: true });
    }
  });

  it('production, or NODE_ENV unset, runs on its own secret', () => {
    expect(loadConfig({ TOKEN_SECRET: OWN_SECRET })).toMatchObject({ nodeEnv: 'production', tokenSecret: OWN_SECRET, usingDevelopmentSecret: false });
    expect(loadConfig({ NODE_ENV: 'production', TOKEN_SECRET: OWN_SECRET })).toMatchObject({ nodeEnv: 'production', tokenSecret: OWN_SECRET });
  });

  it('a process that signs no tokens (importctl, workers) needs no TOKEN_SECRET, and never falls back to the development one', () => {
    const a = loadConfig({}, { signsTokens: false });
    const b = loadConfig({}, { signsTokens: false });
    expect(a.tokenSecret).not.toBe(DEVELOPMENT_TOKEN_SECRET);
    expect(a.tokenSecret).not.toBe(b.tokenSecret);
    expect(Buffer.byteLength(a.tokenSecret)).toBeGreaterThanOrEqual(32);
    expect(a.usingDevelopmentSecret).toBe(false);
    // A secret that is set is still checked.
    expect(configError({ TOKEN_SECRET: DEVELOPMENT_TOKEN_SECRET }, { signsTokens: false })).toMatch(/TOKEN_SECRET is the published development secret/);
  });
});

describe('importctl with NODE_ENV unset', () => {
  let database: { url: string; drop: () => Promise<void> };
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => database?.drop());

  const run = async (env: Record<string, string>) => {
    let out = '';
    let err = '';
    const code = await importctl(['supplier', 'list'], { out: (s) => (out += s), err: (s) => (err += s), env });
    return { code, out, err };
  };

  it('works without TOKEN_SECRET (it signs no tokens), and still refuses the development secret', async () => {
    const ok = await run({ DATABASE_URL: database.url });
    expect({ code: ok.code, err: ok.err }).toEqual({ code: 0, err: '' });
    expect(ok.out).toMatch(/^CODE\s+NAME/);

    const refused = await run({ DATABASE_URL: database.url, TOKEN_SECRET: DEVELOPMENT_TOKEN_SECRET });
    expect(refused.code).toBe(2);
    expect(refused.err).toMatch(/^importctl: invalid configuration: TOKEN_SECRET is the published development secret[^\n]*\n$/);
  });
});

describe('a server configured for production', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext({ env: { NODE_ENV: 'production', TOKEN_SECRET: OWN_SECRET } });
    await ctx.createSupplier('SECRETS');
  });
  afterAll(async () => ctx?.close());

  const pending = (token: string) =>
    ctx.app.inject({ method: 'GET', url: '/v1/data-import/pending-account-import-processes/SECRETS/', headers: { authorization: `Token ${token}` } });

  it('refuses an access token forged with the development secret, and accepts one signed with its own', async () => {
    const key = await createApiKey(ctx.deps.db, `secrets-${randomBytes(4).toString('hex')}`);
    const now = () => ctx.clock.now();
    const forged = await new TokenService(DEVELOPMENT_TOKEN_SECRET, now).issue(key.id, 'access');
    const res = await pending(forged.token);
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ code: 'authentication_failed' });

    const genuine = await new TokenService(OWN_SECRET, now).issue(key.id, 'access');
    expect((await pending(genuine.token)).statusCode).toBe(200);
  });

  it('refuses a refresh token forged with the development secret', async () => {
    const key = await createApiKey(ctx.deps.db, `secrets-${randomBytes(4).toString('hex')}`);
    const forged = await new TokenService(DEVELOPMENT_TOKEN_SECRET, () => ctx.clock.now()).issue(key.id, 'refresh');
    const res = await ctx.app.inject({
      method: 'POST',
      url: '/v1/graphql/',
      payload: {
        query: 'mutation ObtainToken($input: ObtainJSONWebTokenInput!) { obtainKrakenToken(input: $input) { token } }',
        variables: { input: { refreshToken: forged.token } },
      },
    });
    const body = res.json<{ data?: { obtainKrakenToken: unknown } | null; errors?: unknown[] }>();
    expect(body.data?.obtainKrakenToken ?? null).toBeNull();
    expect(body.errors).toHaveLength(1);
  });
});
