import { createReadStream } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import { sql } from 'kysely';
import { STAGES, type Stage } from '../../src/queue/contract.js';
import type { CohortFile } from './cohort.js';
import { restartWorkerProcesses, TEAM, workerProcessName, type BenchEnv } from './env.js';
import { call, postStream } from './http-client.js';
import { Meter, type CpuSeconds, type ProcessFigures } from './meter.js';
import { perUnit, settledCounters, type PerUnit } from './pgstats.js';
import { distribution, round } from './stats.js';

export interface StageTiming {
  /** Completed jobs of this batch still in Redis (BullMQ keeps the last 10,000 per queue). */
  sampled: number;
  /** finishedOn − processedOn: the job's own work. */
  run_p50_ms: number;
  run_p99_ms: number;
  /** processedOn − timestamp: time spent queued. */
  wait_p50_ms: number;
  wait_p99_ms: number;
}

export interface CohortResult {
  accounts: number;
  /** Worker processes driving the batch (--worker-processes). */
  worker_processes: number;
  upload_bytes: number;
  /** Upload start to the 202. */
  upload_seconds: number;
  /** Upload start to the batch's finished_at. */
  seconds: number;
  accounts_per_s: number;
  batch: { state: string; total_items: number; succeeded: number; failed: number };
  stages: Record<Stage, StageTiming>;
  /** workers: the largest single worker process's peak. */
  peak_rss_mb: Partial<Record<'api' | 'workers', number>>;
  peak_rss_scope: string;
  /** workers: the CPU of every worker process together. */
  cpu_s: CpuSeconds;
  /** With more than one worker process, each one's own figures in start order, so the sum and the largest hide nothing. */
  per_worker_process?: Array<ProcessFigures & { crashes: number }>;
  rows: Record<string, number>;
  /** What PostgreSQL did per account (pg_stat_database of the run's database). */
  pg_per_account: PerUnit;
  /** Crashes of worker processes during the batch (each is restarted, as a supervisor would; with several, each names its process). */
  worker_crashes: string[];
  /** Redis commands per account during the batch (INFO commandstats of the whole server: read on a quiet one), and the most frequent. */
  redis_commands_per_account: number;
  redis_top_commands: Array<{ command: string; per_account: number }>;
  problems: string[];
}

const STALL_MS = 180_000;

