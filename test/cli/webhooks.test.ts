import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LONG } from '../queue/helpers.js';
import { createPipelineContext, type PipelineContext } from '../queue/setup.js';
import { expectOneErrorLine, startImportctl, type RunResult } from './run-cli.js';

// importctl supplier webhook add|list|disable|deliveries (issue 13): the secret is printed once and
// nowhere else, every change is an audit line, and a bad URL or event list is a usage error.

let ctx: PipelineContext;
let env: Record<string, string>;
const importctl = async (args: string[], extra: Record<string, string> = {}): Promise<RunResult> => (await startImportctl(args, { ...env, ...extra }, 60_000)).done;
const json = async <T>(args: string[]): Promise<T> => {
  const r = await importctl(args);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as T;
};

interface WebhookJson {
  id: string;
  url: string;
  events: string[];
  created_at: string;
  disabled_at: string | null;
}

beforeAll(async () => {
  ctx = await createPipelineContext();
  env = { DATABASE_URL: ctx.config.databaseUrl };
  await ctx.createSupplier('HOOKCLI');
}, 120_000);
afterAll(async () => ctx?.close());

it('adds webhooks, printing the id and the secret once; lists them without secrets; disables one; records each change', { timeout: LONG }, async () => {
  const added = await importctl(['supplier', 'webhook', 'add', 'HOOKCLI', 'http://127.0.0.1:9/hooks/all']);
  expect(added.code, added.stderr).toBe(0);
  expect(added.lines).toHaveLength(3);
  const [, id] = /^added webhook ([0-9a-f-]{36}) to supplier HOOKCLI: batch\.finished, account\.failed -> http:\/\/127\.0\.0\.1:9\/hooks\/all$/.exec(added.lines[0]!)!;
  const secret = added.lines[2]!;
  expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  const stored = await ctx.deps.db.selectFrom('supplier_webhooks').select(['secret', 'events']).where('id', '=', id!).executeTakeFirstOrThrow();
  expect(stored).toEqual({ secret, events: ['batch.finished', 'account.failed'] });

  const second = await importctl(['supplier', 'webhook', 'add', 'HOOKCLI', 'https://example.test/failed', '--events', 'account.failed,account.failed']);
  expect(second.code, second.stderr).toBe(0);
  expect(second.lines[2]).not.toBe(secret);

  const list = await json<WebhookJson[]>(['supplier', 'webhook', 'list', 'HOOKCLI', '--json']);
  expect(list.map((w) => [w.url, w.events, w.disabled_at])).toEqual([
    ['http://127.0.0.1:9/hooks/all', ['batch.finished', 'account.failed'], null],
    ['https://example.test/failed', ['account.failed'], null],
  ]);
  const table = await importctl(['supplier', 'webhook', 'list', 'HOOKCLI']);
  expect(table.lines[0]).toMatch(/^ID\s+URL\s+EVENTS\s+CREATED_AT\s+DISABLED_AT$/);
  for (const out of [JSON.stringify(list), table.stdout]) expect(out).not.toMatch(/whsec_/);

  const disabled = await importctl(['supplier', 'webhook', 'disable', 'HOOKCLI', id!]);
  expect(disabled.code, disabled.stderr).toBe(0);
  expect(disabled.stdout).toBe(`disabled webhook ${id} of supplier HOOKCLI (http://127.0.0.1:9/hooks/all)\n`);
  expect((await json<WebhookJson[]>(['supplier', 'webhook', 'list', 'HOOKCLI', '--json']))[0]!.disabled_at).toMatch(/Z$/);
  // Disabled already, or not this supplier's: nothing to disable.
  expectOneErrorLine(expect, await importctl(['supplier', 'webhook', 'disable', 'HOOKCLI', id!]), 1, /no enabled webhook/);
  expectOneErrorLine(expect, await importctl(['supplier', 'webhook', 'disable', 'HOOKCLI', randomUUID()]), 1, /no enabled webhook/);

  const audit = await json<Array<{ action: string; target_kind: string; target: string; detail: Record<string, unknown> }>>(['audit', 'list', '--supplier', 'HOOKCLI', '--json']);
  expect(audit.map((l) => [l.action, l.target_kind, l.target])).toEqual([
    ['supplier.webhook_disable', 'supplier', 'HOOKCLI'],
    ['supplier.webhook_add', 'supplier', 'HOOKCLI'],
    ['supplier.webhook_add', 'supplier', 'HOOKCLI'],
  ]);
  expect(audit[2]!.detail).toEqual({ webhook_id: id, url: 'http://127.0.0.1:9/hooks/all', events: ['batch.finished', 'account.failed'] });
  expect(JSON.stringify(audit)).not.toMatch(/whsec_/);
});

