import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { connect } from 'node:net';
import type { LightMyRequestResponse } from 'fastify';
import type { Config } from '../../src/config.js';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { expect } from 'vitest';
import { addDaysUtc } from '../../src/clock.js';
import type { GeneratedAccount } from '../../src/cohort/generate.js';
import { STAGES } from '../../src/queue/contract.js';
import { pollUntil } from '../helpers/poll.js';
import { freePort } from '../helpers/ports.js';
import { accountHoldings, batchItems, countSql, type BatchStatusBody } from '../queue/helpers.js';
import { createPipelineContext, type PipelineContext } from '../queue/setup.js';
import type { FakeGateway } from '../helpers/fake-gateway.js';
import type { QueueName } from '../../src/queue/contract.js';
import { spawnWorker, type WorkerProcess } from '../queue/worker-process.js';

/**
 * Shared by the fault-injection files: exact-outcome checks on an imported cohort, a status poll
 * that tolerates (and records) 503s while a backing service is down, a redis-server of a test's
 * own, a loopback TCP proxy that can cut PostgreSQL off, and Redis key counting by prefix.
 */

/** The batch status through the API, or the non-200 answer (kept so a test can assert it was a 503). */
export async function statusOrError(ctx: PipelineContext, batchId: string): Promise<{ ok: true; status: BatchStatusBody } | { ok: false; res: LightMyRequestResponse }> {
  const res = await ctx.app.inject({ method: 'GET', url: `/v1/data-import/batches/${batchId}/`, headers: ctx.auth });
  return res.statusCode === 200 ? { ok: true, status: res.json() as BatchStatusBody } : { ok: false, res };
}

/**
 * Polls the batch until `pred` holds. Non-200 answers (a backing service blipped) are recorded in
 * `errors` and polled past, never mistaken for the batch's end.
 */
export async function pollStatus(
  ctx: PipelineContext,
  batchId: string,
  pred: (s: BatchStatusBody) => boolean,
  what: string,
  opts: { timeoutMs?: number; errors?: LightMyRequestResponse[]; onSample?: (s: BatchStatusBody) => void | Promise<void> } = {},
): Promise<BatchStatusBody> {
  let last: BatchStatusBody | undefined;
  try {
    return await pollUntil(
      async () => {
        const r = await statusOrError(ctx, batchId);
        if (!r.ok) {
          opts.errors?.push(r.res);
          return null;
        }
        last = r.status;
        await opts.onSample?.(r.status);
        return pred(r.status) ? r.status : null;
      },
      { timeoutMs: opts.timeoutMs ?? 60_000, intervalMs: 100, what },
    );
  } catch (err) {
    // Say where the batch stood: slow and stuck look different.
    const where = last ? { state: last.state, succeeded: last.succeeded, failed: last.failed, stages: last.stages } : 'no status answered';
    throw new Error(`${(err as Error).message}; last status ${JSON.stringify(where)}`, { cause: err });
  }
}

export const ended = (s: BatchStatusBody): boolean => s.state !== 'RUNNING' && s.state !== 'UPLOADING';

/** The interface's error envelope exactly (detail, code, errors and nothing else), with this status and code. */
export function expectEnvelope(res: LightMyRequestResponse, status: number, code: string): void {
  expect(res.statusCode, res.body).toBe(status);
  const body = res.json() as Record<string, unknown>;
  expect(Object.keys(body).sort(), res.body).toEqual(['code', 'detail', 'errors']);
  expect(body.code, res.body).toBe(code);
  expect(typeof body.detail).toBe('string');
  expect(Array.isArray(body.errors)).toBe(true);
}

export interface ImportFigures {
  accounts: number;
  distinctAccounts: number;
  importProcesses: number;
  importedNotes: number;
  movedNotes: number;
  transactions: number;
  statements: number;
  paymentInstructions: number;
}

/**
 * Every account of `accounts` exists exactly once for `supplier`, with exactly its extras (no more,
 * no fewer), and every item of the batch succeeded with that account's number. Returns the totals.
 */
