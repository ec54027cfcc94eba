import { closeSync, createReadStream, openSync, writeSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Decimal } from 'decimal.js';
import pg from 'pg';
import { utcDate } from '../../src/clock.js';
import { generateCohort, type AccountBundle } from '../../src/cohort/generate.js';
import { createDb } from '../../src/db/create-db.js';
import { listProcessesQuery, type ListKind } from '../../src/imports/accounts/account.repository.js';
import { cohortWithDocuments } from './cohort.js';
import { TEAM, VENDOR_CODE, type BenchEnv } from './env.js';
import { call, postStream } from './http-client.js';
import { mb, readMemory } from './procfs.js';
import { rowCounts } from './pipeline.js';
import { distribution, fmt, ms, round, table } from './stats.js';

export const SOAK_CALLS = ['stage', 'process', 'notes', 'transactions', 'payment_instruction', 'status', 'list'] as const;
type SoakCall = (typeof SOAK_CALLS)[number];

export interface SoakOptions {
  minutes: number;
  clients: number;
  /** Accounts per cohort batch; batches run back to back beside the REST clients for the whole soak. */
  batchAccounts: number;
  /** Suppliers: the REST clients' and the cohort batches'. */
  restSupplier: string;
  batchSupplier: string;
  batchDocumentsRoot: string;
  log: (line: string) => void;
}

export interface SoakMinute {
  minute: number;
  rounds: number;
  rounds_per_s: number;
  calls: Record<SoakCall, { p50_ms: number; p99_ms: number }>;
  /** RSS at the end of the minute. */
  rss_mb: { api?: number; workers?: number };
  /** Cohort accounts finished (succeeded or failed) by the end of the minute. */
  cohort_accounts_done: number;
}

export interface SoakPlan {
  query: string;
  /** How the service's connection ran it: a named statement (with PostgreSQL's generic/custom plan counts) or unnamed. */
  statement: string;
  plan: string;
}

export interface SoakResult {
  minutes: SoakMinute[];
  clients: number;
  rounds: number;
  failed_rounds: number;
  /** Last full minute's throughput ÷ the second minute's. */
  throughput_ratio: number;
  /** RSS at the end of the last full minute minus at the end of the first. */
  rss_growth_mb: { api?: number; workers?: number };
  batches: Array<{ accounts: number; state: string; succeeded: number; failed: number; seconds: number }>;
  rows: { rest: Record<string, number>; cohort: Record<string, number> };
  plans: SoakPlan[];
  problems: string[];
}

/** A minute's raw figures while it is being measured. */
interface Bucket {
  rounds: number;
  latencies: Record<SoakCall, number[]>;
}
const newBucket = (): Bucket => ({ rounds: 0, latencies: Object.fromEntries(SOAK_CALLS.map((c) => [c, [] as number[]])) as Record<SoakCall, number[]> });

/** The gas identifier is 1e9 + the generator's meter serial, whose range starts at the cohort's base: it tells cohorts apart. */
const baseOf = (bundle: AccountBundle): number => {
  const gas = (bundle.account.supply_addresses as Array<{ meter_points: Array<{ supply_type: string; identifier: string }> }>)[0]!.meter_points.find((m) => m.supply_type === 'GAS')!;
  return Number(gas.identifier) - 1_000_000_000;
};

/**
 * Mixed REST traffic against growing tables, as a supplier's scripts and an operator's console make
 * it, with cohort batches running beside it: does throughput hold as the tables grow? Each of
 * `clients` loops runs rounds of: stage and process a fresh account, post 3 notes, post 4
 * transactions, post a payment instruction, read the transfer status, read one page (1,000) of
 * the imported list. Figures per minute; afterwards every count and decimal sum is checked, and
 * the plan each list query gets on a connection set up as the service sets up its own is printed.
 */
