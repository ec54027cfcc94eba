import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { freePort } from '../helpers/ports.js';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, test } from 'vitest';
import { createApiKey } from '../../src/auth/api-keys.js';
import { utcDate } from '../../src/clock.js';
import { generateCohort } from '../../src/cohort/generate.js';
import { ApiClient } from '../../src/cli/api-client.js';
import { bundleSchema } from '../../src/imports/batches/batch.schemas.js';
import { createPipelineContext, type PipelineContext } from '../queue/setup.js';
import { expectOneErrorLine, startImportctl, type RunResult } from './run-cli.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const SUPPLIER = 'CLICO';
const TEAM = 'CLI Cohort Team';

/** Starts the CLI as a real process; `child` lets a test signal it while it runs. */
const start = (args: string[], env: Record<string, string>) => startImportctl(args, env, 60_000);
const importctl = async (args: string[], env: Record<string, string> = apiEnv): Promise<RunResult> => (await start(args, env)).done;

let ctx: PipelineContext;
let dir: string;
let today: string;
/** What an operator's shell would have: the service URL and key, plus the service's own environment for --write-documents. */
let apiEnv: Record<string, string>;

beforeAll(async () => {
  ctx = await createPipelineContext();
  await ctx.createSupplier(SUPPLIER, { documentsRoot: 'cli/docs' });
  await ctx.createTeam(TEAM);
  const url = await ctx.app.listen({ host: '127.0.0.1', port: 0 });
  const { key } = await createApiKey(ctx.deps.db, 'cli-cohort');
  if (ctx.config.documents.kind !== 'local') throw new Error('the pipeline context is expected to use a local documents folder');
  apiEnv = { IMPORT_API_URL: url, IMPORT_API_KEY: key, DATABASE_URL: ctx.config.databaseUrl, DOCUMENTS_DIR: ctx.config.documents.dir };
  dir = mkdtempSync(path.join(tmpdir(), 'di-cli-cohort-'));
  today = utcDate(ctx.clock.now());
});

