import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/auth/api-keys.js';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { describeResponse, OBTAIN_TOKEN } from './helpers.js';

/**
 * Issue 10, item 1: an unauthenticated POST /v1/graphql/ could stall the process (one 2.5 MB document of
 * 200,000 aliases blocked the event loop for seconds). The route now has its own 8 KiB body limit, and
 * documents are capped in tokens, aliases and depth; field suggestions are masked, and introspection is
 * off outside development and test.
 */

interface GraphqlBody {
  data?: unknown;
  errors?: Array<{ message: string; extensions?: Record<string, unknown> }>;
}

/** `{ a0: ping a1: ping … }`: one field under n aliases. */
const aliasDocument = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: ping`).join(' ')} }`;
const ALIAS_BOMB = JSON.stringify({ query: aliasDocument(200_000) });

let ctx: TestContext;
let production: TestContext;
beforeAll(async () => {
  [ctx, production] = await Promise.all([createTestContext(), createTestContext({ env: { NODE_ENV: 'production' } })]);
}, 60_000);
afterAll(async () => {
  await Promise.all([ctx?.close(), production?.close()]);
});

const post = (c: TestContext, payload: string | Record<string, unknown>) =>
  c.app.inject({ method: 'POST', url: '/v1/graphql/', headers: { 'content-type': 'application/json' }, payload });

/** A refusal before execution: a 4xx, no data, errors in GraphQL's response format; returns the messages. */
function refusedMessages(res: Awaited<ReturnType<typeof post>>): string[] {
  expect(res.statusCode, describeResponse(res)).toBeGreaterThanOrEqual(400);
  expect(res.statusCode, describeResponse(res)).toBeLessThan(500);
  const body = res.json<GraphqlBody>();
  expect(body.data ?? null).toBeNull();
  expect(body.errors?.length, describeResponse(res)).toBeGreaterThan(0);
  return body.errors!.map((e) => e.message);
}

describe('document size and shape', () => {
  it('refuses the 2.5 MB alias bomb with 413, in GraphQL response format, without reading it', async () => {
    expect(ALIAS_BOMB.length).toBeGreaterThan(2_500_000);
    const res = await post(ctx, ALIAS_BOMB);
    expect(res.statusCode, describeResponse(res)).toBe(413);
    expect(res.json()).toEqual({ data: null, errors: [{ message: 'The request body is larger than 8192 bytes.', extensions: { code: 'payload_too_large' } }] });
  });

  it('refuses a small document of 200 aliases, naming the alias limit', async () => {
    const payload = JSON.stringify({ query: aliasDocument(200) });
    expect(payload.length).toBeLessThan(8192);
    const messages = refusedMessages(await post(ctx, payload));
    expect(messages.join(' | ')).toMatch(/Aliases limit of 15 exceeded/);
  });

  it('refuses a document nested too deep (here through introspection, which would otherwise be answered)', async () => {
    const deep = '{ __schema { types { fields { type { fields { type { fields { name } } } } } } } }';
    const messages = refusedMessages(await post(ctx, { query: deep }));
    expect(messages.join(' | ')).toMatch(/Query depth limit of 6 exceeded/);
    // Control: a shallow introspection query is answered in test (and development).
    const shallow = await post(ctx, { query: '{ __schema { queryType { name } } }' });
    expect(shallow.statusCode).toBe(200);
    expect(shallow.json()).toEqual({ data: { __schema: { queryType: { name: 'Query' } } } });
  });

  it('refuses a document of too many tokens, even under the byte limit', async () => {
    const payload = JSON.stringify({ query: `{ ${'ping '.repeat(1200)}}` });
    expect(payload.length).toBeLessThan(8192);
    const messages = refusedMessages(await post(ctx, payload));
    expect(messages.join(' | ')).toMatch(/more than? 1000 tokens|contains more that 1000 tokens/);
  });

  it('does not suggest field, argument or input names', async () => {
    const unknownField = await post(ctx, { query: '{ pin }' });
    const unknownInput = await post(ctx, { query: OBTAIN_TOKEN, variables: { input: { APIKy: 'x' } } });
    for (const res of [unknownField, unknownInput]) {
      expect(res.json<GraphqlBody>().errors?.length, describeResponse(res)).toBeGreaterThan(0);
      expect(res.body).not.toMatch(/Did you mean/);
      expect(res.body).not.toMatch(/"ping"|APIKey/);
    }
  });

  it('keeps serving while alias bombs are in flight: /healthz answers 200', async () => {
    await ctx.app.listen({ host: '127.0.0.1', port: 0 });
    const base = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`;
    const bombs = Array.from({ length: 4 }, () =>
      fetch(`${base}/v1/graphql/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: ALIAS_BOMB }).then(
        async (r) => ({ status: r.status, body: await r.text() }),
        (err: unknown) => ({ status: 0, body: String(err) }),
      ),
    );
    // Before the limits, four bombs kept the event loop busy for well over this deadline.
    const health = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(4_000) });
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    // The server answers 413 before the upload ends; a client may also see the connection closed under it.
    const answered = (await Promise.all(bombs)).filter((b) => b.status !== 0);
    expect(answered.length).toBeGreaterThan(0);
    for (const bomb of answered) expect(bomb.status, bomb.body).toBe(413);
  });
});

describe('introspection in production', () => {
  it('is refused, while ObtainToken works', async () => {
    for (const query of ['{ __schema { queryType { name } } }', '{ __type(name: "Query") { name } }']) {
      const messages = refusedMessages(await post(production, { query }));
      expect(messages.join(' | ')).toMatch(/introspection/i);
    }
    const key = await createApiKey(production.deps.db, 'graphql-limits-production');
    const res = await post(production, { query: OBTAIN_TOKEN, variables: { input: { APIKey: key.key } } });
    expect(res.statusCode, describeResponse(res)).toBe(200);
    const body = res.json<{ data: { obtainKrakenToken: { token: string; refreshToken: string } }; errors?: unknown }>();
    expect(body.errors).toBeUndefined();
    expect(body.data.obtainKrakenToken.token).toEqual(expect.any(String));
    expect(body.data.obtainKrakenToken.refreshToken).toEqual(expect.any(String));
  });
});