export async function runSoak(env: BenchEnv, token: string, batchToken: () => Promise<string>, opts: SoakOptions): Promise<SoakResult> {
  const log = opts.log;
  const today = utcDate(new Date());
  const problems: string[] = [];
  const usedBases = new Set<number>();

  // REST accounts come from one lazy generator (no PDFs: the round posts no statements).
  const restGenerator = generateCohort({ count: 10_000_000, supplier: opts.restSupplier, prefix: 'SK', seed: 13, vendor: VENDOR_CODE, today, transactions: 4 });
  let restBase: number | undefined;
  const nextBundle = (): AccountBundle => {
    const b = restGenerator.next().value!.bundle;
    if (restBase === undefined) usedBases.add((restBase = baseOf(b)));
    return b;
  };
  nextBundle(); // fix the REST range before any batch picks one; that first account is simply not used

  const expected = { accounts: 0, imported_notes: 0, transactions: 0, payment_instructions: 0 };
  let restSum = new Decimal(0);
  const buckets: Bucket[] = Array.from({ length: opts.minutes }, newBucket);
  const rss: Array<SoakMinute['rss_mb']> = [];
  const cohortDone: number[] = [];
  let rounds = 0;
  let failedRounds = 0;
  const t0 = performance.now();
  const deadline = t0 + opts.minutes * 60_000;
  const minuteOf = (at: number) => Math.floor((at - t0) / 60_000);

  const round1 = async (): Promise<void> => {
    const b = nextBundle();
    const ext = String(b.account.external_account_number);
    const pair = { import_supplier: opts.restSupplier, external_account_number: ext };
    const transactions = b.transactions!.slice(0, 4);
    const steps: Array<[SoakCall, 'GET' | 'POST', string, unknown, number]> = [
      ['stage', 'POST', '/v1/data-import/account-import-process/create-or-update/', b.account, 201],
      ['process', 'POST', '/v1/data-import/account-import-process/process/', { external_account_number: ext, import_supplier_code: opts.restSupplier, operations_team_name: TEAM }, 201],
      ['notes', 'POST', '/v1/data-import/notes/create/', { ...pair, notes: b.notes!.slice(0, 3) }, 201],
      ['transactions', 'POST', '/v1/data-import/transactions/create/', { ...pair, transactions }, 201],
      ['payment_instruction', 'POST', '/v1/data-import/payment-instruction/create/', { ...pair, ...b.payment_instruction }, 201],
      ['status', 'GET', `/v1/data-import/account-transfer-status/${opts.restSupplier}/${encodeURIComponent(ext)}/`, undefined, 200],
      ['list', 'GET', `/v1/data-import/imported-account-import-processes/${opts.restSupplier}/?page_size=1000`, undefined, 200],
    ];
    for (const [step, method, url, body, want] of steps) {
      const t = performance.now();
      const res = await call(env.apiUrl, token, method, url, body);
      const end = performance.now();
      const m = minuteOf(end);
      if (m < opts.minutes) buckets[m]!.latencies[step].push(end - t);
      if (res.status !== want) {
        failedRounds++;
        if (problems.length < 10) problems.push(`${ext} ${step} answered ${res.status}: ${JSON.stringify(res.body).slice(0, 400)}`);
        return;
      }
      if (step === 'process') expected.accounts++;
      else if (step === 'notes') expected.imported_notes += 3;
      else if (step === 'transactions') {
        expected.transactions += transactions.length;
        for (const tx of transactions) restSum = restSum.plus(String(tx.amount));
      } else if (step === 'payment_instruction') expected.payment_instructions++;
    }
    rounds++;
    const m = minuteOf(performance.now());
    if (m < opts.minutes) buckets[m]!.rounds++;
  };

  // Cohort batches back to back, so the workers load the machine for the whole soak.
  const batches: SoakResult['batches'] = [];
  const cohortExpected = { accounts: 0, sum: new Decimal(0) };
  let cohortFinished = 0;
  let stopBatches = false;
  const runBatches = async () => {
    for (let n = 1; !stopBatches; n++) {
      const file = path.join(env.workDir, `soak-batch-${n}.ndjson`);
      let seed = 100 + n;
      let firstBase: number;
      // A cohort whose meter points are clear of every other one in the database.
      for (;;) {
        const first = cohortWithDocuments({ count: 1, supplier: opts.batchSupplier, documentsRoot: opts.batchDocumentsRoot, prefix: `SB${n}`, seed, docsDir: env.docsDir }).next().value!;
        firstBase = baseOf(first);
        if (!usedBases.has(firstBase)) break;
        seed += 1000;
      }
      usedBases.add(firstBase);
      let sum = new Decimal(0);
      const fd = openSync(file, 'w');
      try {
        for (const bundle of cohortWithDocuments({ count: opts.batchAccounts, supplier: opts.batchSupplier, documentsRoot: opts.batchDocumentsRoot, prefix: `SB${n}`, seed, docsDir: env.docsDir })) {
          for (const tx of bundle.transactions ?? []) sum = sum.plus(String(tx.amount));
          writeSync(fd, `${JSON.stringify(bundle)}\n`);
        }
      } finally {
        closeSync(fd);
      }
      const started = performance.now();
      const t = await batchToken();
      const url = `${env.apiUrl}/v1/data-import/batches/?import_supplier=${encodeURIComponent(opts.batchSupplier)}&operations_team_name=${encodeURIComponent(TEAM)}`;
      const res = await postStream(url, t, createReadStream(file, { highWaterMark: 256 * 1024 }));
      if (res.status !== 202) throw new Error(`soak batch ${n} upload answered ${res.status}: ${res.text.slice(0, 500)}`);
      const { batch_id: batchId } = JSON.parse(res.text) as { batch_id: string };
      cohortExpected.accounts += opts.batchAccounts;
      cohortExpected.sum = cohortExpected.sum.plus(sum);
      const status = await waitForBatch(env, t, batchId, () => (cohortFinished = batches.reduce((a, x) => a + x.accounts, 0)));
      batches.push({ accounts: opts.batchAccounts, state: status.state, succeeded: status.succeeded, failed: status.failed, seconds: round((performance.now() - started) / 1000) });
      cohortFinished = batches.reduce((a, x) => a + x.accounts, 0);
      if (status.state !== 'COMPLETED' || status.succeeded !== opts.batchAccounts) problems.push(`soak batch ${n} ended ${status.state}: ${status.succeeded} succeeded, ${status.failed} failed of ${opts.batchAccounts}`);
      log(`  cohort batch ${n} (${opts.batchAccounts} accounts) ${status.state} in ${((performance.now() - started) / 1000).toFixed(0)} s`);
    }
  };

  const sampleRss = () => {
    const api = env.api ? readMemory(env.api.pid) : null;
    const workers = env.workers.map((w) => readMemory(w.pid)).filter((m) => m !== null);
    return {
      ...(api ? { api: round(mb(api.rssKb), 0) } : {}),
      ...(workers.length > 0 ? { workers: round(mb(workers.reduce((a, w) => a + w.rssKb, 0)), 0) } : {}),
    };
  };

  const probe = await startPlanProbe(env, opts.restSupplier);
  const batchesDone = runBatches().catch((err: unknown) => {
    problems.push(`cohort batches: ${err instanceof Error ? err.message : String(err)}`);
  });
  const clients = Array.from({ length: opts.clients }, async () => {
    while (performance.now() < deadline) await round1();
  });
  // The minute ticks: RSS and progress at each minute's end, and one line of figures.
  for (let m = 0; m < opts.minutes; m++) {
    await sleep(Math.max(0, t0 + (m + 1) * 60_000 - performance.now()));
    rss[m] = sampleRss();
    cohortDone[m] = cohortFinished;
    const b = buckets[m]!;
    const d = (c: SoakCall) => distribution(b.latencies[c]);
    log(`  minute ${m + 1}: ${fmt(b.rounds / 60)} rounds/s; stage p50 ${ms(d('stage').p50)} ms, process p50 ${ms(d('process').p50)} ms, list p50 ${ms(d('list').p50)} p99 ${ms(d('list').p99)} ms; RSS api ${rss[m]!.api ?? 'n/a'} MB, workers ${rss[m]!.workers ?? 'n/a'} MB`);
  }
  await Promise.all(clients);
  stopBatches = true;
  log('  waiting for the running cohort batch to finish');
  await batchesDone;

  const minutes: SoakMinute[] = buckets.map((b, i) => ({
    minute: i + 1,
    rounds: b.rounds,
    rounds_per_s: round(b.rounds / 60),
    calls: Object.fromEntries(
      SOAK_CALLS.map((c) => {
        const d = distribution(b.latencies[c]);
        return [c, { p50_ms: round(d.p50), p99_ms: round(d.p99) }];
      }),
    ) as SoakMinute['calls'],
    rss_mb: rss[i] ?? {},
    cohort_accounts_done: cohortDone[i] ?? 0,
  }));
  const last = minutes.at(-1)!;
  const second = minutes[1] ?? minutes[0]!;
  const growth = (k: 'api' | 'workers') => {
    const a = minutes[0]!.rss_mb[k];
    const z = last.rss_mb[k];
    return a === undefined || z === undefined ? undefined : z - a;
  };
  const apiGrowth = growth('api');
  const workersGrowth = growth('workers');

  // Every count and every sum, exactly.
  const rest = await rowCounts(env, opts.restSupplier);
  const cohort = await rowCounts(env, opts.batchSupplier);
  for (const [k, n] of Object.entries(expected)) if (rest[k] !== n) problems.push(`REST ${k}: ${rest[k]} rows, expected ${n}`);
  const cohortWant = { accounts: cohortExpected.accounts, imported_notes: cohortExpected.accounts * 3, transactions: cohortExpected.accounts * 10, statements: cohortExpected.accounts * 2, payment_instructions: cohortExpected.accounts };
  for (const [k, n] of Object.entries(cohortWant)) if (cohort[k] !== n) problems.push(`cohort ${k}: ${cohort[k]} rows, expected ${n}`);
  const sums = await transactionSums(env, [opts.restSupplier, opts.batchSupplier]);
  if (sums[opts.restSupplier] !== restSum.toString()) problems.push(`REST transactions sum to ${sums[opts.restSupplier]}, expected ${restSum.toString()}`);
  if (sums[opts.batchSupplier] !== cohortExpected.sum.toString()) problems.push(`cohort transactions sum to ${sums[opts.batchSupplier]}, expected ${cohortExpected.sum.toString()}`);
  log(`  exact: REST ${rest.accounts} accounts, ${rest.transactions} transactions summing to ${sums[opts.restSupplier]}; cohort ${cohort.accounts} accounts, ${cohort.transactions} transactions summing to ${sums[opts.batchSupplier]}`);

  return {
    minutes,
    clients: opts.clients,
    rounds,
    failed_rounds: failedRounds,
    throughput_ratio: round(last.rounds_per_s / second.rounds_per_s),
    rss_growth_mb: { ...(apiGrowth === undefined ? {} : { api: apiGrowth }), ...(workersGrowth === undefined ? {} : { workers: workersGrowth }) },
    batches,
    rows: { rest, cohort },
    plans: await probe.finish(),
    problems,
  };
}

