import { createHash } from 'node:crypto';
import type * as Crypto from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createApiKey, verifyApiKey } from '../../src/auth/api-keys.js';
import { TokenService } from '../../src/auth/tokens.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { createOperator } from '../../src/console/operators.js';
import { LocalDocumentStore } from '../../src/documents/local-store.js';
import { resolveDocumentKey } from '../../src/documents/document-store.js';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { accountPayload } from '../helpers/fixtures.js';
import { basicAuth, describeResponse, envelopeProblems } from './helpers.js';

/**
 * Issue item 8, inputs: strings that look like SQL or HTML are stored and returned byte for byte;
 * oversized bodies get 413 in the envelope; the NDJSON upload's line length and line count limits;
 * document paths never leave the supplier's root; token secrets and API key storage.
 */

// A pass-through spy on timingSafeEqual, to see that secrets are compared in constant time.
vi.mock('node:crypto', async (importOriginal) => {
  const actual = await importOriginal<typeof Crypto>();
  return { ...actual, default: actual, timingSafeEqual: vi.fn(actual.timingSafeEqual) };
});
const { timingSafeEqual } = await import('node:crypto');

const NOW = new Date('2026-06-15T12:00:00Z');
const S = 'INPUT_CO';
const OTHER = 'OTHER_CO';
const TEAM = 'Input Team';
const DOCS_ROOT = 'suppliers/input-co';
const EXT = 'IN-ACC-1';
const OPERATOR = { user: 'ops-input', password: 'input-operator-password' };

let ctx: TestContext;
let auth: { authorization: string };
let docsDir: string;
let outsideDir: string;

const post = (url: string, payload: unknown, headers: Record<string, string> = {}) =>
  ctx.app.inject({ method: 'POST', url, payload: typeof payload === 'string' || Buffer.isBuffer(payload) ? payload : JSON.stringify(payload), headers: { 'content-type': 'application/json', ...auth, ...headers } });
const rows = async <T>(sql: string, params: unknown[] = []) => (await ctx.deps.pool.query(sql, params)).rows as T[];

function expectEnvelope(res: LightMyRequestResponse, status: number, code: string): Array<{ code: string; attr: string | null; detail: string }> {
  expect(res.statusCode, describeResponse(res)).toBe(status);
  expect(envelopeProblems(res), describeResponse(res)).toEqual([]);
  const body = res.json() as { code: string; errors: Array<{ code: string; attr: string | null; detail: string }> };
  expect(body.code, describeResponse(res)).toBe(code);
  return body.errors;
}

beforeAll(async () => {
  docsDir = await mkdtemp(path.join(tmpdir(), 'input-docs-'));
  outsideDir = await mkdtemp(path.join(tmpdir(), 'input-outside-'));
  ctx = await createTestContext({
    now: NOW,
    env: { DOCUMENTS_DIR: docsDir, BATCH_MAX_LINE_BYTES: '2048', BATCH_MAX_LINES: '50', OPERATOR_USER: OPERATOR.user, OPERATOR_PASSWORD: OPERATOR.password },
  });
  await ctx.createSupplier(S, { documentsRoot: DOCS_ROOT });
  await ctx.createSupplier(OTHER, { documentsRoot: 'suppliers/other-co' });
  await ctx.createTeam(TEAM);
  auth = await ctx.authHeaders();
  await ctx.deps.documents.put(`${DOCS_ROOT}/docs/a.pdf`, '%PDF-1.4\ninput\n');
  // Documents a path escaping the root would reach: another supplier's, and a file outside the store.
  await ctx.deps.documents.put('suppliers/other-co/secret.pdf', '%PDF-1.4\nsecret\n');
  await writeFile(path.join(outsideDir, 'outside.pdf'), '%PDF-1.4\noutside\n');
  const staged = await post('/v1/data-import/account-import-process/create-or-update/', accountPayload(S, EXT));
  expect(staged.statusCode, staged.body).toBe(201);
  const processed = await post('/v1/data-import/account-import-process/process/', { external_account_number: EXT, import_supplier_code: S, operations_team_name: TEAM });
  expect(processed.statusCode, processed.body).toBe(201);
}, 60_000);

