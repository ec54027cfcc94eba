#!/usr/bin/env node
/**
 * `npm run bench`: the service's throughput figures on the local PostgreSQL and Redis, in one run.
 *
 *   cohort   a generated cohort uploaded as one batch, driven by separate worker processes (default one)
 *   ceiling  the same rows written by a tight pg loop, one transaction per account
 *   limit    the same rows bulk-loaded in sets of 1,000 accounts (what PostgreSQL allows here)
 *   peer     a smaller cohort through the REST endpoints, as suppliers' scripts do today
 *   http     the validate endpoint under autocannon, next to a bare route of the same server
 *   upload   a large NDJSON upload with the workers stopped: does the API stream it?
 *   registration  meter points marked, their requests sent to a loopback gateway, its events applied
 *
 * Each run owns a fresh database, a fresh Redis key prefix and a temporary documents folder, and
 * removes them at the end (also on failure and Ctrl-C). See bench/README.md.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, USAGE, UsageError, type BenchOptions, type Scenario } from './lib/args.js';
import { countRows, runCeiling, runLimit } from './lib/ceiling.js';
import { cleanup, installSignalHandlers, isCleaningUp } from './lib/cleanup.js';
import { cohortAvoiding, writeCohortFile, type CohortFile } from './lib/cohort.js';
import { checkpoint, createBenchEnv, obtainToken, setupSupplier, setupTeam, startApi, startWorkerProcesses, stopWorkerProcesses, type BenchEnv } from './lib/env.js';
import { runHttp } from './lib/http-load.js';
import { runPeer } from './lib/peer.js';
import { runRegistration } from './lib/registration.js';
import { runCohort } from './lib/pipeline.js';
import { machineLine, ratiosLine, ratiosOf, registrationLine, renderReport, targetsOf, type Machine, type Outcome, type Results } from './lib/report.js';
import { pgClient } from './lib/pg.js';
import { runUpload } from './lib/upload.js';
import { renderSoak, runSoak, soakLine, type SoakResult } from './lib/soak.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const log = (line: string) => console.log(line);

const SUPPLIERS = { cohort: 'BENCH', peer: 'PEER', upload: 'UPLOAD' } as const;

async function main(): Promise<number> {
  let opts: BenchOptions | 'help';
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`${err.message}\n\n${USAGE}`);
      return 2;
    }
    throw err;
  }
  if (opts === 'help') {
    console.log(USAGE);
    return 0;
  }
  installSignalHandlers();
  const started = new Date();
  const has = (s: Scenario) => opts.only.has(s);
  const mode = opts.smoke ? 'smoke' : 'full';
  log(opts.soak ? `data-import bench: soak for ${opts.minutes} minutes` : `data-import bench (${mode}): ${[...opts.only].join(', ')}`);

  const build = opts.build ? runBuild() : { ran: false, ok: true, seconds: 0, output: '' };
  const env = await createBenchEnv({ root: ROOT, keep: opts.keep, log });
  log(`database ${env.dbName}, Redis prefix ${env.redisPrefix}, documents in ${env.docsDir}`);
  const profileDir = path.join(ROOT, 'bench', 'results', `profiles-${started.toISOString().slice(0, 16).replace(':', '-')}`);
  if (opts.profile) {
    mkdirSync(profileDir, { recursive: true });
    env.nodeFlags.push('--cpu-prof', `--cpu-prof-dir=${profileDir}`);
    log(`profiling the service processes into ${path.relative(process.cwd(), profileDir)} (written when each process exits)`);
  }
  const machine = await machineInfo(env);
  log(`machine: ${machineLine(machine)}`);
  if (machine.load_average_at_start[0]! > machine.cores / 2) {
    log(`WARNING: the machine is busy (load average ${machine.load_average_at_start[0]} on ${machine.cores} cores): figures will be noisy; see the pg_other and machine CPU columns`);
  }

  if (opts.soak) return soakMode(env, opts, machine, started);
  if (opts.scaling) return scalingMode(env, opts, opts.scaling);

  const results: Results = {};
  // How long to wait for PostgreSQL's statistics to settle around each scenario (short in smoke mode).
  const settleMs = opts.smoke ? 3_000 : 12_000;
  let cohortFile: CohortFile | undefined;
  let pipelineRows: Record<string, number> | undefined;
  /** A scenario that writes the cohort's rows its own way must write exactly the pipeline's rows. */
  const sameRows = <T extends { rows: Record<string, number>; problems: string[] }>(name: string, r: T): T => {
    if (!pipelineRows) return r;
    const differ = Object.keys(pipelineRows).filter((t) => pipelineRows![t] !== r.rows[t]);
    for (const t of differ) r.problems.push(`${name} wrote ${r.rows[t]} rows to ${t}, the pipeline ${pipelineRows[t]}`);
    return r;
  };
  try {
    await setupTeam(env);
    for (const [scenario, code] of Object.entries(SUPPLIERS)) {
      if (has(scenario as Scenario) || (scenario === 'cohort' && has('http'))) await setupSupplier(env, code, code.toLowerCase());
    }
    // The registration scenario runs its workers in this process and needs no API.
    if ([...opts.only].some((s) => s !== 'registration')) {
      await startApi(env);
      log(`API (pid ${env.api!.pid}) on ${env.apiUrl}; sandbox vendor on ${env.vendor.baseUrl}`);
    }

    if (has('cohort') || has('ceiling') || has('limit')) {
      const t = performance.now();
      cohortFile = writeCohortFile(
        { count: opts.accounts, supplier: SUPPLIERS.cohort, documentsRoot: 'bench', prefix: 'BN', seed: 7, docsDir: env.docsDir },
        path.join(env.workDir, 'cohort.ndjson'),
      );
      log(`generated ${cohortFile.count} accounts (${(cohortFile.bytes / 1e6).toFixed(1)} MB NDJSON, ${cohortFile.count * 2} PDFs) in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    }

    if (has('cohort')) {
      results.cohort = await scenario('cohort', async () => {
        await startWorkerProcesses(env, opts.workerProcesses);
        const pids = env.workers.map((w) => w.pid).join(', ');
        log(opts.workerProcesses === 1 ? `  worker process (pid ${pids}) connected to every stage queue` : `  ${opts.workerProcesses} worker processes (pids ${pids}) connected to every stage queue`);
        await checkpoint(env.databaseUrl);
        let keys = 0;
        try {
          const result = await runCohort(env, () => obtainToken(env, `bench-cohort-${++keys}`), SUPPLIERS.cohort, cohortFile!, { settleMs, log });
          // What the pipeline wrote, table by table, before any other scenario adds rows: the ceiling and the limit must write the same.
          const client = pgClient({ connectionString: env.databaseUrl });
          await client.connect();
          try {
            pipelineRows = await countRows(client);
          } finally {
            await client.end();
          }
          return result;
        } finally {
          // The remaining scenarios do not use the workers, and the upload must run without them.
          await stopWorkerProcesses(env);
        }
      });
    }

    if (has('ceiling')) {
      results.ceiling = await scenario('ceiling', async () => {
        const url = await env.siblingDatabase('ceiling');
        await checkpoint(url);
        return sameRows('ceiling', await runCeiling(url, cohortFile!, opts.ceilingConcurrency, settleMs));
      });
    }

    if (has('limit')) {
      results.limit = await scenario('limit', async () => {
        const url = await env.siblingDatabase('limit');
        await checkpoint(url);
        return sameRows('limit', await runLimit(url, cohortFile!, opts.limitLoaders, opts.limitSetSize, settleMs));
      });
    }

    if (has('peer')) {
      results.peer = await scenario('peer', async () => {
        const bundles = cohortAvoiding({ count: opts.peerAccounts, supplier: SUPPLIERS.peer, documentsRoot: 'peer', prefix: 'PR', seed: 11, docsDir: env.docsDir }, cohortFile?.identifiers ?? new Set());
        await checkpoint(env.databaseUrl);
        const token = await obtainToken(env, 'bench-peer');
        return runPeer(env, token, SUPPLIERS.peer, bundles, opts.peerClients, settleMs);
      });
    }

    if (has('http')) {
      results.http = await scenario('http', async () => {
        const token = await obtainToken(env, 'bench-http');
        return runHttp(env, token, SUPPLIERS.cohort, { connections: opts.httpConnections, seconds: opts.httpSeconds, warmupSeconds: opts.httpWarmupSeconds });
      });
    }

    if (has('upload')) {
      results.upload = await scenario('upload', async () => {
        await stopWorkerProcesses(env);
        await checkpoint(env.databaseUrl);
        const token = await obtainToken(env, 'bench-upload');
        return runUpload(env, token, SUPPLIERS.upload, opts.uploadLines, settleMs);
      });
    }

    if (has('registration')) {
      results.registration = await scenario('registration', () => runRegistration(env, { accounts: opts.registrationAccounts, settleMs, log }));
    }
  } finally {
    log('cleaning up');
    await cleanup();
  }

  const problems = Object.entries(results).flatMap(([name, o]: [string, Outcome<{ problems: string[] }>]) =>
    o.ok ? o.result.problems.map((p) => `${name}: ${p}`) : [`${name}: ${o.error}`],
  );
  if (build.ran && !build.ok) problems.unshift(`build: npm run build failed; measured the JavaScript tsc emitted anyway:\n${build.output}`);
  const ratios = ratiosOf(results);
  const header = `== data-import bench, ${started.toISOString().slice(0, 16)}Z, ${mode} ==`;
  const report = renderReport(results, machine, header, opts.smoke);

  const file = opts.out ?? path.join(ROOT, 'bench', 'results', `${started.toISOString().slice(0, 16).replace(':', '-')}${opts.smoke ? '-smoke' : ''}.json`);
  mkdirSync(path.dirname(file), { recursive: true });
  const countsExact = problems.filter((p) => !p.startsWith('build:')).length === 0;
  writeFileSync(
    file,
    `${JSON.stringify(
      {
        date: started.toISOString(),
        mode,
        options: { ...opts, only: [...opts.only] },
        machine: { ...machine, load_average_at_end: os.loadavg().map((n) => Math.round(n * 100) / 100) },
        build: { ran: build.ran, ok: build.ok, seconds: build.seconds },
        scenarios: results,
        ratios,
        targets: targetsOf(ratios),
        counts_exact: countsExact,
        problems,
      },
      null,
      2,
    )}\n`,
  );

  log('');
  log(report);
  log('');
  if (problems.length > 0) {
    log('problems:');
    for (const p of problems) log(`  - ${p}`);
  }
  log(`${countsExact ? 'every count exact' : 'RUN INCOMPLETE: counts not exact (exit 1)'}; figures written to ${path.relative(process.cwd(), file)}`);
  log(ratiosLine(ratios));
  const registration = registrationLine(results);
  if (registration) log(registration);
  return countsExact ? 0 : 1;
}

/**
 * --scaling: the cohort alone at each size in turn, on one database (so the later, larger cohort runs
 * against the tables the earlier one filled, as a deployment's second migration does), and whether
 * accounts per second holds within 15%. Only inexact counts fail the run.
 */
async function scalingMode(env: BenchEnv, opts: BenchOptions, sizes: readonly number[]): Promise<number> {
  const runs: Array<{ accounts: number; accounts_per_s: number | null; problems: string[] }> = [];
  const settleMs = opts.smoke ? 3_000 : 12_000;
  try {
    await setupTeam(env);
    await startApi(env);
    await startWorkerProcesses(env, opts.workerProcesses);
    let keys = 0;
    for (const [i, count] of sizes.entries()) {
      const supplier = `SCALE${i + 1}`;
      await setupSupplier(env, supplier, supplier.toLowerCase());
      const file = writeCohortFile(
        { count, supplier, documentsRoot: supplier.toLowerCase(), prefix: `S${i + 1}`, seed: 70 + i, docsDir: env.docsDir },
        path.join(env.workDir, `scaling-${count}.ndjson`),
      );
      const outcome = await scenario(`cohort of ${count}`, async () => {
        await checkpoint(env.databaseUrl);
        return runCohort(env, () => obtainToken(env, `bench-scaling-${++keys}`), supplier, file, { settleMs, log });
      });
      runs.push(outcome.ok ? { accounts: count, accounts_per_s: outcome.result.accounts_per_s, problems: outcome.result.problems } : { accounts: count, accounts_per_s: null, problems: [outcome.error] });
    }
  } finally {
    log('cleaning up');
    await cleanup();
  }
  const rates = runs.map((r) => r.accounts_per_s).filter((r): r is number => r !== null);
  const within = rates.length === runs.length && rates.length > 1 ? Math.min(...rates) / Math.max(...rates) >= 0.85 : null;
  const problems = runs.flatMap((r) => r.problems.map((p) => `cohort of ${r.accounts}: ${p}`));
  log('');
  for (const p of problems) log(`  - ${p}`);
  log(`scaling: ${runs.map((r) => `${r.accounts}=${r.accounts_per_s ?? 'failed'}`).join(' ')} within_15pct=${within === null ? 'n/a' : within ? 'yes' : 'no'}`);
  return problems.length === 0 ? 0 : 1;
}

/** --soak: the REST soak with cohort batches beside it, instead of the scenarios. */
async function soakMode(env: BenchEnv, opts: BenchOptions, machine: Machine, started: Date): Promise<number> {
  let result: SoakResult | undefined;
  let failure: string | undefined;
  try {
    await setupTeam(env);
    await setupSupplier(env, 'SOAK', 'soak');
    await setupSupplier(env, 'SOAKB', 'soakb');
    await startApi(env);
    log(`API (pid ${env.api!.pid}) on ${env.apiUrl}; sandbox vendor on ${env.vendor.baseUrl}`);
    await startWorkerProcesses(env, opts.workerProcesses);
    log(`worker process(es) (pid ${env.workers.map((w) => w.pid).join(', ')}) connected to every stage queue`);
    await checkpoint(env.databaseUrl);
    const token = await obtainToken(env, 'bench-soak');
    let keys = 0;
    log(`\n-- soak: ${opts.soakClients} REST clients for ${opts.minutes} minutes, cohort batches of ${opts.soakBatchAccounts} beside them`);
    result = await runSoak(env, token, () => obtainToken(env, `bench-soak-batch-${++keys}`), {
      minutes: opts.minutes,
      clients: opts.soakClients,
      batchAccounts: opts.soakBatchAccounts,
      restSupplier: 'SOAK',
      batchSupplier: 'SOAKB',
      batchDocumentsRoot: 'soakb',
      log,
    });
  } catch (err) {
    failure = err instanceof Error ? err.message : String(err);
    log(`soak FAILED: ${failure}`);
  } finally {
    log('cleaning up');
    await cleanup();
  }
  const problems = failure ? [failure] : (result?.problems ?? []);
  const file = opts.out ?? path.join(ROOT, 'bench', 'results', `${started.toISOString().slice(0, 16).replace(':', '-')}-soak.json`);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(
    file,
    `${JSON.stringify({ date: started.toISOString(), mode: 'soak', options: { ...opts, only: [...opts.only] }, machine: { ...machine, load_average_at_end: os.loadavg().map((n) => Math.round(n * 100) / 100) }, soak: result ?? null, problems }, null, 2)}\n`,
  );
  log('');
  if (result) log(renderSoak(result));
  log('');
  if (problems.length > 0) {
    log('problems:');
    for (const p of problems) log(`  - ${p}`);
  }
  log(`${problems.length === 0 ? 'every count and sum exact' : 'RUN INCOMPLETE: counts or sums not exact (exit 1)'}; figures written to ${path.relative(process.cwd(), file)}`);
  if (result) log(soakLine(result));
  return problems.length === 0 ? 0 : 1;
}

/** Runs one scenario; a failure is recorded and the run goes on to the next. */
async function scenario<T>(name: string, fn: () => Promise<T>): Promise<Outcome<T>> {
  if (isCleaningUp()) return { ok: false, error: 'interrupted' };
  log(`\n-- ${name}`);
  const t = performance.now();
  try {
    const result = await fn();
    log(`  ${name} done in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    return { ok: true, result };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    log(`  ${name} FAILED: ${message}`);
    return { ok: false, error: message };
  }
}

/** npm run build, so the processes run what the source says. Type errors alone do not stop tsc emitting. */
function runBuild(): { ran: true; ok: boolean; seconds: number; output: string } {
  log('building (npm run build)…');
  const t = performance.now();
  const res = spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, encoding: 'utf8' });
  const seconds = (performance.now() - t) / 1000;
  const output = `${res.stdout ?? ''}${res.stderr ?? ''}`.trim().split('\n').slice(0, 20).join('\n');
  const ok = res.status === 0;
  if (!ok) {
    const emitted = existsSync(path.join(ROOT, 'dist/src/server.js')) && existsSync(path.join(ROOT, 'dist/workers/all.js'));
    if (!emitted) throw new Error(`npm run build failed and dist/ has no server:\n${output}`);
    log(`WARNING: npm run build failed; measuring the JavaScript tsc emitted anyway:\n${output}`);
  } else log(`built in ${seconds.toFixed(1)} s`);
  return { ran: true, ok, seconds: Math.round(seconds * 10) / 10, output };
}

async function machineInfo(env: BenchEnv): Promise<Machine> {
  const client = pgClient({ connectionString: env.databaseUrl });
  await client.connect();
  const settings: Record<string, string> = {};
  let version = 'unknown';
  try {
    version = (await client.query<{ server_version: string }>('SHOW server_version')).rows[0]!.server_version;
    for (const name of ['shared_buffers', 'fsync', 'synchronous_commit', 'max_connections']) {
      settings[name] = (await client.query<Record<string, string>>(`SHOW ${name}`)).rows[0]![name]!;
    }
  } finally {
    await client.end();
  }
  const info = await env.redis.info('server');
  const cpus = os.cpus();
  return {
    cpu: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    memory_gib: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    os: `${os.type()} ${os.release()}`,
    node: process.version,
    postgres: version,
    postgres_settings: settings,
    redis: /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown',
    load_average_at_start: os.loadavg().map((n) => Math.round(n * 100) / 100),
  };
}

main().then(
  (code) => {
    process.exitCode = code;
    // Keep-alive sockets and pools are closed by the cleanup; exit even if a library left a timer.
    setTimeout(() => process.exit(code), 1000).unref();
  },
  async (err: unknown) => {
    console.error(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    await cleanup();
    process.exit(1);
  },
);