async function waitForBatch(env: BenchEnv, token: string, batchId: string, tick: () => void): Promise<{ state: string; succeeded: number; failed: number }> {
  let lastDone = -1;
  let lastChange = Date.now();
  for (;;) {
    const row = await env.db.selectFrom('batches').select(['state']).where('id', '=', batchId).executeTakeFirstOrThrow();
    if (row.state !== 'RUNNING' && row.state !== 'UPLOADING') break;
    const done = await env.db.selectFrom('batch_items').select((eb) => eb.fn.countAll<string>().as('n')).where('batch_id', '=', batchId).where('state', 'in', ['succeeded', 'failed']).executeTakeFirstOrThrow();
    if (Number(done.n) !== lastDone) {
      lastDone = Number(done.n);
      lastChange = Date.now();
    } else if (Date.now() - lastChange > 180_000) throw new Error(`batch ${batchId} made no progress for 180 s`);
    tick();
    await sleep(1000);
  }
  const status = (await call(env.apiUrl, token, 'GET', `/v1/data-import/batches/${batchId}/`)).body as { state: string; succeeded: number; failed: number };
  return status;
}

/** Σ amount of every transaction of each supplier's accounts, as PostgreSQL's numeric prints it. */
async function transactionSums(env: BenchEnv, suppliers: readonly string[]): Promise<Record<string, string>> {
  const rows = await env.db
    .selectFrom('account_transactions as t')
    .innerJoin('accounts as a', 'a.id', 't.account_id')
    .innerJoin('import_suppliers as s', 's.id', 'a.import_supplier_id')
    .select(['s.code', (eb) => eb.fn.sum<string>('t.amount').as('total')])
    .where('s.code', 'in', suppliers)
    .groupBy('s.code')
    .execute();
  const out: Record<string, string> = Object.fromEntries(suppliers.map((s) => [s, '0']));
  // Decimal normalises PostgreSQL's trailing zeros, as the expected sums are normalised.
  for (const r of rows) out[r.code] = new Decimal(r.total).toString();
  return out;
}

