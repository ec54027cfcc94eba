#!/usr/bin/env node
/**
 * `npm run demo`: the product's main job, end to end, on a fresh clone with PostgreSQL and Redis.
 * Migrates the database, creates a demo supplier, team and API key, starts the service (API and
 * workers) in-process unless one already answers on PORT, generates a cohort with every kind of
 * extra (documents written to the document store, payment instructions against a sandbox vendor
 * it starts on 127.0.0.1), uploads it with `importctl cohort upload` (progress bars per stage),
 * prints the summary, and exits 0 when every account migrated, stopping whatever it started.
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { finished } from 'node:stream/promises';
import { createApiKey, revokeApiKey } from '../auth/api-keys.js';
import { utcDate } from '../clock.js';
import { generateCohort } from '../cohort/generate.js';
import { loadConfig } from '../config.js';
import { ensureDatabase, migrate } from '../db/migrator.js';
import { createDeps, type Deps } from '../deps.js';
import { resolveDocumentKey } from '../documents/document-store.js';
import { buildApp } from '../http/app.js';
import { findSupplierByCode } from '../imports/suppliers/supplier.repository.js';
import { createSupplier } from '../imports/suppliers/supplier.service.js';
import { findTeamByName } from '../imports/teams/team.repository.js';
import { createTeam } from '../imports/teams/team.service.js';
import { createLogger } from '../log.js';
import { QUEUE_NAMES } from '../queue/contract.js';
import { startWorkers } from '../queue/workers.js';
import { checkPostgres, checkRedis, StartupError } from '../startup-checks.js';
import { startSandboxVendor } from '../vendors/sandbox-vendor.js';
import { startSandboxGateway } from '../registration/sandbox-gateway.js';
import { registrationFunnel } from '../console/queries.js';
import { LocalServiceError, startEmbeddedPostgres, startLocalRedis, type LocalServer } from '../dev/local-services.js';
import { main as importctl } from './importctl.js';

const SUPPLIER = 'DEMO';
const TEAM = 'Demo Migrations';
const DOCUMENTS_ROOT = 'demo';
const ACCOUNTS = Number(process.env.DEMO_ACCOUNTS ?? 1000);
/** A fixed port, so a service you started yourself can be pointed at the same sandbox vendor. */
const VENDOR_PORT = Number(process.env.DEMO_VENDOR_PORT ?? 4010);

/** How to get PostgreSQL and Redis on this machine, for the demo's one-line error. */
const START_SERVICES_HINT =
  'Start PostgreSQL and Redis first: `docker compose up -d` where Docker runs; otherwise your system\'s packages (`apt-get install postgresql redis-server`, `brew install postgresql redis`), or set DATABASE_URL and REDIS_URL to servers you have.';

async function answers(url: string): Promise<boolean> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(1_000) })).ok;
  } catch {
    return false;
  }
}

/** The demo's own PostgreSQL cluster when DATABASE_URL is unset: kept (git-ignored) so a second run starts in a second. */
const DEMO_POSTGRES_DIR = path.resolve(process.env.DEMO_POSTGRES_DIR || path.join(import.meta.dirname, '..', '..', 'var', 'demo', 'postgres'));

/** What main() has started, stopped in order at the end, on Ctrl-C or on SIGTERM: whichever comes first. */
const stops: Array<() => Promise<unknown>> = [];
const local: LocalServer[] = [];
let stopping: Promise<void> | undefined;
const stopAll = (): Promise<void> =>
  (stopping ??= (async () => {
    for (const stop of stops) await stop().catch(() => undefined);
    // The servers the demo started come last: everything above may still be using them.
    await Promise.all(local.map((s) => s.stop().catch(() => undefined)));
  })());

function onSignal(signal: NodeJS.Signals): void {
  const code = signal === 'SIGINT' ? 130 : 143;
  if (stopping) {
    // A second signal: do not wait any longer, but leave no server behind.
    for (const s of local) s.kill();
    process.exit(code);
  }
  // While the upload waits on the batch, importctl answers Ctrl-C itself (names the batch, returns
  // 130) and main's own clean-up then stops the rest.
  if (signal === 'SIGINT' && process.listenerCount('SIGINT') > 1) return;
  void stopAll().finally(() => process.exit(code));
}