afterAll(async () => {
  await ctx?.close();
  if (docsDir) await rm(docsDir, { recursive: true, force: true });
  if (outsideDir) await rm(outsideDir, { recursive: true, force: true });
});

/* ------------------------------------------------------------------------------------------ */

const LOOKALIKES = [
  "Robert'); DROP TABLE accounts;--",
  "' OR '1'='1' --",
  '1; SELECT pg_sleep(10); --',
  '$1 $$ $tag$ ${x} {{x}} %s %n',
  '<script>alert(1)</script>',
  '"><img src=x onerror=alert(document.cookie)>',
  '&lt;b&gt; &amp; &#x3C;',
  '%00',
  '%27%3B--',
  'back\\slash and "double" and \'single\' quotes',
  'Zoë Ñúñez 李小龍 محمد',
  'emoji 👩‍💻 🏳️‍🌈 𝔘𝔫𝔦𝔠𝔬𝔡𝔢',
  '\u202Eevil right-to-left\u202C',
  'e\u0301 (NFD) and \u00e9 (NFC) stay as sent',
  'zero\u200bwidth\ufeffBOM',
  'line\u2028separator\u2029',
  'tab\tnewline\nreturn\r',
  '  leading and trailing spaces  ',
  '=HYPERLINK("http://x")',
];

describe('strings that look like SQL or HTML are stored and returned verbatim', () => {
  it('billing_name: validate echoes it, stage and process store it byte for byte', async () => {
    for (const [i, s] of LOOKALIKES.entries()) {
      const ext = `IN-SQL-${i}`;
      const validated = await post('/v1/data-import/validate-account/', accountPayload(S, ext, { billing_name: s }));
      expect(validated.statusCode, `${JSON.stringify(s)}: ${validated.body}`).toBe(200);
      expect(validated.headers['content-type']).toMatch(/^application\/json/);
      expect((validated.json() as { billing_name: string }).billing_name).toBe(s);

      expect((await post('/v1/data-import/account-import-process/create-or-update/', accountPayload(S, ext, { billing_name: s }))).statusCode).toBe(201);
      const processed = await post('/v1/data-import/account-import-process/process/', { external_account_number: ext, import_supplier_code: S, operations_team_name: TEAM });
      expect(processed.statusCode, processed.body).toBe(201);

      const [row] = await rows<{ billing_name: string; staged: string; bytes: string }>(
        `SELECT a.billing_name, p.payload->>'billing_name' AS staged, encode(convert_to(a.billing_name, 'UTF8'), 'hex') AS bytes
           FROM accounts a JOIN account_import_processes p ON p.account_id = a.id WHERE a.external_account_number = $1`,
        [ext],
      );
      expect(row).toEqual({ billing_name: s, staged: s, bytes: Buffer.from(s, 'utf8').toString('hex') });
    }
    // And the statement in the first string did nothing.
    expect(Number((await rows<{ n: string }>('SELECT count(*) AS n FROM accounts'))[0]!.n)).toBeGreaterThan(LOOKALIKES.length);
  });

  it('a note body: the 201 returns it and the row holds it', async () => {
    const res = await post('/v1/data-import/notes/create/', { import_supplier: S, external_account_number: EXT, notes: LOOKALIKES.map((body) => ({ body })) });
    expect(res.statusCode, res.body).toBe(201);
    expect((res.json() as Array<{ body: string; status: string }>).map((n) => n.body)).toEqual(LOOKALIKES);
    const stored = await rows<{ body: string }>(
      `SELECT n.body FROM account_notes n JOIN accounts a ON a.id = n.account_id WHERE a.external_account_number = $1 AND n.origin = 'IMPORTED' ORDER BY n.id`,
      [EXT],
    );
    expect(stored.map((r) => r.body)).toEqual(LOOKALIKES);
  });

  it('a transaction note and display_note: the 201 returns them and the rows hold them', async () => {
    const transactions = LOOKALIKES.map((s, i) => ({
      transaction_id: `IN-T-${i}`,
      transaction_date: '2026-01-10',
      amount: '1.00',
      type: 'CHARGE',
      reason: 'IMPORTED_CHARGE',
      note: s,
      display_note: s,
    }));
    const res = await post('/v1/data-import/transactions/create/', { import_supplier: S, external_account_number: EXT, transactions });
    expect(res.statusCode, res.body).toBe(201);
    const results = (res.json() as { results: Array<{ transaction_data: { note: string; display_note: string } }> }).results;
    expect(results.map((r) => r.transaction_data.note)).toEqual(LOOKALIKES);
    expect(results.map((r) => r.transaction_data.display_note)).toEqual(LOOKALIKES);
    const stored = await rows<{ note: string; display_note: string }>(
      `SELECT t.note, t.display_note FROM account_transactions t JOIN accounts a ON a.id = t.account_id
        WHERE a.external_account_number = $1 AND t.transaction_id LIKE 'IN-T-%' ORDER BY t.id`,
      [EXT],
    );
    expect(stored.map((r) => r.note)).toEqual(LOOKALIKES);
    expect(stored.map((r) => r.display_note)).toEqual(LOOKALIKES);
  });

  // A lone surrogate has no UTF-8 form: PostgreSQL cannot hold it, so it cannot be stored verbatim.
  // Document paths already refuse one ("not valid Unicode"); other text fields accept it with 201 and
  // the driver silently stores U+FFFD instead (stage and batch uploads answer 500: fuzz.test.ts).
  it('a note body with a lone surrogate is refused (400), not silently stored as U+FFFD', async () => {
    const res = await post('/v1/data-import/notes/create/', { import_supplier: S, external_account_number: EXT, notes: [{ body: 'lone \ud800 surrogate' }] });
    expect(res.statusCode, res.body).toBe(400);
  });
});