const PLAN_CASES: ReadonlyArray<[ListKind, number]> = [
  ['imported', 1000],
  ['imported', 50],
  ['all', 1000],
  ['pending', 1000],
];

/**
 * The plan each list query gets on a connection opened the way the service opens its own (createDb,
 * with the service's statement settings) when the soak starts, and used through it as a pool uses
 * its connections: it runs every list query every 2 s while the tables grow, so PostgreSQL makes its
 * choice between a generic and a custom plan at about the table size the API's connections make it.
 * At the end each is explained on that connection: what the API really runs after the growth, not
 * what a fresh psql would. finish() explains and closes.
 */
export async function startPlanProbe(env: BenchEnv, supplierCode: string): Promise<{ finish(): Promise<SoakPlan[]> }> {
  const preparedStatements = process.env.DATABASE_PREPARED_STATEMENTS !== 'false';
  const { db, pool } = createDb(env.databaseUrl, { max: 1, preparedStatements });
  const supplier = await db.selectFrom('import_suppliers').select('id').where('code', '=', supplierCode).executeTakeFirstOrThrow();
  const client = await pool.connect();
  const compiled = PLAN_CASES.map(([kind, limit]) => ({ kind, limit, ...listProcessesQuery(db, supplier.id, kind, null, limit).compile() }));
  let running: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    running = running.then(async () => {
      for (const c of compiled) await client.query(c.sql, c.parameters as unknown[]);
    }).catch(() => undefined); // a failed tick shows in the final explain, which runs the same statements
  }, 2_000);
  return {
    async finish() {
      clearInterval(timer);
      await running;
      const plans: SoakPlan[] = [];
      try {
        for (const c of compiled) {
          await client.query(c.sql, c.parameters as unknown[]);
          const named = await client.query<{ name: string; generic_plans: string; custom_plans: string }>(
            'SELECT name, generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1',
            [c.sql],
          );
          const literals = (c.parameters as unknown[]).map((p) => (typeof p === 'number' ? String(p) : pg.escapeLiteral(String(p))));
          const row = named.rows[0];
          const explained = row
            ? await client.query(`EXPLAIN (ANALYZE, COSTS, BUFFERS) EXECUTE ${pg.escapeIdentifier(row.name)}(${literals.join(', ')})`)
            : await client.query(`EXPLAIN (ANALYZE, COSTS, BUFFERS) ${c.sql.replace(/\$(\d+)/g, (_, n: string) => literals[Number(n) - 1]!)}`);
          plans.push({
            query: `${c.kind} list, page_size ${c.limit}`,
            statement: row ? `named (${row.generic_plans} generic, ${row.custom_plans} custom plans so far)` : 'unnamed (planned for its parameters)',
            plan: (explained.rows as Array<{ 'QUERY PLAN': string }>).map((r) => r['QUERY PLAN']).join('\n'),
          });
        }
      } finally {
        client.release();
        await db.destroy();
      }
      return plans;
    },
  };
}