/** A folder under the working directory as a relative path, any other as it is. */
const shortPath = (p: string): string => (path.relative(process.cwd(), p).startsWith('..') ? p : path.relative(process.cwd(), p) || '.');

/** PostgreSQL and Redis from the environment; each one not configured is started here (docs/local-services.md). */
async function services(env: NodeJS.ProcessEnv): Promise<NodeJS.ProcessEnv> {
  const out = { ...env };
  if (!out.DATABASE_URL) {
    const started = Date.now();
    const pg = await startEmbeddedPostgres({ dir: DEMO_POSTGRES_DIR, keep: true, database: 'data_import', settings: ['synchronous_commit=off'] });
    local.push(pg);
    out.DATABASE_URL = pg.url;
    console.log(`DATABASE_URL is unset: embedded PostgreSQL started in ${shortPath(DEMO_POSTGRES_DIR)} (${String(Date.now() - started)} ms)`);
  }
  if (!out.REDIS_URL) {
    const redis = await startLocalRedis();
    local.push(redis);
    out.REDIS_URL = redis.url;
    console.log('REDIS_URL is unset: redis-server started on a free 127.0.0.1 port (no persistence)');
  }
  return out;
}

async function main(): Promise<number> {
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  let env: NodeJS.ProcessEnv;
  try {
    env = await services(process.env);
  } catch (err) {
    if (!(err instanceof LocalServiceError)) throw err;
    console.error(err.message);
    return 1;
  }
  const vendor = await startSandboxVendor({ port: VENDOR_PORT }).catch(() => startSandboxVendor());
  const vendorsJson = JSON.stringify({ sandbox: { base_url: vendor.baseUrl, api_key: vendor.apiKey } });
  // The sandbox registration gateway (decisions.md §8): accepts every request, reports the supply start.
  const gateway = process.env.REGISTRATION_GATEWAY_URL ? undefined : await startSandboxGateway({ key: randomBytes(24).toString('base64url') });
  if (gateway) stops.push(() => gateway.close());
  const config = loadConfig({
    ...env,
    // Tokens of this run are signed with a secret of its own, never the published development one,
    // so the demo needs no setup whatever NODE_ENV says (unset means production).
    TOKEN_SECRET: process.env.TOKEN_SECRET || randomBytes(32).toString('base64url'),
    PAYMENT_VENDORS: process.env.PAYMENT_VENDORS ?? vendorsJson,
    ...(gateway
      ? {
          REGISTRATION_GATEWAY_URL: gateway.url,
          REGISTRATION_GATEWAY_KEY: gateway.key,
          // A sandbox answers at once: no industry throttle to respect, and its events are read every second.
          REGISTRATION_RATE_PER_SECOND: process.env.REGISTRATION_RATE_PER_SECOND ?? '1000',
          REGISTRATION_POLL_MS: process.env.REGISTRATION_POLL_MS ?? '1000',
        }
      : {}),
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
  });
  stops.push(() => vendor.close());
  const work = await mkdtemp(path.join(tmpdir(), 'di-demo-'));
  stops.push(() => rm(work, { recursive: true, force: true }));
  try {
    // Which service is missing, and how to start it, before anything else: not the service's fault.
    try {
      await checkPostgres(config.databaseUrl, { allowMissingDatabase: true });
      await checkRedis(config.redisUrl);
    } catch (err) {
      if (!(err instanceof StartupError)) throw err;
      console.error(err.message);
      console.error(START_SERVICES_HINT);
      return 1;
    }
    await ensureDatabase(config.databaseUrl);
    const { applied } = await migrate(config.databaseUrl);
    console.log(`database ready (${applied.length} migration(s) applied)`);

    const deps = createDeps(config, { log: createLogger(config.logLevel) });
    stops.unshift(() => deps.close());
    if (!(await findSupplierByCode(deps.db, SUPPLIER))) await createSupplier(deps.db, { code: SUPPLIER, name: 'Demo Energy', documentsRoot: DOCUMENTS_ROOT });
    if (!(await findTeamByName(deps.db, TEAM))) await createTeam(deps.db, TEAM);
    await revokeApiKey(deps.db, 'demo', new Date());
    const key = await createApiKey(deps.db, 'demo');

    let base = `http://127.0.0.1:${config.port}`;
    let inProcess = false;
    if (await answers(`${base}/healthz`)) {
      console.log(`using the service already running on ${base} (its workers do the work)`);
      console.log(`  its payment instructions need PAYMENT_VENDORS='${vendorsJson}'`);
    } else {
      const { app, services, metrics } = await buildApp(deps);
      base = await app.listen({ host: '127.0.0.1', port: config.port });
      const workers = startWorkers(deps, services, { queues: QUEUE_NAMES, observe: (q, o, s) => metrics.observeJob(q, o, s), observer: metrics.pipelineObserver, observeAcceptance: (s) => metrics.observeAcceptance(s) });
      stops.unshift(() => app.close(), () => workers.close(5_000));
      inProcess = true;
      console.log(`service (API and workers) started in-process on ${base}; sandbox payment vendor on ${vendor.baseUrl}`);
    }

    // The cohort file, with its statements' PDFs written where the service looks for them.
    const file = path.join(work, 'cohort.ndjson');
    const out = createWriteStream(file);
    const prefix = `DEMO-${new Date().toISOString().replace(/\D/g, '').slice(0, 14)}`;
    for (const { bundle, documents } of generateCohort({ count: ACCOUNTS, supplier: SUPPLIER, prefix, seed: Date.now() % 1_000_000, vendor: 'sandbox', today: utcDate(new Date()) })) {
      for (const d of documents) {
        const resolved = resolveDocumentKey(DOCUMENTS_ROOT, d.path);
        if (resolved.ok) await deps.documents.put(resolved.key, d.body);
      }
      if (!out.write(`${JSON.stringify(bundle)}\n`)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
    }
    out.end();
    await finished(out);
    console.log(`generated ${ACCOUNTS} accounts (3 notes, 10 transactions, 2 PDF statements and a payment instruction each)`);

    const code = await importctl(['cohort', 'upload', file, '--supplier', SUPPLIER, '--team', TEAM, '--register', '--url', base, '--api-key', key.key], {
      out: (s) => process.stdout.write(s),
      err: (s) => process.stderr.write(s),
      env,
      streams: { stdout: process.stdout, stderr: process.stderr },
    });
    if (inProcess && code !== 130) await showRegistration(deps);
    console.log('');
    console.log('Watch migrations in the console: npm run dev, then npm run importctl -- operator create me --role operator,');
    console.log(`and open ${base}/admin/ (the queues at ${base}/admin/queues).`);
    console.log(`This run's API key for ${SUPPLIER} (importctl batch … --api-key): ${key.key}`);
    return code;
  } finally {
    await stopAll();
  }
}

/**
 * The cohort was uploaded with --register: its accounts' meter points are registered with the sandbox
 * gateway. Waits (at most two minutes) until the gateway has answered every one, then prints where
 * they stand: the funnel an operator sees in the console.
 */
async function showRegistration(deps: Deps): Promise<void> {
  const batch = await deps.db.selectFrom('batches as b').innerJoin('import_suppliers as s', 's.id', 'b.import_supplier_id').select('b.id').where('s.code', '=', SUPPLIER).orderBy('b.created_at', 'desc').executeTakeFirst();
  if (!batch) return;
  const waiting = new Set(['PRE_REGISTRATION', 'UNDERGOING_REGISTRATION', 'REGISTRATION_REQUESTED']);
  const deadline = Date.now() + 120_000;
  let funnel = await registrationFunnel(deps.db, { batchId: batch.id });
  console.log('');
  console.log(`registering ${funnel.total} meter point(s) with the sandbox registration gateway…`);
  while (funnel.statuses.some((s) => waiting.has(s.status)) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    funnel = await registrationFunnel(deps.db, { batchId: batch.id });
  }
  console.log('registration, meter points by status:');
  for (const s of funnel.statuses) console.log(`  ${s.status.padEnd(26)} ${String(s.count).padStart(7)}`);
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(`demo failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
  },
).finally(() => stopAll());