it('refuses a bad URL or event list as a usage error, http in production, and an unknown supplier', { timeout: LONG }, async () => {
  const before = await ctx.deps.db.selectFrom('supplier_webhooks').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();
  expectOneErrorLine(expect, await importctl(['supplier', 'webhook', 'add', 'HOOKCLI', 'ftp://127.0.0.1/x']), 2, /http:\/\/ or https:\/\//);
  expectOneErrorLine(expect, await importctl(['supplier', 'webhook', 'add', 'HOOKCLI', 'not a url']), 2, /not an absolute URL/);
  expectOneErrorLine(expect, await importctl(['supplier', 'webhook', 'add', 'HOOKCLI', `https://127.0.0.1/${'a'.repeat(2100)}`]), 2, /at most 2048/);
  expectOneErrorLine(expect, await importctl(['supplier', 'webhook', 'add', 'HOOKCLI', 'https://user:pw@127.0.0.1/x']), 2, /credentials/);
  expectOneErrorLine(expect, await importctl(['supplier', 'webhook', 'add', 'HOOKCLI', 'https://127.0.0.1/x', '--events', 'batch.started']), 2, /not batch\.started/);
  expectOneErrorLine(expect, await importctl(['supplier', 'webhook', 'add', 'HOOKCLI', 'http://127.0.0.1/x'], { NODE_ENV: 'production' }), 2, /in production a webhook URL must be https/);
  expectOneErrorLine(expect, await importctl(['supplier', 'webhook', 'add', 'NOPE', 'https://127.0.0.1/x']), 1, /Import supplier 'NOPE' does not exist/);
  expectOneErrorLine(expect, await importctl(['supplier', 'webhook', 'disable', 'HOOKCLI', 'not-a-uuid']), 2, /UUID/);
  const after = await ctx.deps.db.selectFrom('supplier_webhooks').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();
  expect(after.n).toBe(before.n);
});

it("lists a supplier's deliveries, newest first, optionally of one batch", { timeout: LONG }, async () => {
  await ctx.createSupplier('HOOKDLV');
  expect(await json<unknown[]>(['supplier', 'webhook', 'deliveries', 'HOOKDLV', '--json'])).toEqual([]);
  const added = await importctl(['supplier', 'webhook', 'add', 'HOOKDLV', 'http://127.0.0.1:9/d']);
  const webhookId = /([0-9a-f-]{36})/.exec(added.lines[0]!)![1]!;
  const supplier = await ctx.deps.db.selectFrom('import_suppliers').select('id').where('code', '=', 'HOOKDLV').executeTakeFirstOrThrow();
  const team = await ctx.deps.db.insertInto('operations_teams').values({ name: 'Hook CLI Team' }).returning('id').executeTakeFirstOrThrow();
  const batches = [randomUUID(), randomUUID()];
  for (const id of batches) {
    await ctx.deps.db.insertInto('batches').values({ id, import_supplier_id: supplier.id, operations_team_id: team.id, dry_run: false, state: 'COMPLETED' }).execute();
  }
  // Rows as the outbox writes them, with what attempts recorded.
  for (const [k, batchId] of batches.entries()) {
    await ctx.deps.db
      .insertInto('webhook_deliveries')
      .values({
        webhook_id: webhookId,
        supplier_id: supplier.id,
        batch_id: batchId,
        event_id: `batch.finished.${batchId}.0`,
        event_type: 'batch.finished',
        payload: JSON.stringify({ id: `batch.finished.${batchId}.0` }),
        created_at: new Date(Date.UTC(2026, 0, 1, 0, 0, k)),
        state: k === 0 ? 'failed' : 'delivered',
        attempts: k === 0 ? 1 : 2,
        last_status_code: k === 0 ? 410 : 200,
        last_error: k === 0 ? 'HTTP 410' : null,
        last_response: k === 0 ? 'gone' : 'ok',
      })
      .execute();
  }
  const all = await json<Array<Record<string, unknown>>>(['supplier', 'webhook', 'deliveries', 'HOOKDLV', '--json']);
  expect(all.map((d) => [d.batch_id, d.state, d.attempts, d.last_status_code, d.last_error, d.last_response, d.url])).toEqual([
    [batches[1], 'delivered', 2, 200, null, 'ok', 'http://127.0.0.1:9/d'],
    [batches[0], 'failed', 1, 410, 'HTTP 410', 'gone', 'http://127.0.0.1:9/d'],
  ]);
  const one = await json<Array<Record<string, unknown>>>(['supplier', 'webhook', 'deliveries', 'HOOKDLV', '--batch', batches[0]!, '--json']);
  expect(one.map((d) => d.batch_id)).toEqual([batches[0]]);
  const table = await importctl(['supplier', 'webhook', 'deliveries', 'HOOKDLV', '--limit', '1']);
  expect(table.lines).toHaveLength(2);
  expect(table.lines[1]).toMatch(/^2026-01-01T00:00:01Z\s+batch\.finished\s+delivered\s+2\s+200\s/);
  // Another supplier's deliveries are not this one's.
  expect(await json<unknown[]>(['supplier', 'webhook', 'deliveries', 'HOOKCLI', '--json'])).toEqual([]);
});