/** Uploads the cohort file as one batch and waits for the workers to finish it. */
export async function runCohort(
  env: BenchEnv,
  newToken: () => Promise<string>,
  supplier: string,
  cohort: CohortFile,
  opts: { settleMs: number; log: (line: string) => void },
): Promise<CohortResult> {
  const log = opts.log;
  let token = await newToken();
  const pgBefore = await settledCounters(env.databaseUrl, opts.settleMs);
  const processes = env.workers.length;
  const redisBefore = await commandStats(env);
  const meter = new Meter({ api: env.api?.pid, workers: env.workers.map((w) => w.pid) });
  meter.start();
  const t0 = Date.now();
  const url = `${env.apiUrl}/v1/data-import/batches/?import_supplier=${encodeURIComponent(supplier)}&operations_team_name=${encodeURIComponent(TEAM)}`;
  const res = await postStream(url, token, createReadStream(cohort.file, { highWaterMark: 256 * 1024 }));
  const uploadSeconds = (Date.now() - t0) / 1000;
  if (res.status !== 202) throw new Error(`cohort upload answered ${res.status}: ${res.text.slice(0, 1000)}`);
  const { batch_id: batchId, total_items: totalItems } = JSON.parse(res.text) as { batch_id: string; total_items: number };
  log(`  uploaded ${cohort.count} accounts (${(cohort.bytes / 1e6).toFixed(1)} MB) in ${uploadSeconds.toFixed(1)} s; batch ${batchId} running`);

  // The end: the batch row, by primary key (finished_at gives the exact time, so the interval does not
  // matter). Progress: open jobs in Redis, so that watching costs PostgreSQL nothing measurable.
  const queues = STAGES.map((name) => new Queue(name, { connection: env.redis, prefix: env.redisPrefix }));
  const open = async () => {
    const counts = await Promise.all(queues.map((q) => q.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'paused')));
    return counts.reduce((n, c) => n + Object.values(c).reduce((a, b) => a + b, 0), 0);
  };
  let lastProgress = -1;
  let lastChange = Date.now();
  let lastReport = Date.now();
  let lastLog = 0;
  let finishedAt: Date | null = null;
  let state = 'RUNNING';
  const crashes: string[] = [];
  const crashedSlots: number[] = [];
  const theWorkers = processes === 1 ? 'the worker process' : 'the worker processes';
  for (;;) {
    const row = await env.db.selectFrom('batches').select(['state', 'finished_at']).where('id', '=', batchId).executeTakeFirstOrThrow();
    state = row.state;
    if (state !== 'RUNNING' && state !== 'UPLOADING') {
      finishedAt = row.finished_at;
      break;
    }
    if (Date.now() - lastReport >= 5_000 || lastProgress < 0) {
      lastReport = Date.now();
      meter.sample();
      const done = Math.max(0, cohort.count - (await open()));
      if (done !== lastProgress) {
        lastProgress = done;
        lastChange = Date.now();
      } else if (Date.now() - lastChange > STALL_MS) {
        throw new Error(`batch ${batchId} made no progress for ${STALL_MS / 1000} s (${done}/${cohort.count} done):\n${workerOutput(env, 3000)}`);
      }
      const dead = env.workers.flatMap((w, slot) => (w.running() ? [] : [slot]));
      for (const slot of dead) {
        const w = env.workers[slot]!;
        const tail = w.output().trim().split('\n').slice(-40).join('\n');
        // With several processes, each crash says whose it was.
        crashes.push(processes === 1 ? tail : `${workerProcessName(slot, processes)}:\n${tail}`);
        crashedSlots.push(slot);
        if (crashes.length > 3) throw new Error(`${theWorkers} died ${crashes.length} times; last output:\n${tail}`);
        log(`  WARNING: ${workerProcessName(slot, processes)} died (exit ${w.child.exitCode ?? w.child.signalCode}); restarting it. Its output:\n${tail}`);
      }
      if (dead.length > 0) {
        // As a process supervisor would: restart them; their jobs run again once their locks expire.
        await restartWorkerProcesses(env, dead);
        meter.track({ workers: env.workers.map((w) => w.pid) });
      }
      const elapsed = (Date.now() - t0) / 1000;
      // Every 5 s at first, then about ten lines per run's length so far (at most one every 30 s).
      if (Date.now() - lastLog >= Math.min(30_000, Math.max(5_000, (elapsed * 1000) / 10))) {
        lastLog = Date.now();
        log(`  ${String(done).padStart(String(cohort.count).length)}/${cohort.count} done after ${elapsed.toFixed(0)} s (${(done / elapsed).toFixed(1)} accounts/s)`);
      }
    }
    await sleep(500);
  }
  await Promise.all(queues.map((q) => q.close()));
  const endMs = finishedAt ? finishedAt.getTime() : Date.now();
  const measured = meter.stop();
  const redisAfter = await commandStats(env);
  const seconds = (endMs - t0) / 1000;
  token = await newToken(); // access tokens live an hour: a long batch can outlive the first one
  const pgAfter = await settledCounters(env.databaseUrl, opts.settleMs);

  const status = (await call(env.apiUrl, token, 'GET', `/v1/data-import/batches/${batchId}/`)).body as { state: string; total_items: number; succeeded: number; failed: number };
  const problems: string[] = [];
  if (totalItems !== cohort.count) problems.push(`the upload accepted ${totalItems} items, not ${cohort.count}`);
  if (status.state !== 'COMPLETED' || status.succeeded !== cohort.count || status.failed !== 0) {
    problems.push(`batch ended ${status.state} with ${status.succeeded} succeeded and ${status.failed} failed of ${cohort.count}`);
    const failed = (await call(env.apiUrl, token, 'GET', `/v1/data-import/batches/${batchId}/items/?state=failed&page_size=3`)).body;
    problems.push(`first failed items: ${JSON.stringify(failed).slice(0, 1500)}`);
  }
  if (crashes.length > 0) problems.push(`${theWorkers} crashed ${crashes.length} time(s)${processes === 1 ? ' and was restarted' : ' in all, each time restarted'} (figures include the recovery); first crash:\n${crashes[0]}`);
  const rows = await rowCounts(env, supplier);
  const expected: Record<string, number> = {
    accounts: cohort.count,
    imported_notes: cohort.count * 3,
    transactions: cohort.count * 10,
    statements: cohort.count * 2,
    payment_instructions: cohort.count,
  };
  for (const [table, n] of Object.entries(expected)) if (rows[table] !== n) problems.push(`${table}: ${rows[table]} rows, expected ${n}`);

  return {
    accounts: cohort.count,
    worker_processes: processes,
    upload_bytes: cohort.bytes,
    upload_seconds: round(uploadSeconds),
    seconds: round(seconds),
    accounts_per_s: round(cohort.count / seconds),
    batch: { state: status.state, total_items: status.total_items, succeeded: status.succeeded, failed: status.failed },
    stages: await stageTimings(env, batchId),
    peak_rss_mb: measured.peakRssMb,
    peak_rss_scope: measured.peakRssScope,
    cpu_s: measured.cpu,
    ...(processes > 1 ? { per_worker_process: measured.workerProcesses.map((f, slot) => ({ ...f, crashes: crashedSlots.filter((s) => s === slot).length })) } : {}),
    rows,
    pg_per_account: perUnit(pgBefore, pgAfter, cohort.count),
    worker_crashes: crashes,
    ...redisPerAccount(redisBefore, redisAfter, cohort.count),
    problems,
  };
}