export async function expectExactImport(ctx: PipelineContext, supplier: string, accounts: readonly GeneratedAccount[], batchId: string): Promise<ImportFigures> {
  const holdings = await accountHoldings(ctx, supplier);
  const items = await batchItems(ctx, batchId);
  expect(items).toHaveLength(accounts.length);
  const problems: string[] = [];
  let movedNotes = 0;
  for (const [i, a] of accounts.entries()) {
    const ext = a.bundle.account.external_account_number as string;
    const rows = holdings.get(ext) ?? [];
    if (rows.length !== 1) {
      problems.push(`${ext}: ${rows.length} accounts`);
      continue;
    }
    const h = rows[0]!;
    const openStart = addDaysUtc(a.bundle.account.last_statement_closing_date as string, 1);
    const moved = (a.bundle.transactions ?? []).some((t) => (t.transaction_date as string) < openStart) ? 1 : 0;
    movedNotes += moved;
    const want = {
      imported_notes: a.bundle.notes?.length ?? 0,
      moved_notes: moved,
      transactions: a.bundle.transactions?.length ?? 0,
      statements: a.bundle.statements?.length ?? 0,
      payment_instructions: a.bundle.payment_instruction ? 1 : 0,
    };
    const got = { imported_notes: h.imported_notes, moved_notes: h.moved_notes, transactions: h.transactions, statements: h.statements, payment_instructions: h.payment_instructions };
    if (JSON.stringify(got) !== JSON.stringify(want)) problems.push(`${ext}: holds ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
    const item = items[i]!;
    if (item.line !== i + 1 || item.state !== 'succeeded' || item.stage !== 'extras' || item.service_account_number !== h.number || item.error !== null) {
      problems.push(`line ${i + 1}: item ${JSON.stringify(item)} (account ${h.number})`);
    }
  }
  expect(problems).toEqual([]);
  expect(holdings.size).toBe(accounts.length);

  const where = 'JOIN import_suppliers s ON s.id = a.import_supplier_id WHERE s.code = $1';
  const figures: ImportFigures = {
    accounts: await countSql(ctx, `SELECT count(*) AS n FROM accounts a ${where}`, [supplier]),
    distinctAccounts: await countSql(ctx, `SELECT count(DISTINCT a.external_account_number) AS n FROM accounts a ${where}`, [supplier]),
    importProcesses: await countSql(ctx, `SELECT count(*) AS n FROM account_import_processes p JOIN import_suppliers s ON s.id = p.import_supplier_id WHERE s.code = $1`, [supplier]),
    importedNotes: await countSql(ctx, `SELECT count(*) AS n FROM account_notes x JOIN accounts a ON a.id = x.account_id ${where} AND x.origin = 'IMPORTED'`, [supplier]),
    movedNotes: await countSql(ctx, `SELECT count(*) AS n FROM account_notes x JOIN accounts a ON a.id = x.account_id ${where} AND x.origin = 'TRANSACTIONS_MOVED'`, [supplier]),
    transactions: await countSql(ctx, `SELECT count(*) AS n FROM account_transactions x JOIN accounts a ON a.id = x.account_id ${where}`, [supplier]),
    statements: await countSql(ctx, `SELECT count(*) AS n FROM historical_statements x JOIN accounts a ON a.id = x.account_id ${where}`, [supplier]),
    paymentInstructions: await countSql(ctx, `SELECT count(*) AS n FROM payment_instructions x JOIN accounts a ON a.id = x.account_id ${where}`, [supplier]),
  };
  const sum = (f: (a: GeneratedAccount) => number) => accounts.reduce((n, a) => n + f(a), 0);
  expect(figures).toEqual({
    accounts: accounts.length,
    distinctAccounts: accounts.length,
    importProcesses: accounts.length,
    importedNotes: sum((a) => a.bundle.notes?.length ?? 0),
    movedNotes,
    transactions: sum((a) => a.bundle.transactions?.length ?? 0),
    statements: sum((a) => a.bundle.statements?.length ?? 0),
    paymentInstructions: sum((a) => (a.bundle.payment_instruction ? 1 : 0)),
  });
  return figures;
}

/** Jobs of every stage queue of the context (waiting, active, delayed, prioritized, waiting-children). */
export async function pendingJobs(ctx: PipelineContext): Promise<number> {
  let n = 0;
  for (const stage of STAGES) {
    const c = await ctx.deps.queues[stage].getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'waiting-children', 'paused');
    n += Object.values(c).reduce((a, b) => a + b, 0);
  }
  return n;
}

/** Keys a deployment with `prefix` owns (queues, markers, and redis-semaphore's `semaphore:` keys). */
export async function countPrefixKeys(redisUrl: string, prefix: string): Promise<number> {
  const r = new Redis(redisUrl, { maxRetriesPerRequest: 1, lazyConnect: true });
  await r.connect();
  try {
    let n = 0;
    for (const pattern of [`${prefix}:*`, `semaphore:${prefix}:*`]) {
      let cursor = '0';
      do {
        const [next, keys] = await r.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
        cursor = next;
        n += keys.length;
      } while (cursor !== '0');
    }
    return n;
  } finally {
    r.disconnect();
  }
}

/**
 * Deletes every key of the deployment (`prefix:*` and redis-semaphore's `semaphore:prefix:*`) in one
 * Lua script, so no command runs in between: what a FLUSHDB or a restart without persistence does
 * to this deployment, without touching the keys of the other test files sharing this Redis. (A plain
 * SCAN + DEL under running workers is not atomic: a job written mid-scan can lose its list entry but
 * keep its hash, a state no real flush produces.) Resolves to the number of keys deleted.
 */
export async function flushPrefixAtomically(redisUrl: string, prefix: string): Promise<number> {
  const r = new Redis(redisUrl, { maxRetriesPerRequest: 1, lazyConnect: true });
  await r.connect();
  try {
    const script = `
      local n = 0
      for _, pattern in ipairs(ARGV) do
        local cursor = "0"
        repeat
          local page = redis.call("SCAN", cursor, "MATCH", pattern, "COUNT", 1000)
          cursor = page[1]
          for _, key in ipairs(page[2]) do
            redis.call("DEL", key)
            n = n + 1
          end
        until cursor == "0"
      end
      return n`;
    return (await r.eval(script, 0, `${prefix}:*`, `semaphore:${prefix}:*`)) as number;
  } finally {
    r.disconnect();
  }
}

export { freePort };

/** A "service" on 127.0.0.1 that accepts connections and never says a word: the worst case for a client. */
export async function startSilentServer(): Promise<{ port: number; url(scheme: string): string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: (scheme) => `${scheme}://127.0.0.1:${port}`,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A redis-server of the test's own on 127.0.0.1, append-only, restartable on the same port and directory. */
export interface OwnRedis {
  readonly port: number;
  readonly url: string;
  /** Graceful stop (SIGTERM: Redis writes the AOF and exits); resolves once the process has exited. */
  stop(): Promise<void>;
  /** Starts it again on the same port and directory; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Hard stop for cleanup. */
  kill(): Promise<void>;
  output(): string;
}

export async function startOwnRedis(dir: string): Promise<OwnRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  let out = '';
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--appendonly', 'yes', '--dir', dir, '--save', '', '--daemonize', 'no'];
  const running = () => child !== undefined && child.exitCode === null && child.signalCode === null;
  const self: OwnRedis = {
    port,
    url: `redis://127.0.0.1:${port}`,
    async start() {
      if (running()) throw new Error('redis-server already running');
      const c = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
      child = c;
      const mark = out.length;
      c.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      c.stderr!.on('data', (d: Buffer) => (out += d.toString()));
      await pollUntil(async () => out.slice(mark).includes('Ready to accept connections') || c.exitCode !== null, { timeoutMs: 15_000, what: 'redis-server to accept connections' });
      if (c.exitCode !== null) throw new Error(`redis-server exited at start-up: ${out.slice(mark)}`);
    },
    async stop() {
      if (!running()) return;
      const c = child!;
      const exited = once(c, 'exit');
      c.kill('SIGTERM');
      await Promise.race([exited, new Promise((_, reject) => setTimeout(() => reject(new Error('redis-server did not stop within 10 s')), 10_000).unref())]);
    },
    async kill() {
      if (!running()) return;
      const c = child!;
      const exited = once(c, 'exit');
      c.kill('SIGKILL');
      await exited;
    },
    output: () => out,
  };
  await self.start();
  return self;
}

/**
 * A TCP proxy on 127.0.0.1 to a loopback port. `cut()` stops listening and destroys every open
 * connection (the service sees resets, then ECONNREFUSED: the database is unreachable);
 * `restore()` listens again on the same port.
 */
export interface TcpProxy {
  readonly port: number;
  cut(): Promise<void>;
  restore(): Promise<void>;
  /** Connections proxied so far. */
  readonly connections: number;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let connections = 0;
  let server: Server | undefined;
  let port = 0;
  const listen = async () => {
    const s = createServer((client) => {
      connections += 1;
      const upstream = connect(targetPort, '127.0.0.1');
      sockets.add(client);
      sockets.add(upstream);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        sockets.delete(client);
        sockets.delete(upstream);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      client.pipe(upstream);
      upstream.pipe(client);
    });
    s.listen(port, '127.0.0.1');
    await once(s, 'listening');
    port = (s.address() as AddressInfo).port;
    server = s;
  };
  const cut = async () => {
    const s = server;
    server = undefined;
    if (!s) return;
    const closed = new Promise<void>((resolve) => s.close(() => resolve()));
    for (const sock of sockets) sock.destroy();
    sockets.clear();
    await closed;
  };
  await listen();
  return {
    get port() {
      return port;
    },
    get connections() {
      return connections;
    },
    cut,
    async restore() {
      if (!server) await listen();
    },
    close: cut,
  };
}

/** A real worker process registered before start-up is awaited, with a deadline for a loaded machine. */
export const spawnTrackedWorker = (config: Config, env: Record<string, string>, registry: WorkerProcess[]): Promise<WorkerProcess> =>
  spawnWorker(config, env, { registry, startTimeoutMs: 60_000 });

/**
 * A worker process running only `queues` (test/faults/queue-worker.ts), on the test's database and
 * Redis prefix, registered before start-up is awaited: a poller or a registration worker to SIGKILL alone.
 */
export async function spawnQueueWorker(config: Config, env: Record<string, string>, queues: readonly string[], registry: WorkerProcess[]): Promise<WorkerProcess> {
  return spawnWorker(config, { ...env, WORKER_QUEUES: queues.join(',') }, { registry, script: 'test/faults/queue-worker.ts', startTimeoutMs: 60_000 });
}

/** One row of registration_history, as the registration fault tests read it. */
export interface RegistrationHistoryRow {
  meter_point_id: string;
  request_id: string | null;
  cause: string;
  event_id: string | null;
  event_type: string | null;
  from_status: string | null;
  to_status: string | null;
  applied: boolean;
  reason: string | null;
}

/** Each meter point's registration history in the order it was written (every meter point asked for has an entry). */
export async function registrationHistories(ctx: PipelineContext, meterPointIds: readonly string[]): Promise<Map<string, RegistrationHistoryRow[]>> {
  const { rows } = await sql<RegistrationHistoryRow>`
    SELECT meter_point_id::text AS meter_point_id, request_id::text AS request_id, cause, event_id, event_type, from_status, to_status, applied, reason
    FROM registration_history WHERE meter_point_id = ANY(${[...meterPointIds]}::bigint[]) ORDER BY id`.execute(ctx.deps.db);
  const out = new Map<string, RegistrationHistoryRow[]>(meterPointIds.map((id) => [id, []]));
  for (const r of rows) out.get(r.meter_point_id)!.push(r);
  return out;
}

const MARKABLE_STATUSES = ['PRE_REGISTRATION', 'UNABLE_TO_REGISTER', 'REGISTRATION_REJECTED', 'REGISTRATION_OBJECTED', 'REGISTRATION_WITHDRAWN'];

/**
 * decisions.md §8's table, written out here (not imported from src/registration/states.ts), so the
 * history is checked against the spec rather than against the code: for each cause (an event's
 * type for events), the statuses it may move from and the one it moves to.
 */
export const SECTION_8_MOVES: Readonly<Record<string, { from: readonly string[]; to: string }>> = {
  marked: { from: MARKABLE_STATUSES, to: 'UNDERGOING_REGISTRATION' },
  taken: { from: ['UNDERGOING_REGISTRATION'], to: 'REGISTRATION_REQUESTED' },
  refused: { from: ['UNDERGOING_REGISTRATION'], to: 'UNABLE_TO_REGISTER' },
  withdrawal: { from: ['REGISTRATION_REQUESTED', 'REGISTRATION_ACCEPTED', 'OBJECTION_RECEIVED'], to: 'WITHDRAWAL_REQUESTED' },
  ACCEPTED: { from: ['REGISTRATION_REQUESTED'], to: 'REGISTRATION_ACCEPTED' },
  REJECTED: { from: ['REGISTRATION_REQUESTED'], to: 'REGISTRATION_REJECTED' },
  OBJECTION_RECEIVED: { from: ['REGISTRATION_REQUESTED', 'REGISTRATION_ACCEPTED'], to: 'OBJECTION_RECEIVED' },
  OBJECTION_UPHELD: { from: ['OBJECTION_RECEIVED'], to: 'REGISTRATION_OBJECTED' },
  OBJECTION_WITHDRAWN: { from: ['OBJECTION_RECEIVED'], to: 'REGISTRATION_ACCEPTED' },
  WITHDRAWN: { from: ['WITHDRAWAL_REQUESTED'], to: 'REGISTRATION_WITHDRAWN' },
  SUPPLY_STARTED: { from: ['REGISTRATION_ACCEPTED'], to: 'ON_SUPPLY' },
};

/**
 * What is wrong with one meter point's history (empty: nothing). Read in order, it must be one
 * unbroken chain from PRE_REGISTRATION to `status`: each applied row moves from where the previous
 * applied row left it, along a move of §8's table, and an applied event names the current attempt
 * (the request id of the last marking); a row not applied moves nothing, names the status it found
 * and says why. No event id appears twice.
 */
export function registrationHistoryProblems(rows: readonly RegistrationHistoryRow[], status: string): string[] {
  const problems: string[] = [];
  let current = 'PRE_REGISTRATION';
  let attempt: string | null = null;
  const events = new Set<string>();
  for (const [i, r] of rows.entries()) {
    const at = `row ${i} (${r.cause}${r.event_type ? ` ${r.event_type}` : ''}${r.event_id ? ` ${r.event_id}` : ''})`;
    if (r.event_id !== null) {
      if (events.has(r.event_id)) problems.push(`${at}: event ${r.event_id} kept twice`);
      events.add(r.event_id);
    }
    if (r.from_status !== current) problems.push(`${at}: from ${r.from_status}, but the meter point was ${current}`);
    if (!r.applied) {
      if (r.to_status !== null || !r.reason) problems.push(`${at}: not applied, yet to ${r.to_status} / reason ${JSON.stringify(r.reason)}`);
      continue;
    }
    const move = SECTION_8_MOVES[r.cause === 'event' ? (r.event_type ?? '') : r.cause];
    if (!move || !move.from.includes(current) || move.to !== r.to_status) problems.push(`${at}: ${current} -> ${r.to_status} is not a move of §8`);
    if (r.cause === 'marked') attempt = r.request_id;
    else if (r.request_id !== attempt) problems.push(`${at}: applied for request ${r.request_id}, but the current attempt is ${attempt}`);
    current = r.to_status ?? current;
  }
  if (current !== status) problems.push(`the history ends at ${current}, the meter point is ${status}`);
  return problems;
}

/** Event ids kept more than once in registration_history, over the whole database (none, when nothing was applied twice). */
export async function eventsKeptTwice(ctx: PipelineContext): Promise<string[]> {
  const { rows } = await sql<{ event_id: string }>`SELECT event_id FROM registration_history WHERE event_id IS NOT NULL GROUP BY event_id HAVING count(*) > 1`.execute(ctx.deps.db);
  return rows.map((r) => r.event_id);
}

/** The poller's saved cursor (the fake gateway's are `<instance>.<events served>`). */
export async function registrationCursor(ctx: PipelineContext): Promise<string | null> {
  const row = await ctx.deps.db.selectFrom('registration_cursor').select('cursor').where('id', '=', 1).executeTakeFirst();
  return row?.cursor ?? null;
}

/**
 * A pipeline context registering with `gateway` (fast polls, no rate limit to speak of, a killed
 * worker's job back within seconds), running `queues`, with `count` accounts of a new supplier
 * migrated: what the registration fault tests start from.
 */
export async function registrationFaultContext(
  gateway: FakeGateway,
  opts: { supplier: string; team: string; prefix: string; seed: number; count: number; queues: readonly QueueName[] },
): Promise<{ ctx: PipelineContext; generated: GeneratedAccount[] }> {
  const ctx = await createPipelineContext({
    env: {
      REGISTRATION_GATEWAY_URL: gateway.url,
      REGISTRATION_GATEWAY_KEY: gateway.key,
      REGISTRATION_POLL_MS: '200',
      REGISTRATION_RATE_PER_SECOND: '1000',
      WORKER_LOCK_MS: '2000',
    },
  });
  await ctx.createSupplier(opts.supplier, { documentsRoot: opts.supplier.toLowerCase() });
  await ctx.createTeam(opts.team);
  ctx.startWorkers(opts.queues);
  const { ndjson, accounts } = await ctx.cohort({ count: opts.count, supplier: opts.supplier, prefix: opts.prefix, seed: opts.seed });
  const { batch_id } = await ctx.upload(ndjson, { supplier: opts.supplier, team: opts.team });
  expect(await ctx.waitForEnd(batch_id, 100_000)).toMatchObject({ state: 'COMPLETED', succeeded: opts.count });
  return { ctx, generated: accounts };
}