/* ------------------------------------------------------------------------------------------ */

describe('oversized bodies', () => {
  const MIB = 1024 * 1024;

  it('over 10 MiB: 413 payload_too_large in the envelope, on every JSON endpoint, and nothing written', async () => {
    const before = await ctx.tableCounts();
    const body = JSON.stringify({ import_supplier: S, external_account_number: EXT, notes: [{ body: 'x'.repeat(10 * MIB) }] });
    expect(Buffer.byteLength(body)).toBeGreaterThan(10 * MIB);
    for (const url of [
      '/v1/data-import/validate-account/',
      '/v1/data-import/account-import-process/create-or-update/',
      '/v1/data-import/account-import-process/process/',
      '/v1/data-import/notes/create/',
      '/v1/data-import/transactions/create/',
      '/v1/data-import/historical-statements/create/',
      '/v1/data-import/payment-instruction/create/',
    ]) {
      expectEnvelope(await post(url, body), 413, 'payload_too_large');
    }
    expect(await ctx.tableCounts()).toEqual(before);
  });

  it('just under 10 MiB is read (a field-level 400, not 413)', async () => {
    const skeleton = JSON.stringify({ import_supplier: S, external_account_number: EXT, notes: [{ body: '' }] });
    const body = skeleton.replace('"body":""', `"body":"${'x'.repeat(10 * MIB - Buffer.byteLength(skeleton))}"`);
    expect(Buffer.byteLength(body)).toBe(10 * MIB);
    const errors = expectEnvelope(await post('/v1/data-import/notes/create/', body), 400, 'invalid_request');
    expect(errors.map((e) => `${e.code}@${e.attr}`)).toEqual(['max_length@notes.0.body']);
  });
});

/* ------------------------------------------------------------------------------------------ */