/** Calls per Redis command so far (INFO commandstats; commands run by BullMQ's scripts count too). */
async function commandStats(env: BenchEnv): Promise<Map<string, number>> {
  const text = await env.redis.info('commandstats');
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out.set(m[1]!, Number(m[2]));
  return out;
}

function redisPerAccount(before: Map<string, number>, after: Map<string, number>, accounts: number) {
  const diff = [...after].map(([command, n]) => ({ command, n: n - (before.get(command) ?? 0) })).filter((d) => d.n > 0);
  const total = diff.reduce((a, d) => a + d.n, 0);
  return {
    redis_commands_per_account: round(total / accounts, 1),
    redis_top_commands: diff
      .sort((a, b) => b.n - a.n)
      .slice(0, 8)
      .map((d) => ({ command: d.command, per_account: round(d.n / accounts, 1) })),
  };
}

/** The worker processes' recent output, each under its name when there are several. */
function workerOutput(env: BenchEnv, chars: number): string {
  if (env.workers.length === 1) return env.workers[0]!.output().slice(-chars);
  return env.workers.map((w) => `[${w.name}]\n${w.output().slice(-chars)}`).join('\n');
}

/** Per-stage job durations from the completed jobs BullMQ still holds for this batch. */
async function stageTimings(env: BenchEnv, batchId: string): Promise<Record<Stage, StageTiming>> {
  const out = {} as Record<Stage, StageTiming>;
  for (const stage of STAGES) {
    const queue = new Queue(stage, { connection: env.redis, prefix: env.redisPrefix });
    try {
      const run: number[] = [];
      const wait: number[] = [];
      const page = 1000;
      for (let start = 0; ; start += page) {
        const jobs = await queue.getJobs(['completed'], start, start + page - 1, true);
        for (const job of jobs) {
          if (!job || (job.data as { batchId?: string }).batchId !== batchId) continue;
          if (job.processedOn && job.finishedOn) run.push(job.finishedOn - job.processedOn);
          if (job.processedOn) wait.push(job.processedOn - job.timestamp);
        }
        if (jobs.length < page) break;
      }
      const r = distribution(run);
      const w = distribution(wait);
      out[stage] = { sampled: r.n, run_p50_ms: r.p50, run_p99_ms: r.p99, wait_p50_ms: w.p50, wait_p99_ms: w.p99 };
    } finally {
      await queue.close();
    }
  }
  return out;
}

/** Rows the cohort's accounts own, by table. */
export async function rowCounts(env: Pick<BenchEnv, 'db'>, supplier: string): Promise<Record<string, number>> {
  const { rows } = await sql<Record<string, string>>`
    WITH a AS (SELECT a.id FROM accounts a JOIN import_suppliers s ON s.id = a.import_supplier_id WHERE s.code = ${supplier})
    SELECT
      (SELECT count(*) FROM a) AS accounts,
      (SELECT count(*) FROM account_notes n WHERE n.account_id IN (SELECT id FROM a) AND n.origin = 'IMPORTED') AS imported_notes,
      (SELECT count(*) FROM account_notes n WHERE n.account_id IN (SELECT id FROM a)) AS notes,
      (SELECT count(*) FROM account_transactions t WHERE t.account_id IN (SELECT id FROM a)) AS transactions,
      (SELECT count(*) FROM historical_statements h WHERE h.account_id IN (SELECT id FROM a)) AS statements,
      (SELECT count(*) FROM payment_instructions p WHERE p.account_id IN (SELECT id FROM a)) AS payment_instructions
  `.execute(env.db);
  return Object.fromEntries(Object.entries(rows[0] ?? {}).map(([k, v]) => [k, Number(v)]));
}