export function renderSoak(r: SoakResult): string {
  const rows: string[][] = [['minute', 'rounds/s', ...SOAK_CALLS.map((c) => `${c} p50/p99`), 'api MB', 'workers MB', 'cohort done']];
  for (const m of r.minutes) {
    rows.push([String(m.minute), fmt(m.rounds_per_s), ...SOAK_CALLS.map((c) => `${ms(m.calls[c].p50_ms)}/${ms(m.calls[c].p99_ms)}`), String(m.rss_mb.api ?? 'n/a'), String(m.rss_mb.workers ?? 'n/a'), String(m.cohort_accounts_done)]);
  }
  const plans = r.plans.map((p) => `  ${p.query}: ${p.statement}\n${p.plan.split('\n').map((l) => `    ${l}`).join('\n')}`).join('\n');
  return [
    `soak: ${r.clients} REST clients, ${r.rounds} rounds (${r.failed_rounds} failed); cohort batches beside them: ${r.batches.map((b) => `${b.accounts} ${b.state} in ${b.seconds} s`).join(', ') || 'none finished'}`,
    'per minute (calls in ms):',
    table(rows),
    'list queries as the service runs them:',
    plans,
  ].join('\n');
}

export function soakLine(r: SoakResult): string {
  const g = (n: number | undefined) => (n === undefined ? 'n/a' : `${n >= 0 ? '+' : ''}${n}`);
  return `soak: throughput_ratio=${fmt(r.throughput_ratio, 2)} rss_growth_mb=api:${g(r.rss_growth_mb.api)},workers:${g(r.rss_growth_mb.workers)}`;
}
