import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createApiKey, revokeApiKey } from '../../src/auth/api-keys.js';
import { FakeClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { createDeps, type Deps } from '../../src/deps.js';
import { buildApp, type BuiltApp } from '../../src/http/app.js';
import { createLogger, REDACT_PATHS } from '../../src/log.js';
import { createOperator } from '../../src/console/operators.js';
import { QUEUE_NAMES } from '../../src/queue/contract.js';
import { startWorkers, type WorkerSet } from '../../src/queue/workers.js';
import { cookieOf, sessionOf } from '../helpers/console.js';
import { createTestDatabase, deleteRedisPrefix } from '../helpers/context.js';
import { startFakeVendor, type FakeVendor } from '../helpers/fake-vendor.js';
import { accountPayload } from '../helpers/fixtures.js';
import { pollUntil } from '../helpers/poll.js';
import { basicAuth, OBTAIN_TOKEN } from './helpers.js';

/**
 * Issue item 8, "no secret in logs": one service instance logging at `trace` into memory goes through
 * a full run (ObtainToken with an API key and with a refresh token, failed sign-ins, authenticated and
 * failing requests, a 500, a vendor call, a batch uploaded and run by the queue workers, the operator
 * surface: /metrics with HTTP Basic, the console's sign-in, pages and dashboard with a session), and the
 * captured text must contain no credential: API key, its secret part, access and refresh tokens, the
 * value after `Token ` / `Basic ` in Authorization headers, the /metrics password, the console
 * operator's password (right and wrong), the session cookie and its id, the CSRF token, the vendor API
 * key, the token-signing secret.
 */

const NOW = new Date('2026-06-15T12:00:00Z');
const S = 'LOGS_CO';
const TEAM = 'Logs Team';
const DOCS_ROOT = 'suppliers/logs-co';
const TOKEN_SECRET = `log-test-signing-secret-${randomBytes(16).toString('hex')}`;
const OPERATOR = { user: 'ops-logs', password: `operator-pw-${randomBytes(8).toString('hex')}` };
/** A console operator: characters that change when form-encoded, so both spellings are looked for. */
const CONSOLE = { name: 'logs-console', password: `console pw+${randomBytes(8).toString('hex')}/&=` };
const CONSOLE_WRONG = `wrong console pw ${randomBytes(8).toString('hex')}`;
const VENDOR_KEY = `vendor-key-${randomBytes(12).toString('hex')}`;
const WRONG_VENDOR_KEY = `wrong-vendor-key-${randomBytes(12).toString('hex')}`;

const lines: string[] = [];
let logText = '';
let deps: Deps;
let built: BuiltApp;
let app: FastifyInstance;
let vendor: FakeVendor;
let workers: WorkerSet | undefined;
let docsDir: string;
let dropDatabase: (() => Promise<void>) | undefined;
let prefix: string;
const redisUrl = inject('redisUrl');

/** Every credential the run handled, by name; none may appear in the logs. */
const secrets: Record<string, string> = {};
/** Responses of the run, to check the run did what it claims (so the log check is not vacuous). */
const seen: Record<string, LightMyRequestResponse> = {};

const gql = (input: Record<string, unknown>) => app.inject({ method: 'POST', url: '/v1/graphql/', payload: { query: OBTAIN_TOKEN, variables: { input } } });

beforeAll(async () => {
  docsDir = await mkdtemp(path.join(tmpdir(), 'logs-docs-'));
  vendor = await startFakeVendor({ apiKey: VENDOR_KEY });
  const database = await createTestDatabase();
  dropDatabase = database.drop;
  prefix = `tl${randomBytes(5).toString('hex')}`;
  const config = loadConfig({
    NODE_ENV: 'test',
    DATABASE_URL: database.url,
    REDIS_URL: redisUrl,
    REDIS_PREFIX: prefix,
    TOKEN_SECRET,
    LOG_LEVEL: 'trace',
    DOCUMENTS_DIR: docsDir,
    OPERATOR_USER: OPERATOR.user,
    OPERATOR_PASSWORD: OPERATOR.password,
    PAYMENT_VENDORS: JSON.stringify({
      sandbox: { base_url: vendor.baseUrl, api_key: VENDOR_KEY },
      misconfigured: { base_url: vendor.baseUrl, api_key: WRONG_VENDOR_KEY },
    }),
    PAYMENT_VENDOR_TIMEOUT_MS: '5000',
    PAYMENT_VENDOR_RETRIES: '1',
    WORKER_LOCK_MS: '5000',
  });
  // The logger the service would build for LOG_LEVEL=trace (same redaction), writing into memory.
  const log = createLogger('trace', { write: (chunk: string) => void lines.push(chunk) });
  deps = createDeps(config, { log, clock: new FakeClock(NOW), vendorBackoffMs: { min: 5, max: 20 } });
  built = await buildApp(deps);
  app = built.app;
  await app.ready();

  await deps.db.insertInto('import_suppliers').values({ code: S, name: S, status: 'ONGOING', documents_root: DOCS_ROOT, send_customer_emails: false }).execute();
  await deps.db.insertInto('operations_teams').values({ name: TEAM }).execute();
  await deps.documents.put(`${DOCS_ROOT}/statements/s1.pdf`, '%PDF-1.7\nlogs\n');

  // Sign-in with the API key, then with the refresh token; a wrong secret for a real key id; a revoked key.
  const key = await createApiKey(deps.db, 'logs-key');
  secrets['API key'] = key.key;
  secrets['API key secret part'] = key.key.slice(-43);
  const signIn = await gql({ APIKey: key.key });
  seen.signIn = signIn;
  const obtained = (signIn.json() as { data: { obtainKrakenToken: { token: string; refreshToken: string } } }).data.obtainKrakenToken;
  secrets['access token'] = obtained.token;
  secrets['access token signature'] = obtained.token.split('.')[2]!;
  secrets['refresh token'] = obtained.refreshToken;
  secrets['refresh token signature'] = obtained.refreshToken.split('.')[2]!;
  const renewed = await gql({ refreshToken: obtained.refreshToken });
  seen.renewed = renewed;
  const token2 = (renewed.json() as { data: { obtainKrakenToken: { token: string } } }).data.obtainKrakenToken.token;
  secrets['renewed access token'] = token2;
  const wrongSecret = `${key.key.slice(0, -43)}${randomBytes(32).toString('base64url').slice(0, 43)}`;
  secrets['a wrong API key tried'] = wrongSecret;
  seen.badSignIn = await gql({ APIKey: wrongSecret });
  seen.bothSignIn = await gql({ APIKey: key.key, refreshToken: obtained.refreshToken });
  seen.badRefresh = await gql({ refreshToken: `${obtained.refreshToken}x` });
  const revoked = await createApiKey(deps.db, 'logs-revoked');
  secrets['revoked API key'] = revoked.key;
  const revokedToken = ((await gql({ APIKey: revoked.key })).json() as { data: { obtainKrakenToken: { token: string } } }).data.obtainKrakenToken.token;
  secrets['revoked key token'] = revokedToken;
  await revokeApiKey(deps.db, revoked.name, NOW);
  seen.revokedSignIn = await gql({ APIKey: revoked.key });

  const auth = { authorization: `Token ${obtained.token}` };
  const post = (url: string, payload: unknown, headers: Record<string, string> = auth) =>
    app.inject({ method: 'POST', url, payload: typeof payload === 'string' ? payload : JSON.stringify(payload), headers: { 'content-type': 'application/json', ...headers } });

  // Authenticated requests through every kind of endpoint.
  seen.stage = await post('/v1/data-import/account-import-process/create-or-update/', accountPayload(S, 'LOG-1'));
  seen.process = await post('/v1/data-import/account-import-process/process/', { external_account_number: 'LOG-1', import_supplier_code: S, operations_team_name: TEAM });
  const pair = { import_supplier: S, external_account_number: 'LOG-1' };
  seen.notes = await post('/v1/data-import/notes/create/', { ...pair, notes: [{ body: 'Logged note' }] });
  seen.transactions = await post('/v1/data-import/transactions/create/', {
    ...pair,
    transactions: [{ transaction_id: 'LOG-T1', transaction_date: '2026-01-10', amount: '1.23', type: 'CHARGE', reason: 'IMPORTED_CHARGE' }],
  });
  seen.statements = await post('/v1/data-import/historical-statements/create/', {
    ...pair,
    statements: [{ statement_id: 'LOG-S1', bill_period_from_date: '2025-01-01', bill_period_to_date: '2025-01-31', issued_date: '2025-02-01', number: '1', gross_amount: '9.99', statement_path: 'statements/s1.pdf' }],
  });
  seen.payment = await post('/v1/data-import/payment-instruction/create/', { ...pair, vendor: 'sandbox', reference: 'CARD-LOG-1', type: 'CARD' });
  seen.paymentRefused = await post('/v1/data-import/payment-instruction/create/', { ...pair, vendor: 'misconfigured', reference: 'CARD-LOG-2', type: 'CARD' });
  seen.status = await app.inject({ method: 'GET', url: `/v1/data-import/account-transfer-status/${S}/LOG-1/`, headers: auth });
  seen.list = await app.inject({ method: 'GET', url: `/v1/data-import/all-account-import-processes/${S}/`, headers: { authorization: `Token ${token2}` } });

  // Failing requests: validation, malformed JSON, unknown route, refused credentials of every kind, a 500.
  seen.invalid = await post('/v1/data-import/validate-account/', { ...accountPayload(S, 'LOG-2'), billing_postcode: 'nope' });
  seen.malformed = await post('/v1/data-import/validate-account/', `{"import_supplier":"${S}", "token": "${obtained.token}"`);
  seen.notFound = await app.inject({ method: 'GET', url: '/v1/data-import/no-such-thing/', headers: auth });
  seen.bearer = await app.inject({ method: 'GET', url: `/v1/data-import/all-account-import-processes/${S}/`, headers: { authorization: `Bearer ${obtained.token}` } });
  seen.refreshAsAccess = await app.inject({ method: 'GET', url: `/v1/data-import/all-account-import-processes/${S}/`, headers: { authorization: `Token ${obtained.refreshToken}` } });
  seen.revokedToken = await app.inject({ method: 'GET', url: `/v1/data-import/all-account-import-processes/${S}/`, headers: { authorization: `Token ${revokedToken}` } });
  // A 500 (the NUL defect pinned in fuzz.test.ts): its error log must not carry the request's credentials either.
  seen.serverError = await post('/v1/data-import/validate-account/', JSON.stringify(accountPayload(S, 'NUL')).replace('"NUL"', '"a\\u0000b"'));

  // The operator surface, with right and wrong credentials.
  const basic = basicAuth(OPERATOR.user, OPERATOR.password);
  secrets['operator password'] = OPERATOR.password;
  secrets['operator Basic credentials'] = basic.authorization.slice('Basic '.length);
  const wrongBasic = basicAuth(OPERATOR.user, `${OPERATOR.password}-wrong`);
  secrets['a wrong operator password tried'] = `${OPERATOR.password}-wrong`;
  secrets['wrong Basic credentials'] = wrongBasic.authorization.slice('Basic '.length);
  seen.metrics = await app.inject({ method: 'GET', url: '/metrics', headers: basic });
  seen.metricsRefused = await app.inject({ method: 'GET', url: '/metrics', headers: wrongBasic });
  // Basic opens nothing under /admin any more: refused, and its credentials still kept out of the logs.
  seen.dashboardBasicRefused = await app.inject({ method: 'GET', url: '/admin/queues/api/queues', headers: basic });

  // The console: an operator account, a wrong and a right sign-in, then the pages and the dashboard with the session cookie.
  await createOperator(deps.db, CONSOLE.name, 'operator', CONSOLE.password);
  secrets['console operator password'] = CONSOLE.password;
  secrets['console operator password, form-encoded'] = new URLSearchParams({ p: CONSOLE.password }).toString().slice(2);
  secrets['a wrong console password tried'] = CONSOLE_WRONG;
  const signInForm = (password: string) =>
    app.inject({ method: 'POST', url: '/admin/sign-in', payload: new URLSearchParams({ name: CONSOLE.name, password, next: '/admin/queues' }).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  seen.consoleRefused = await signInForm(CONSOLE_WRONG);
  seen.consoleSignIn = await signInForm(CONSOLE.password);
  const cookie = cookieOf(seen.consoleSignIn);
  const cookieValue = cookie.slice('di_console='.length);
  secrets['console session cookie'] = cookieValue;
  secrets['console session cookie, decoded'] = decodeURIComponent(cookieValue);
  secrets['console session id'] = decodeURIComponent(cookieValue).split('.')[0]!;
  const session = sessionOf(app, cookie);
  seen.consolePage = await session.get('/admin/');
  seen.dashboard = await session.get('/admin/queues/api/queues', { accept: 'application/json' });
  seen.consoleNotFound = await session.get(`/admin/batches/00000000-0000-4000-8000-000000000000`);
  seen.consoleNoCsrf = await app.inject({ method: 'POST', url: '/admin/sign-out', payload: '_csrf=forged', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' } });
  const csrf = await session.token();
  secrets['console CSRF token'] = csrf;
  seen.consoleSignOut = await app.inject({ method: 'POST', url: '/admin/sign-out', payload: new URLSearchParams({ _csrf: csrf }).toString(), headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' } });
  seen.consoleSignedOut = await session.get('/admin/queues/api/queues', { accept: 'application/json' });

  // A batch, uploaded over HTTP and run by the queue workers (vendor call included).
  const bundle = (ext: string) =>
    JSON.stringify({
      account: accountPayload(S, ext),
      notes: [{ body: `Batch note ${ext}` }],
      transactions: [{ transaction_id: `${ext}-T`, transaction_date: '2026-01-10', amount: '4.56', type: 'CREDIT', reason: 'IMPORTED_CREDIT' }],
      payment_instruction: { vendor: 'sandbox', reference: `CARD-${ext}`, type: 'CARD' },
    });
  seen.upload = await app.inject({
    method: 'POST',
    url: `/v1/data-import/batches/?import_supplier=${S}&operations_team_name=${encodeURIComponent(TEAM)}`,
    payload: `${bundle('LOG-B1')}\n${bundle('LOG-B2')}\nnot json\n`,
    headers: { ...auth, 'content-type': 'application/x-ndjson', 'idempotency-key': 'logs-batch-1' },
  });
  const batchId = (seen.upload.json() as { batch_id: string }).batch_id;
  workers = startWorkers(deps, built.services, { queues: QUEUE_NAMES });
  const finished = await pollUntil(
    async () => {
      const res = await app.inject({ method: 'GET', url: `/v1/data-import/batches/${batchId}/`, headers: auth });
      const body = res.json() as { state: string };
      return body.state === 'RUNNING' || body.state === 'UPLOADING' ? null : body;
    },
    { timeoutMs: 45_000, intervalMs: 100, what: 'the batch to end' },
  );
  seen.batch = { statusCode: 200, json: () => finished } as unknown as LightMyRequestResponse;
  await workers.close(5_000);
  workers = undefined;

  secrets['vendor API key'] = VENDOR_KEY;
  secrets['misconfigured vendor API key'] = WRONG_VENDOR_KEY;
  secrets['token-signing secret'] = TOKEN_SECRET;
  logText = lines.join('');
  // DUMP_LOGS=<file> keeps the captured log for inspection.
  if (process.env.DUMP_LOGS) await writeFile(process.env.DUMP_LOGS, logText);
}, 90_000);

afterAll(async () => {
  await workers?.close(1_000);
  await app?.close();
  await deps?.close();
  await vendor?.close();
  if (prefix) await deleteRedisPrefix(redisUrl, prefix);
  await dropDatabase?.();
  if (docsDir) await rm(docsDir, { recursive: true, force: true });
});

/** The URLs of the requests the log shows arriving. */
const parsedRequests = () =>
  lines.map((l) => JSON.parse(l) as { msg?: string; req?: { url?: string } }).filter((l) => l.msg === 'incoming request').map((l) => l.req?.url ?? '');

describe('the logs of a full run', () => {
  it('did the run it claims (the log check below is not vacuous)', () => {
    expect(seen.signIn!.statusCode).toBe(200);
    expect(seen.renewed!.json()).toMatchObject({ data: { obtainKrakenToken: { token: expect.any(String) } } });
    for (const k of ['badSignIn', 'bothSignIn', 'badRefresh', 'revokedSignIn'] as const) expect((seen[k]!.json() as { errors?: unknown[] }).errors, k).toHaveLength(1);
    expect(seen.stage!.statusCode).toBe(201);
    expect(seen.process!.statusCode).toBe(201);
    expect(seen.notes!.statusCode).toBe(201);
    expect(seen.transactions!.statusCode).toBe(201);
    expect(seen.statements!.statusCode).toBe(201);
    expect(seen.payment!.statusCode, seen.payment!.body).toBe(201);
    expect(seen.paymentRefused!.statusCode).toBeGreaterThanOrEqual(400);
    expect(seen.status!.statusCode).toBe(200);
    expect(seen.list!.statusCode).toBe(200);
    expect(seen.invalid!.statusCode).toBe(400);
    expect(seen.malformed!.statusCode).toBe(400);
    expect(seen.notFound!.statusCode).toBe(404);
    for (const k of ['bearer', 'refreshAsAccess', 'revokedToken', 'metricsRefused'] as const) expect(seen[k]!.statusCode, k).toBe(401);
    expect(seen.serverError!.statusCode).toBeGreaterThanOrEqual(400);
    expect(seen.metrics!.statusCode).toBe(200);
    expect(seen.dashboardBasicRefused!.statusCode).toBe(401);
    expect(seen.consoleRefused!.statusCode).toBe(401);
    expect(seen.consoleSignIn!.statusCode).toBe(303);
    expect(seen.consolePage!.statusCode).toBe(200);
    expect(seen.dashboard!.statusCode).toBe(200);
    expect(seen.consoleNotFound!.statusCode).toBe(404);
    expect(seen.consoleNoCsrf!.statusCode).toBe(403);
    expect(seen.consoleSignOut!.statusCode).toBe(303);
    expect(seen.consoleSignedOut!.statusCode).toBe(401);
    expect(parsedRequests().some((url) => url.startsWith('/admin/sign-in'))).toBe(true);
    expect(parsedRequests().some((url) => url.startsWith('/admin/queues/api/queues'))).toBe(true);
    expect(seen.upload!.statusCode).toBe(202);
    expect(seen.batch!.json()).toMatchObject({ total_items: 3, succeeded: 2, failed: 1 });

    // Requests were logged (Fastify's request logging is on), at trace level, and as JSON lines.
    expect(lines.length).toBeGreaterThan(50);
    const parsed = lines.map((l) => JSON.parse(l) as { level: number; msg?: string; req?: { url?: string } });
    expect(parsed.some((l) => l.msg === 'incoming request' && l.req?.url?.startsWith('/v1/graphql'))).toBe(true);
    expect(parsed.some((l) => l.msg === 'request completed')).toBe(true);
    expect(parsed.some((l) => l.level >= 50)).toBe(true); // the 500 and the vendor refusal were logged as errors
  });

  it('contain no credential: API keys, tokens, refresh tokens, Authorization values, passwords, vendor keys, the signing secret', () => {
    expect(Object.keys(secrets).length).toBeGreaterThanOrEqual(23);
    const found = Object.entries(secrets)
      .filter(([, value]) => logText.includes(value))
      .map(([name, value]) => {
        const at = logText.indexOf(value);
        return `${name} in: …${logText.slice(Math.max(0, at - 200), at + 40)}…`;
      });
    expect(found).toEqual([]);
  });

  it('contain no Authorization header value at all, whatever its scheme', () => {
    for (const line of lines) {
      expect(line).not.toMatch(/"authorization"\s*:\s*"(?!\[redacted\])/i);
      expect(line).not.toMatch(/(Token|Bearer|Basic) [A-Za-z0-9+/=_.-]{20,}/);
      // Nor any cookie: the console's session id travels in one.
      expect(line).not.toMatch(/"(cookie|set-cookie)"\s*:\s*"(?!\[redacted\])/i);
      expect(line).not.toMatch(/di_console=[^;"\s]/);
    }
  });
});

describe('the redaction itself', () => {
  it('blanks every configured path, and the shapes the service logs credentials in', () => {
    const out: string[] = [];
    const log = createLogger('trace', { write: (s: string) => void out.push(s) });
    const secret = `s3cr3t-${randomBytes(8).toString('hex')}`;
    log.info({ req: { headers: { authorization: `Token ${secret}`, cookie: secret } } }, 'a');
    log.info({ headers: { authorization: secret } }, 'b');
    log.info({ authorization: secret, token: secret, refreshToken: secret, apiKey: secret, APIKey: secret, api_key: secret }, 'c');
    log.info({ input: { APIKey: secret, refreshToken: secret, token: secret, apiKey: secret } }, 'd');
    expect(out.join('')).not.toContain(secret);
    expect(out.join('')).toContain('[redacted]');
    expect(REDACT_PATHS).toEqual(expect.arrayContaining(['req.headers.authorization', 'token', 'refreshToken', 'APIKey']));
  });
});