describe('NDJSON upload limits (BATCH_MAX_LINE_BYTES=2048, BATCH_MAX_LINES=50)', () => {
  const uploadUrl = `/v1/data-import/batches/?import_supplier=${S}&operations_team_name=${encodeURIComponent(TEAM)}`;
  const upload = (body: string) => post(uploadUrl, body, { 'content-type': 'application/x-ndjson' });
  const bundle = (ext: string, overrides: Record<string, unknown> = {}) => JSON.stringify({ account: accountPayload(S, ext, overrides) });
  /** A line of exactly `bytes` UTF-8 bytes: a bundle whose account carries padding. */
  const lineOf = (bytes: number) => {
    const skeleton = JSON.stringify({ account: { external_account_number: 'PAD', padding: '' } });
    const line = skeleton.replace('"padding":""', `"padding":"${'x'.repeat(bytes - skeleton.length)}"`);
    expect(Buffer.byteLength(line)).toBe(bytes);
    return line;
  };
  async function items(batchId: string) {
    const res = await ctx.app.inject({ method: 'GET', url: `/v1/data-import/batches/${batchId}/items/`, headers: auth });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as Array<{ line: number; stage: string; state: string; error: { code: string; detail: string } | null }>;
  }

  it('a line over the limit is a failed item line_too_long at its own line number; the other lines are fine', async () => {
    expect(Buffer.byteLength(bundle('IN-NL-1'))).toBeLessThan(2048);
    // Under 2048 characters but over 2048 bytes: the limit is in bytes.
    const multibyte = JSON.stringify({ account: { external_account_number: 'PAD', padding: '€'.repeat(700) } });
    expect(multibyte.length).toBeLessThan(2048);
    expect(Buffer.byteLength(multibyte)).toBeGreaterThan(2048);
    const body = [bundle('IN-NL-1'), bundle('IN-NL-2', { billing_name: 'y'.repeat(2100) }), '', bundle('IN-NL-3'), lineOf(2048), lineOf(2049), multibyte].join('\n');
    const res = await upload(`${body}\n`);
    expect(res.statusCode, res.body).toBe(202);
    const got = await items((res.json() as { batch_id: string }).batch_id);
    expect(got.map((i) => [i.line, i.stage, i.state, i.error?.code ?? null])).toEqual([
      [1, 'validate', 'waiting', null],
      [2, 'parse', 'failed', 'line_too_long'],
      // line 3 is blank: skipped but counted
      [4, 'validate', 'waiting', null],
      [5, 'validate', 'waiting', null], // exactly 2048 bytes: within the limit
      [6, 'parse', 'failed', 'line_too_long'], // 2049 bytes
      [7, 'parse', 'failed', 'line_too_long'], // the limit is in bytes
    ]);
    expect(got.find((i) => i.line === 2)!.error).toEqual({ detail: expect.any(String), code: 'line_too_long', errors: [] });
  });

  // The line reader strips a CR before LF as part of the line ending ("handles CRLF"), but counts it
  // against the limit first: the same 2048-byte line is accepted with LF and line_too_long with CRLF.
  it('the limit applies to the line, not its CRLF ending: a 2048-byte line ending in CRLF is accepted', async () => {
    const res = await upload(`${lineOf(2048)}\r\n${lineOf(2048)}\n`);
    expect(res.statusCode, res.body).toBe(202);
    const got = await items((res.json() as { batch_id: string }).batch_id);
    expect(got.map((i) => [i.line, i.stage, i.error?.code ?? null])).toEqual([
      [1, 'validate', null],
      [2, 'validate', null],
    ]);
  });

  it('more lines than BATCH_MAX_LINES: 413 payload_too_large in the envelope, and no batch or item left behind', async () => {
    const before = await ctx.tableCounts();
    const lines = Array.from({ length: 51 }, (_, i) => bundle(`IN-MANY-${i}`));
    expectEnvelope(await upload(`${lines.join('\n')}\n`), 413, 'payload_too_large');
    const after = await ctx.tableCounts();
    expect({ batches: after.batches, batch_items: after.batch_items }).toEqual({ batches: before.batches, batch_items: before.batch_items });
    expect(after).toEqual(before);
  });

  it('exactly BATCH_MAX_LINES lines are accepted', async () => {
    const lines = Array.from({ length: 50 }, (_, i) => bundle(`IN-FIFTY-${i}`));
    const res = await upload(`${lines.join('\n')}\n`);
    expect(res.statusCode, res.body).toBe(202);
    expect(res.json()).toMatchObject({ total_items: 50 });
  });
});

/* ------------------------------------------------------------------------------------------ */