afterAll(async () => {
  await ctx?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function file(name: string, lines: string[]): string {
  const p = path.join(dir, name);
  writeFileSync(p, `${lines.join('\n')}\n`);
  return p;
}

async function validateAccount(account: unknown): Promise<number> {
  const res = await ctx.app.inject({ method: 'POST', url: '/v1/data-import/validate-account/', payload: account as object, headers: { ...ctx.auth, 'content-type': 'application/json' } });
  return res.statusCode;
}

// Generation and error handling need no pipeline: they run alongside it. The pipeline tests run in
// order: the Ctrl-C one needs the workers not yet started, so that its batch is still running.
describe.concurrent('importctl cohort and batch', { timeout: 90_000 }, () => {
  test('cohort generate: deterministic for a seed, valid by construction, --invalid-rate 1 spoils every line, a bad --count is a usage error', async ({ expect }) => {
    const args = ['cohort', 'generate', '--count', '5', '--seed', '3', '--supplier', SUPPLIER, '--today', today];
    const [first, spoiled, badCount] = await Promise.all([
      importctl(args, {}),
      importctl([...args, '--invalid-rate', '1'], {}),
      importctl(['cohort', 'generate', '--count', 'lots', '--supplier', SUPPLIER], {}),
    ]);
    expect([first.code, first.stderr, first.lines.length]).toEqual([0, '', 5]);
    // Deterministic: exactly what the library yields for that seed and day.
    const expected = [...generateCohort({ count: 5, seed: 3, supplier: SUPPLIER, today })].map((a) => `${JSON.stringify(a.bundle)}\n`).join('');
    expect(first.stdout).toBe(expected);
    const bundles = first.lines.map((l) => bundleSchema.parse(JSON.parse(l)));
    expect(new Set(bundles.map((b) => b.account.external_account_number)).size).toBe(5);
    expect(bundles.every((b) => b.account.import_supplier === SUPPLIER && (b.statements?.length ?? 0) > 0 && (b.transactions?.length ?? 0) > 0)).toBe(true);
    // The service's own account rules are the judge of "valid".
    expect(await Promise.all(bundles.map((b) => validateAccount(b.account)))).toEqual([200, 200, 200, 200, 200]);

    expect([spoiled.code, spoiled.stderr, spoiled.lines.length]).toEqual([0, '', 5]);
    const spoiledAccounts = spoiled.lines.map((l) => (JSON.parse(l) as { account: unknown }).account);
    expect(await Promise.all(spoiledAccounts.map(validateAccount))).toEqual([400, 400, 400, 400, 400]);

    expectOneErrorLine(expect, badCount, 2, /--count.*'lots'.*positive whole number/);
  });

  test('errors are one line: a missing key or file exits 2; unreachable service, refusals and unknown batches exit 1', async ({ expect }) => {
    const closedPort = await freePort();
    const some = file('some.ndjson', ['{}']);
    const noKey = { IMPORT_API_URL: apiEnv.IMPORT_API_URL! };
    const unknownId = '00000000-0000-4000-8000-000000000000';
    const [missingKey, unreachable, badKey, unknownBatch, missingFile, unknownSupplier] = await Promise.all([
      importctl(['batch', 'status', unknownId], noKey),
      importctl(['batch', 'failures', unknownId, '--url', `http://127.0.0.1:${closedPort}`]),
      importctl(['batch', 'status', unknownId, '--api-key', 'dik_000000000000_not-a-real-key']),
      importctl(['batch', 'retry', unknownId]),
      importctl(['cohort', 'upload', path.join(dir, 'missing.ndjson'), '--supplier', SUPPLIER, '--team', TEAM]),
      importctl(['cohort', 'upload', some, '--supplier', 'NOPE', '--team', TEAM]),
    ]);
    expectOneErrorLine(expect, missingKey, 2, /no API key: set IMPORT_API_KEY or pass --api-key/);
    expectOneErrorLine(expect, unreachable, 1, new RegExp(`cannot reach the service at http://127\\.0\\.0\\.1:${closedPort}: ECONNREFUSED`));
    expectOneErrorLine(expect, badKey, 1, /refused the API key: The API key is not valid/);
    expectOneErrorLine(expect, unknownBatch, 1, new RegExp(`Batch '${unknownId}' does not exist`));
    expectOneErrorLine(expect, missingFile, 2, /cannot read .*missing\.ndjson.*ENOENT/);
    expectOneErrorLine(expect, unknownSupplier, 1, /Import supplier 'NOPE'/);
  });

  test('the API client obtains a new token once the service says the old one expired', async ({ expect }) => {
    // The real service's clock is shared by the concurrent tests: a stand-in answers instead.
    const seen: string[] = [];
    let issued = 0;
    const server = createHttpServer((req, res) => {
      seen.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''}`);
      res.setHeader('content-type', 'application/json');
      if (req.url === '/v1/graphql/') return res.end(JSON.stringify({ data: { obtainKrakenToken: { token: `t${++issued}` } } }));
      if (req.headers.authorization === 'Token t1') {
        res.statusCode = 401;
        return res.end(JSON.stringify({ detail: 'The token has expired; obtain a new one.', code: 'token_expired', errors: [] }));
      }
      res.end(JSON.stringify({ batch_id: 'b', state: 'RUNNING' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as { port: number };
      const client = new ApiClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: 'dik_x' });
      expect(await client.status('b')).toMatchObject({ state: 'RUNNING' });
      expect(await client.status('b')).toMatchObject({ state: 'RUNNING' });
      expect(seen).toEqual([
        'POST /v1/graphql/ ',
        'GET /v1/data-import/batches/b/ Token t1',
        'POST /v1/graphql/ ',
        'GET /v1/data-import/batches/b/ Token t2',
        'GET /v1/data-import/batches/b/ Token t2',
      ]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  describe.sequential('against the running pipeline', () => {
    /** One generated cohort, documents in the service's store, sliced per test: each CLI start costs a second or more. */
    const slices: Record<'interrupted' | 'ok' | 'noWait' | 'mixed', string[]> = { interrupted: [], ok: [], noWait: [], mixed: [] };
    beforeAll(async () => {
      const r = await importctl(['cohort', 'generate', '--count', '27', '--supplier', SUPPLIER, '--prefix', 'CLI', '--vendor', 'sandbox', '--write-documents']);
      if (r.code !== 0 || r.lines.length !== 27) throw new Error(`cohort generate failed: ${r.code} ${r.stderr}`);
      Object.assign(slices, { interrupted: r.lines.slice(0, 2), ok: r.lines.slice(2, 22), noWait: r.lines.slice(22, 24), mixed: r.lines.slice(24) });
    });

    test('Ctrl-C while waiting stops polling, names the batch and exits 130; the batch keeps running', async ({ expect }) => {
      let r: RunResult;
      try {
        const cohort = file('interrupted.ndjson', slices.interrupted);
        const { child, done } = await start(['cohort', 'upload', cohort, '--supplier', SUPPLIER, '--team', TEAM], apiEnv);
        // No workers yet: the batch cannot end, so the CLI is surely waiting once it has said "accepted".
        const accepted = (d: string) => {
          if (!d.includes('accepted')) return;
          child.stdout!.off('data', accepted);
          child.kill('SIGINT');
        };
        child.stdout!.on('data', accepted);
        r = await done;
      } finally {
        // Every later test needs them, whatever happened here.
        ctx.startWorkers();
      }
      const id = /batch (\S+) accepted: 2 item\(s\)/.exec(r.stdout)?.[1];
      expect(id).toMatch(UUID);
      expect(r.code).toBe(130);
      expect(r.stderr.trimEnd().split('\n').at(-1)).toBe(`importctl: interrupted: batch ${id} keeps running on the service; check it later with 'importctl batch status ${id}'`);
      expect(await ctx.waitForEnd(id!)).toMatchObject({ state: 'COMPLETED', succeeded: 2, failed: 0 });
    });

    test('cohort upload of a generated cohort with its documents: progress lines, summary, exit 0; --no-wait prints only the id', async ({ expect }) => {
      const [r, noWait] = await Promise.all([
        importctl(['cohort', 'upload', file('ok.ndjson', slices.ok), '--supplier', SUPPLIER, '--team', TEAM]),
        importctl(['cohort', 'upload', file('nowait.ndjson', slices.noWait), '--supplier', SUPPLIER, '--team', TEAM, '--no-wait']),
      ]);
      if (r.code !== 0) console.error(r.stdout, r.stderr);
      expect(r.code).toBe(0);
      const id = /^batch (\S+) accepted: 20 item\(s\)$/m.exec(r.stdout)?.[1];
      expect(id).toMatch(UUID);
      expect(r.lines.slice(-2)).toEqual([`batch ${id} COMPLETED`, 'total 20, succeeded 20, failed 0, cancelled 0']);
      // Not a terminal: plain lines, no escape sequences, no error lines.
      expect(r.stderr).not.toContain('\u001b');
      // Each line: the stages, the totals, and once items finish, the pace and the time left.
      expect(r.stderr).toMatch(/^[A-Z_]+: validate \d+\/20.* \| stage \d+\/\d+.* \| process .* \| extras .*of 20( \| [\d.]+ accounts\/s, about (\d+h )?(\d+m )?\d+s left)?$/m);
      expect(r.stderr).not.toContain('importctl:');

      expect(noWait.code).toBe(0);
      // Nothing on stderr but, on a machine slow enough that sending takes a second, the upload's progress.
      expect(noWait.stderr.split('\n').filter((l) => l !== '' && !l.startsWith('uploading: '))).toEqual([]);
      expect(noWait.lines).toHaveLength(1);
      expect(noWait.lines[0]).toMatch(UUID);
      expect(await ctx.waitForEnd(noWait.lines[0]!)).toMatchObject({ state: 'COMPLETED', succeeded: 2, failed: 0 });
    });

    test('malformed lines: exit 2 with failures by code; batch status, failures (table and CSV), retry and cancel on that batch', async ({ expect }) => {
      const [a, b, c] = slices.mixed;
      const broken = JSON.parse(b!) as { account: Record<string, unknown> };
      broken.account.billing_postcode = 'XX1 1XXX';
      const cohort = file('mixed.ndjson', [a!, 'this is not json', JSON.stringify(broken), '{"account": {', c!]);

      const r = await importctl(['cohort', 'upload', cohort, '--supplier', SUPPLIER, '--team', TEAM]);
      expect(r.code).toBe(2);
      const id = /^batch (\S+) accepted: 5 item\(s\)$/m.exec(r.stdout)?.[1] ?? '(no batch id printed)';
      expect(id).toMatch(UUID);
      expect(r.lines.slice(-3)).toEqual([
        `batch ${id} COMPLETED_WITH_ERRORS`,
        'total 5, succeeded 2, failed 3, cancelled 0',
        'failed by code: invalid_json 2, invalid_postcode 1',
      ]);
      expect(r.stderr.trimEnd().split('\n').at(-1)).toBe(`importctl: 3 of 5 item(s) failed; list them with 'importctl batch failures ${id}'`);

      const csvFile = path.join(dir, 'failures.csv');
      const [status, failures, csv, cancel, statusJson, failuresJson, toFile, list, listJson] = await Promise.all([
        importctl(['batch', 'status', id]),
        importctl(['batch', 'failures', id]),
        importctl(['batch', 'failures', id, '--csv']),
        importctl(['batch', 'cancel', id]),
        importctl(['batch', 'status', id, '--json']),
        importctl(['batch', 'failures', id, '--json']),
        importctl(['batch', 'failures', id, '--csv', csvFile]),
        importctl(['batch', 'list', '--supplier', SUPPLIER]),
        importctl(['batch', 'list', '--supplier', SUPPLIER, '--json']),
      ]);
      // --json: what the service answers, as it answers it.
      expect(JSON.parse(statusJson.stdout)).toMatchObject({ batch_id: id, state: 'COMPLETED_WITH_ERRORS', failed: 3, stages: { validate: { failed: 1 } } });
      expect((JSON.parse(failuresJson.stdout) as Array<{ line: number; error: { code: string } }>).map((i) => [i.line, i.error.code])).toEqual([
        [2, 'invalid_json'],
        [3, 'account_failed_validation'],
        [4, 'invalid_json'],
      ]);
      // --csv FILE: the same CSV as on stdout, in the file.
      expect([toFile.code, toFile.stderr, toFile.lines]).toEqual([0, '', [`wrote the failed items of batch ${id} to ${csvFile}`]]);
      expect(readFileSync(csvFile, 'utf8')).toBe(csv.stdout);
      // batch list: this batch among the supplier's, newest first.
      expect(list.code).toBe(0);
      expect(list.lines[0]).toMatch(/^BATCH\s+STATE\s+DRY_RUN\s+TOTAL\s+SUCCEEDED\s+FAILED\s+CANCELLED\s+CREATED_AT\s+FINISHED_AT$/);
      expect(list.lines).toContainEqual(expect.stringMatching(new RegExp(`^${id}\\s+COMPLETED_WITH_ERRORS\\s+no\\s+5\\s+2\\s+3\\s+0\\s`)));
      const listed = JSON.parse(listJson.stdout) as Array<{ batch_id: string; created_at: string }>;
      expect(listed.map((b) => b.batch_id)).toContain(id);
      expect(listed.map((b) => b.created_at)).toEqual([...listed.map((b) => b.created_at)].sort().reverse());
      expect([status.code, status.stderr]).toEqual([0, '']);
      expect(status.lines).toContain(`batch        ${id}`);
      expect(status.lines).toContain('state        COMPLETED_WITH_ERRORS');
      expect(status.lines).toContain('failed       3');
      expect(status.lines).toContainEqual(expect.stringMatching(/^STAGE\s+WAITING\s+ACTIVE\s+DELAYED\s+COMPLETED\s+FAILED$/));
      expect(status.lines).toContainEqual(expect.stringMatching(/^validate\s+0\s+0\s+0\s+2\s+1$/));

      expect([failures.code, failures.stderr]).toEqual([0, '']);
      expect(failures.lines[0]).toMatch(/^LINE\s+ACCOUNT\s+STAGE\s+CODE\s+ATTR\s+DETAIL$/);
      const rows = failures.lines.slice(1).map((l) => l.split(/\s{2,}/));
      expect(rows.map((cells) => cells.slice(0, 5))).toEqual([
        ['2', '-', 'parse', 'invalid_json', '-'],
        ['3', 'CLI-0000026', 'validate', 'invalid_postcode', 'billing_postcode'],
        ['4', '-', 'parse', 'invalid_json', '-'],
      ]);

      expect([csv.code, csv.stderr]).toEqual([0, '']);
      expect(csv.lines[0]).toBe('line,external_account_number,stage,state,code,attr,detail');
      expect(csv.lines.slice(1).map((l) => l.split(',').slice(0, 5).join(','))).toEqual([
        '2,,parse,failed,invalid_json',
        '3,CLI-0000026,validate,failed,invalid_postcode',
        '4,,parse,failed,invalid_json',
      ]);

      // Cancelling an ended batch changes nothing and says where it stands.
      expect([cancel.code, cancel.stderr, cancel.lines]).toEqual([0, '', [`batch ${id} COMPLETED_WITH_ERRORS: succeeded 2, failed 3, cancelled 0 of 5`]]);

      // CLI-0000025 succeeded: only the failed one of the two is requeued.
      const one = await importctl(['batch', 'retry', id, '--account', 'CLI-0000026', '--account', 'CLI-0000025']);
      expect([one.code, one.stderr, one.lines]).toEqual([0, '', [`requeued 1 item(s) of batch ${id}`]]);
      // Same data, same verdict: the retried item fails again at validate.
      expect(await ctx.waitForEnd(id)).toMatchObject({ state: 'COMPLETED_WITH_ERRORS', succeeded: 2, failed: 3 });
    });
  });
});