const ESCAPES = [
  '../other-co/secret.pdf',
  '%2e%2e/other-co/secret.pdf',
  '%2E%2E%2Fother-co%2Fsecret.pdf',
  '..%2fother-co%2fsecret.pdf',
  '%252e%252e/other-co/secret.pdf',
  '..\\other-co\\secret.pdf',
  'docs\\..\\..\\other-co\\secret.pdf',
  'docs/../../other-co/secret.pdf',
  'docs/./a.pdf',
  './docs/a.pdf',
  'docs//a.pdf',
  'docs/a.pdf/',
  // One leading / is the supplier's root (decisions §1): '/etc/passwd' is `<root>/etc/passwd`, inside it.
  // What follows that slash is checked like any path.
  '//etc/passwd',
  '/../etc/passwd',
  'C:\\Windows\\win.ini',
  'C:/Windows/win.ini',
  'a\u0000b',
  'docs/a.pdf\u0000.txt',
  '%00',
  '\u0001docs/a.pdf',
  '．．/other-co/secret.pdf', // fullwidth full stops
  '..／other-co／secret.pdf', // fullwidth solidus
  '\u2025/other-co/secret.pdf', // two dot leader
  '\u2024\u2024/other-co/secret.pdf', // one dot leaders
  'docs/\ud800.pdf',
  '..',
  '.',
  '/',
  `docs/${'é'.repeat(600)}.pdf`, // under 1024 characters, over 1024 bytes
];

/** Paths PostgreSQL could not even store (NUL, lone surrogates) are refused by the body parser, before any path rule. */
// eslint-disable-next-line no-control-regex -- NUL is what it looks for
const UNSTORABLE = (p: string) => /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(p);

describe('document paths can never leave the supplier root', () => {
  it('notes: every escape is refused with invalid_document_path at its attr, and nothing is written', async () => {
    const before = await ctx.tableCounts();
    for (const p of ESCAPES) {
      const res = await post('/v1/data-import/notes/create/', { import_supplier: S, external_account_number: EXT, notes: [{ body: 'doc', document_paths: [{ document_path: p }] }] });
      if (UNSTORABLE(p)) {
        expectEnvelope(res, 400, 'invalid_characters');
        continue;
      }
      const errors = expectEnvelope(res, 400, 'invalid_request');
      expect(errors.map((e) => `${e.code}@${e.attr}`), JSON.stringify(p)).toEqual(['invalid_document_path@notes.0.document_paths.0.document_path']);
    }
    expect(await ctx.tableCounts()).toEqual(before);
  });

  it('historical statements: every escape is refused with invalid_document_path at statement_path', async () => {
    const before = await ctx.tableCounts();
    for (const [i, p] of ESCAPES.entries()) {
      const statement = { statement_id: `IN-ST-${i}`, bill_period_from_date: '2024-01-01', bill_period_to_date: '2024-01-31', issued_date: '2024-02-01', number: '1', gross_amount: '1', statement_path: p };
      const res = await post('/v1/data-import/historical-statements/create/', { import_supplier: S, external_account_number: EXT, statements: [statement] });
      if (UNSTORABLE(p)) {
        expectEnvelope(res, 400, 'invalid_characters');
        continue;
      }
      const errors = expectEnvelope(res, 400, 'invalid_request');
      expect(errors.map((e) => `${e.code}@${e.attr}`), JSON.stringify(p)).toEqual(['invalid_document_path@statements.0.statement_path']);
    }
    expect(await ctx.tableCounts()).toEqual(before);
  });

  it('the controls: a path inside the root works, a missing one is document_not_found', async () => {
    const ok = await post('/v1/data-import/notes/create/', { import_supplier: S, external_account_number: EXT, notes: [{ document_paths: [{ document_path: 'docs/a.pdf' }] }] });
    expect(ok.statusCode, ok.body).toBe(201);
    const missing = await post('/v1/data-import/notes/create/', { import_supplier: S, external_account_number: EXT, notes: [{ document_paths: [{ document_path: 'docs/missing.pdf' }] }] });
    expect(expectEnvelope(missing, 400, 'invalid_request').map((e) => e.code)).toEqual(['document_not_found']);
  });

  it('property: any key resolveDocumentKey accepts is the root, a slash and the path, with no way out under any decoding', () => {
    const alphabet = fc.constantFrom('.', '/', '\\', '%', '2', 'e', 'E', 'f', 'F', '5', 'c', 'a', ':', 'C', '\u0000', '\uff0e', '\uff0f', '\u2024', '\u2025', '\ufe52', '\u2215', '\u2044', ' ', '~', 'é');
    const root = 'suppliers/input-co';
    fc.assert(
      fc.property(fc.string({ unit: alphabet, maxLength: 24 }), (p) => {
        const r = resolveDocumentKey(root, p);
        if (!r.ok) return;
        // One leading / names the root itself (decisions §1).
        expect(r.key).toBe(`${root}/${p.startsWith('/') ? p.slice(1) : p}`);
        const views = [r.key, r.key.normalize('NFKC'), r.key.replaceAll('\\', '/')];
        try {
          views.push(decodeURIComponent(r.key), decodeURIComponent(decodeURIComponent(r.key)));
        } catch {
          // not decodable: nothing a decoder would turn into a way out
        }
        for (const v of views) {
          expect(path.posix.normalize(v), `${JSON.stringify(p)} seen as ${JSON.stringify(v)}`).toBe(v);
          expect(v.startsWith(`${root}/`)).toBe(true);
          expect(v.split('/').some((seg) => seg === '..' || seg === '.' || seg === '')).toBe(false);
        }
      }),
      { numRuns: 5000, seed: 20261122 },
    );
  });

  it('the local store refuses a key that would leave its folder', async () => {
    const store = new LocalDocumentStore(docsDir);
    const escape = path.relative(docsDir, path.join(outsideDir, 'outside.pdf'));
    expect(escape.startsWith('..')).toBe(true);
    for (const key of [escape, `suppliers/${escape}`, path.join(outsideDir, 'outside.pdf')]) {
      const head = await store.head(key).then(
        (v) => ({ ok: true, v }),
        (err: Error) => ({ ok: false, v: err.message }),
      );
      expect(head.ok && head.v !== null, `${key}: ${JSON.stringify(head)}`).toBe(false);
      const start = await store.readStart(key, 4).then(
        (v) => v,
        () => null,
      );
      expect(start).toBeNull();
    }
  });
});

/* ------------------------------------------------------------------------------------------ */

describe('tokens and API keys', () => {
  const env = (secret: string, extra: Record<string, string> = {}) => ({ NODE_ENV: 'test', TOKEN_SECRET: secret, ...extra });

  it('TOKEN_SECRET must be at least 32 bytes (counted in bytes, not characters)', () => {
    for (const short of ['x'.repeat(31), '€'.repeat(10) /* 30 bytes */, 'short']) {
      expect(() => loadConfig(env(short)), JSON.stringify(short)).toThrow(ConfigError);
      expect(() => loadConfig(env(short))).toThrow(/TOKEN_SECRET/);
      expect(() => new TokenService(short, () => NOW)).toThrow(/32 bytes/);
    }
    for (const fine of ['x'.repeat(32), '€'.repeat(11) /* 33 bytes */, 'é'.repeat(16) /* 32 bytes */]) {
      expect(loadConfig(env(fine)).tokenSecret).toBe(fine);
      expect(() => new TokenService(fine, () => NOW)).not.toThrow();
    }
    expect(() => loadConfig({ NODE_ENV: 'production' }), 'production without a secret').toThrow(/TOKEN_SECRET/);
  });

  it('tokens are HS256 with the algorithm pinned: HS384, HS512 and alg none are refused even with the right secret', async () => {
    const secret = 'k'.repeat(40);
    const tokens = new TokenService(secret, () => NOW);
    const { token } = await tokens.issue('1', 'access');
    const [header, payload] = token.split('.');
    expect(JSON.parse(Buffer.from(header!, 'base64url').toString())).toEqual({ alg: 'HS256', typ: 'JWT' });
    expect(await tokens.verify(token, 'access')).toMatchObject({ ok: true });

    const { SignJWT } = await import('jose');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString()) as Record<string, unknown>;
    for (const alg of ['HS384', 'HS512'] as const) {
      const other = await new SignJWT(claims).setProtectedHeader({ alg, typ: 'JWT' }).sign(new TextEncoder().encode(secret));
      expect(await tokens.verify(other, 'access'), alg).toEqual({ ok: false, reason: 'invalid' });
    }
    const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${payload}.`;
    expect(await tokens.verify(none, 'access')).toEqual({ ok: false, reason: 'invalid' });
    // The same header and payload re-signed with the right algorithm but a different secret.
    const forged = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(new TextEncoder().encode('f'.repeat(40)));
    expect(await tokens.verify(forged, 'access')).toEqual({ ok: false, reason: 'invalid' });
  });

  it('api_keys rows hold no plain key: only a SHA-256 of the secret part', async () => {
    const key = await createApiKey(ctx.deps.db, 'input-storage-check');
    const secret = key.key.split('_').slice(2).join('_');
    expect(key.key).toMatch(/^dik_[A-Za-z0-9]{12}_[A-Za-z0-9_-]{43}$/);
    const [row] = await rows<{ dump: string; secret_hash: Buffer; key_id: string }>('SELECT row_to_json(k)::text AS dump, k.secret_hash, k.key_id FROM api_keys k WHERE k.id = $1', [key.id]);
    expect(row!.dump).not.toContain(secret);
    expect(row!.dump).not.toContain(key.key);
    expect(row!.dump).not.toContain(Buffer.from(secret).toString('hex'));
    expect(row!.secret_hash.equals(createHash('sha256').update(secret).digest())).toBe(true);
    expect(key.key).toContain(row!.key_id);
    // Nowhere else in the database either.
    const everywhere = await rows<{ hit: string }>(
      `SELECT table_name AS hit FROM information_schema.tables t
        WHERE table_schema = 'public' AND query_to_xml(format('SELECT * FROM %I', table_name), true, false, '')::text LIKE '%' || $1 || '%'`,
      [secret],
    );
    expect(everywhere).toEqual([]);
  });

  it('API key secrets are compared in constant time, on equal-length digests', async () => {
    const key = await createApiKey(ctx.deps.db, 'input-timing-check');
    const spy = vi.mocked(timingSafeEqual);
    spy.mockClear();
    const wrong = `${key.key.slice(0, -43)}${'A'.repeat(43)}`;
    expect(await verifyApiKey(ctx.deps.db, wrong)).toBeNull();
    expect(await verifyApiKey(ctx.deps.db, key.key)).toBe(key.id);
    expect(spy).toHaveBeenCalledTimes(2);
    for (const [a, b] of spy.mock.calls) {
      expect((a as Buffer).length).toBe(32);
      expect((b as Buffer).length).toBe(32);
    }
  });

  it('operator credentials are compared in constant time too, user and password both, whichever is wrong', async () => {
    const spy = vi.mocked(timingSafeEqual);
    for (const [user, password] of [
      ['nobody', OPERATOR.password],
      [OPERATOR.user, 'x'],
      [OPERATOR.user, `${OPERATOR.password}${'y'.repeat(100)}`],
    ] as const) {
      spy.mockClear();
      const res = await ctx.app.inject({ method: 'GET', url: '/metrics', headers: basicAuth(user, password) });
      expect(res.statusCode).toBe(401);
      expect(spy).toHaveBeenCalledTimes(2);
      for (const call of spy.mock.calls) for (const buf of call) expect((buf as Buffer).length).toBe(32);
    }
  });

  it('console passwords are stored as scrypt hashes only, and compared in constant time, an unknown name as much as a known one', async () => {
    const name = 'input-console';
    const password = `${OPERATOR.password}-console`;
    await createOperator(ctx.deps.db, name, 'operator', password);
    const [row] = await rows<{ dump: string; password_hash: string }>('SELECT row_to_json(o)::text AS dump, o.password_hash FROM operators o WHERE o.name = $1', [name]);
    expect(row!.dump).not.toContain(password);
    expect(row!.password_hash).toMatch(/^scrypt\$\d+\$\d+\$\d+\$[A-Za-z0-9_-]+\$[A-Za-z0-9_-]{43}$/);

    const spy = vi.mocked(timingSafeEqual);
    for (const [user, pw, status] of [
      ['nobody-at-all', password, 401],
      [name, 'x', 401],
      [name, `${password}${'y'.repeat(100)}`, 401],
      [name, password, 303],
    ] as const) {
      spy.mockClear();
      const res = await ctx.app.inject({ method: 'POST', url: '/admin/sign-in', payload: new URLSearchParams({ name: user, password: pw }).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      expect(res.statusCode, `${user} ${describeResponse(res)}`).toBe(status);
      // One comparison of two 32-byte scrypt keys, whether the name exists or not.
      expect(spy, user).toHaveBeenCalledTimes(1);
      for (const buf of spy.mock.calls[0]!) expect((buf as Buffer).length).toBe(32);
    }
  });
});
