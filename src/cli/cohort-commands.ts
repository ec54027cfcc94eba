import { createWriteStream } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import cliProgress from 'cli-progress';
import { InvalidArgumentError, type Command } from 'commander';
import { utcDate } from '../clock.js';
import type { Config } from '../config.js';
import { createDb } from '../db/create-db.js';
import type { DocumentStore } from '../documents/document-store.js';
import { findSupplierByCode } from '../imports/suppliers/supplier.repository.js';
import {
  ApiClient,
  ApiError,
  ApiUsageError,
  resolveApiSettings,
  STAGE_NAMES,
  type BatchItem,
  type BatchStatus,
  type ReconciliationReport,
  type StageCounts,
} from './api-client.js';

/** The part of importctl's CliIo these commands use (not imported: importctl imports this module). */
export interface CohortCliIo {
  out(text: string): void;
  err(text: string): void;
  env: NodeJS.ProcessEnv;
  /** The process's own streams when running as the program: for backpressure and terminal progress bars. */
  streams?: { stdout: NodeJS.WriteStream; stderr: NodeJS.WriteStream } | undefined;
}

/** A command's work once parsing succeeded; resolves to the exit status. */
export type CohortJob = (config: Config) => Promise<number>;

const EXIT_OK = 0;
const EXIT_FAILED = 1;
const EXIT_USAGE = 2;
/** Upload only: the batch ran to the end but some items failed (the issue asks for 2, sharing usage's status). */
const EXIT_SOME_FAILED = 2;
/** 128 + SIGINT, what a shell reports for a command stopped with Ctrl-C. */
const EXIT_INTERRUPTED = 130;

const POLL_MS = 500;
/** Consecutive failed polls (about 15 s) tolerated before giving up: a service restart should not end the wait. */
const MAX_TRANSIENT_POLL_FAILURES = 30;
const ENDED: ReadonlySet<string> = new Set(['COMPLETED', 'COMPLETED_WITH_ERRORS', 'CANCELLED']);

class CommandUsageError extends Error {
  override readonly name = 'CommandUsageError';
}
class CommandFailure extends Error {
  override readonly name = 'CommandFailure';
}

const API_HELP = `
The service: --url, else IMPORT_API_URL, else http://HOST:PORT from the environment.
The API key: --api-key, else IMPORT_API_KEY (prefer the variable: arguments show up in ps and shell history).
A token is obtained from the key with ObtainToken, and obtained again if it expires while waiting.`;

/** Adds `cohort generate|upload` and `batch status|failures|retry|cancel` to importctl. */
export function registerCohortCommands(program: Command, io: CohortCliIo, setJob: (job: CohortJob) => void): void {
  const out = (line = '') => io.out(`${line}\n`);
  const fail = (message: string) => io.err(`importctl: ${oneLine(message)}\n`);

  /** Maps this module's refusals to exit statuses; anything else goes to importctl's own handler. */
  const run = (work: CohortJob) =>
    setJob(async (config) => {
      try {
        return await work(config);
      } catch (err) {
        if (err instanceof ApiUsageError || err instanceof CommandUsageError) {
          fail(err.message);
          return EXIT_USAGE;
        }
        if (err instanceof ApiError || err instanceof CommandFailure) {
          fail(err.message);
          return EXIT_FAILED;
        }
        throw err;
      }
    });
  const clientFor = (opts: ApiOpts, config: Config) => new ApiClient(resolveApiSettings(opts, io.env, config));

  const cohort = program.command('cohort').description('Generate cohort files and upload them as batches.');
  cohort
    .command('generate')
    .description('Write a realistic UK cohort as NDJSON to stdout: one account bundle per line, valid except for --invalid-rate.')
    .requiredOption('--count <n>', 'number of accounts', positiveInt)
    .requiredOption('--supplier <code>', 'import supplier code written into every account')
    .option('--invalid-rate <r>', 'share of accounts, 0 to 1, carrying one realistic mistake (default 0)', rate)
    .option('--seed <s>', 'whole number; the same seed and --today give the same cohort (default 1)', wholeNumber)
    .option('--prefix <p>', 'prefix of external account numbers (default: the supplier code)')
    .option('--vendor <code>', 'give each account a payment instruction with this payment vendor (default: none)')
    .option('--today <date>', 'history ends before this UTC date, YYYY-MM-DD (default: today)', isoDate)
    .option('--write-documents', "also store each statement's PDF where the service reads it (see below)")
    .addHelpText(
      'after',
      `
Statements refer to PDF documents by statement_path, relative to the supplier's documents_root. The
service fails a statement whose document is missing (document_not_found), so when the cohort will be
uploaded, pass --write-documents: every document is written, before its line, to the document store
configured in this environment exactly as the service's (DOCUMENTS_DIR, or S3_BUCKET and S3_*),
under the documents_root of --supplier read from DATABASE_URL. Run it with the service's environment.

Example:
  importctl cohort generate --count 1000 --supplier ACME --vendor sandbox --invalid-rate 0.05 --write-documents > cohort.ndjson`,
    )
    .action((opts: GenerateOpts) => run((config) => generate(opts, config, io)));

  cohort
    .command('upload')
    .description('Upload an NDJSON cohort as a batch, show its progress per stage until it ends, then a summary.')
    .argument('<file>', 'NDJSON file, one account bundle per line')
    .requiredOption('--supplier <code>', 'import supplier code')
    .requiredOption('--team <name>', 'operations team the accounts are assigned to')
    .option('--dry-run', 'run every check and step, then roll each account back: nothing is imported')
    .option('--register', 'register the meter points of every account the batch creates (docs/registration.md)')
    .option('--no-wait', 'print the batch id once the service has accepted the file, and exit 0')
    .option('--idempotency-key <key>', "send again with the same key: the service returns the first upload's batch")
    .option('--url <url>', 'the service (default: IMPORT_API_URL, else http://HOST:PORT)')
    .option('--api-key <key>', 'API key (default: IMPORT_API_KEY)')
    .addHelpText(
      'after',
      `${API_HELP}

Progress goes to stderr: bars on a terminal, otherwise a plain line at most once a second.
The summary goes to stdout. Ctrl-C stops waiting, not the batch: it keeps running on the service.

Exit status:
  0    every item succeeded (or --no-wait, once accepted)
  1    the batch was cancelled, or the service refused or could not be reached
  2    some items failed (see 'importctl batch failures ID'), or a usage error
  130  interrupted with Ctrl-C while waiting`,
    )
    .action((file: string, opts: UploadOpts) => run((config) => upload(file, opts, clientFor(opts, config), io)));

  const batch = program.command('batch').description('Watch and fix uploaded batches.');
  withApiOptions(
    batch
      .command('list')
      .description("A supplier's batches, newest first.")
      .requiredOption('--supplier <code>', 'import supplier code')
      .option('--json', 'the batches as the service answers them'),
  ).action((opts: ApiOpts & { supplier: string; json?: boolean }) =>
    run(async (config) => {
      const batches = await clientFor(opts, config).list(opts.supplier);
      if (opts.json) out(JSON.stringify(batches, null, 2));
      else {
        table(
          out,
          ['BATCH', 'STATE', 'DRY_RUN', 'TOTAL', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'CREATED_AT', 'FINISHED_AT'],
          batches.map((b) => [b.batch_id, b.state, b.dry_run ? 'yes' : 'no', String(b.total_items), String(b.succeeded), String(b.failed), String(b.cancelled), b.created_at, b.finished_at ?? '-']),
        );
      }
      return EXIT_OK;
    }),
  );
  withApiOptions(
    batch.command('status').description("A batch's state and counts, per stage.").argument('<batch_id>', 'the id upload printed', batchId).option('--json', 'the status as the service answers it'),
  ).action((id: string, opts: ApiOpts & { json?: boolean }) =>
    run(async (config) => {
      const status = await clientFor(opts, config).status(id);
      if (opts.json) out(JSON.stringify(status, null, 2));
      else printStatus(out, status);
      return EXIT_OK;
    }),
  );
  withApiOptions(
    batch
      .command('failures')
      .description("A batch's failed items: one row per error (line, account, stage, code, attr, detail).")
      .argument('<batch_id>', 'the id upload printed', batchId)
      .option('--csv [file]', "the service's CSV instead (one row per item, errors joined with '; '), to the file or to stdout")
      .option('--json', 'the failed items as the service answers them'),
  ).action((id: string, opts: ApiOpts & { csv?: boolean | string; json?: boolean }) =>
    run(async (config) => {
      const client = clientFor(opts, config);
      if (typeof opts.csv === 'string') {
        // Written beside, then renamed: a file that exists is a whole CSV, never half of one.
        const partial = `${opts.csv}.partial`;
        const file = createWriteStream(partial, { flags: 'w' });
        try {
          await pipeline(Readable.from(await client.failuresCsv(id)), file);
          await rename(partial, opts.csv);
        } catch (err) {
          await rm(partial, { force: true });
          throw err;
        }
        out(`wrote the failed items of batch ${id} to ${opts.csv}`);
        return EXIT_OK;
      }
      if (opts.csv) {
        await copyToStdout(io, await client.failuresCsv(id));
        return EXIT_OK;
      }
      const items = await client.failures(id);
      if (opts.json) out(JSON.stringify(items, null, 2));
      else printFailures(out, items);
      return EXIT_OK;
    }),
  );
  withApiOptions(
    batch
      .command('reconcile-report')
      .description('What the file carried for the succeeded items against what the database holds: counts and exact sums, then every difference by account.')
      .argument('<batch_id>', 'the id upload printed', batchId)
      .option('--csv', "every difference as the service's CSV instead")
      .option('--json', 'the report as the service answers it')
      .addHelpText(
        'after',
        `
Exit status:
  0    balanced: everything the file carried for its succeeded items is held as it was sent
       (with --csv: the differences were written, however many)
  1    differences were found, or the service refused or could not be reached`,
      ),
  ).action((id: string, opts: ApiOpts & { csv?: boolean; json?: boolean }) =>
    run(async (config) => {
      const client = clientFor(opts, config);
      if (opts.csv) {
        await copyToStdout(io, await client.reconciliationCsv(id));
        return EXIT_OK;
      }
      const report = await client.reconciliation(id);
      if (opts.json) out(JSON.stringify(report, null, 2));
      else printReconciliation(out, report);
      return report.balanced ? EXIT_OK : EXIT_FAILED;
    }),
  );
  withApiOptions(
    batch
      .command('retry')
      .description('Re-run failed items from the stage where they failed (lines that were not bundles cannot be retried).')
      .argument('<batch_id>', 'the id upload printed', batchId)
      .option('--account <ext>', 'only this external account number (repeat for several)', (v: string, prev: string[] = []) => [...prev, v])
      .option('--code <code>', "only the items that failed with this error code (as 'batch failures' shows it)"),
  ).action((id: string, opts: ApiOpts & { account?: string[]; code?: string }) =>
    run(async (config) => {
      const { requeued } = await clientFor(opts, config).retry(id, opts.account, opts.code);
      out(`requeued ${requeued} item(s) of batch ${id}`);
      return EXIT_OK;
    }),
  );
  withApiOptions(
    batch
      .command('cancel')
      .description('Stop a batch: items not yet started are cancelled; those already done stay done.')
      .argument('<batch_id>', 'the id upload printed', batchId),
  ).action((id: string, opts: ApiOpts) =>
    run(async (config) => {
      const s = await clientFor(opts, config).cancel(id);
      out(`batch ${s.batch_id} ${s.state}: succeeded ${s.succeeded}, failed ${s.failed}, cancelled ${s.cancelled} of ${s.total_items}`);
      return EXIT_OK;
    }),
  );
  withApiOptions(
    batch
      .command('register')
      .description("Register the meter points of every account the batch created (docs/registration.md); those with an attempt under way or on supply are left as they are.")
      .argument('<batch_id>', 'the id upload printed', batchId),
  ).action((id: string, opts: ApiOpts) =>
    run(async (config) => {
      const r = await clientFor(opts, config).registerBatch(id);
      out(`batch ${r.batch_id}: ${r.meter_points_marked} meter point(s) of ${r.accounts} account(s) marked for registration, ${r.meter_points_not_marked} left as they were`);
      return EXIT_OK;
    }),
  );
  const registration = program.command('registration').description('Meter-point registration with the industry (docs/registration.md).');
  withApiOptions(
    registration
      .command('withdraw')
      .description("Withdraw the current registration of an account's meter points, or of one: where it is REGISTRATION_REQUESTED, REGISTRATION_ACCEPTED or OBJECTION_RECEIVED.")
      .argument('<supplier>', 'import supplier code')
      .argument('<external_account_number>', "the account's number at the supplier")
      .argument('[mpxn]', 'only this meter point (MPAN or MPRN)'),
  ).action((supplier: string, ext: string, mpxn: string | undefined, opts: ApiOpts) =>
    run(async (config) => {
      const r = await clientFor(opts, config).withdrawRegistration(supplier, ext, mpxn);
      for (const p of r.meter_points) out(`${p.mpxn}  ${p.status}${p.error_detail ? `  ${p.error_detail}` : ''}`);
      return r.meter_points.some((p) => p.status === 'WITHDRAWAL_FLOW_SUCCESS') ? EXIT_OK : EXIT_FAILED;
    }),
  );
  batch
    .command('reconcile')
    .description(
      'Re-enqueue every open item of a running batch (or of every running batch) that lost its job, e.g. after Redis lost its data. Talks to PostgreSQL and Redis directly; safe to repeat.',
    )
    .argument('[batch_id]', 'one batch; all running batches when omitted', batchId)
    .action((id: string | undefined) =>
      run(async (config) => {
        // Loaded here so other commands never open a Redis connection.
        const [{ createDeps }, { createBatchService }, { createLogger }] = await Promise.all([
          import('../deps.js'),
          import('../imports/batches/batch.service.js'),
          import('../log.js'),
        ]);
        const deps = createDeps(config, { log: createLogger('warn') });
        try {
          const result = await createBatchService({ ...deps, stageQueue: deps.ports.stageQueue }).reconcile(id);
          out(`reconciled ${result.batches} running batch(es): ${result.jobsRecreated} job(s) re-created for ${result.openItems} open item(s); the others still had theirs`);
          return EXIT_OK;
        } finally {
          await deps.close();
        }
      }),
    );
}

interface ApiOpts {
  url?: string;
  apiKey?: string;
}
interface GenerateOpts {
  count: number;
  supplier: string;
  invalidRate?: number;
  seed?: number;
  prefix?: string;
  vendor?: string;
  today?: string;
  writeDocuments?: boolean;
}
interface UploadOpts extends ApiOpts {
  supplier: string;
  team: string;
  dryRun?: boolean;
  register?: boolean;
  wait: boolean;
  idempotencyKey?: string;
}

function withApiOptions(cmd: Command): Command {
  return cmd
    .option('--url <url>', 'the service (default: IMPORT_API_URL, else http://HOST:PORT)')
    .option('--api-key <key>', 'API key (default: IMPORT_API_KEY)')
    .addHelpText('after', API_HELP);
}

async function generate(opts: GenerateOpts, config: Config, io: CohortCliIo): Promise<number> {
  // Loaded here, not at the top: faker and the S3 SDK would add most of a second to every importctl command.
  const [{ generateCohort }, { createDocumentStore, resolveDocumentKey }] = await Promise.all([
    import('../cohort/generate.js'),
    import('../documents/document-store.js'),
  ]);
  let documents: { store: DocumentStore; root: string } | null = null;
  if (opts.writeDocuments) {
    const { db } = createDb(config.databaseUrl, { max: 1 });
    try {
      const supplier = await findSupplierByCode(db, opts.supplier);
      if (!supplier) throw new CommandFailure(`Import supplier '${opts.supplier}' does not exist; --write-documents needs its documents_root.`);
      documents = { store: createDocumentStore(config.documents), root: supplier.documents_root };
    } finally {
      await db.destroy();
    }
  }
  const writer = stdoutWriter(io);
  try {
    const cohort = generateCohort({
      count: opts.count,
      supplier: opts.supplier,
      today: opts.today ?? utcDate(new Date()),
      ...(opts.invalidRate !== undefined ? { invalidRate: opts.invalidRate } : {}),
      ...(opts.seed !== undefined ? { seed: opts.seed } : {}),
      ...(opts.prefix !== undefined ? { prefix: opts.prefix } : {}),
      ...(opts.vendor !== undefined ? { vendor: opts.vendor } : {}),
    });
    for (const { bundle, documents: docs } of cohort) {
      if (documents) {
        for (const d of docs) {
          const key = resolveDocumentKey(documents.root, d.path);
          if (!key.ok) throw new CommandFailure(`cannot store document '${d.path}': ${key.reason}`);
          await documents.store.put(key.key, d.body);
        }
      }
      // The reader went away (`| head`): stop quietly, as other generators do.
      if (!(await writer.write(`${JSON.stringify(bundle)}\n`))) break;
    }
  } finally {
    documents?.store.close();
  }
  return EXIT_OK;
}

async function upload(file: string, opts: UploadOpts, client: ApiClient, io: CohortCliIo): Promise<number> {
  const out = (line = '') => io.out(`${line}\n`);
  const fail = (message: string) => io.err(`importctl: ${oneLine(message)}\n`);
  try {
    const info = await stat(file);
    if (!info.isFile()) throw new CommandUsageError(`'${file}' is not a file`);
  } catch (err) {
    if (err instanceof CommandUsageError) throw err;
    throw new CommandUsageError(`cannot read '${file}': ${(err as { code?: string }).code ?? String(err)}`);
  }

  const progress = createProgress(io);
  let accepted: { batch_id: string; total_items: number };
  try {
    accepted = await client.uploadFile(file, {
      supplier: opts.supplier,
      team: opts.team,
      dryRun: opts.dryRun === true,
      register: opts.register === true,
      idempotencyKey: opts.idempotencyKey,
      onProgress: (sent, size) => progress.upload(sent, size),
    });
  } finally {
    progress.stop();
  }
  const id = accepted.batch_id;
  if (!opts.wait) {
    // Alone on its line so a script can capture it: ID=$(importctl cohort upload … --no-wait).
    out(id);
    return EXIT_OK;
  }
  const interrupt = new AbortController();
  const onSigint = () => interrupt.abort();
  const view = createProgress(io);
  let last: BatchStatus | null = null;
  let transientFailures = 0;
  // Before the line that tells the operator (or a script) we are waiting: a Ctrl-C right after it must
  // find the handler, not Node's default of dying without a word.
  process.once('SIGINT', onSigint);
  out(`batch ${id} accepted: ${accepted.total_items} item(s)${opts.dryRun ? ', dry run' : ''}`);
  try {
    while (!interrupt.signal.aborted) {
      try {
        last = await client.status(id, interrupt.signal);
        transientFailures = 0;
        view.stages(last);
        if (ENDED.has(last.state)) break;
      } catch (err) {
        if (interrupt.signal.aborted) break;
        if (!(err instanceof ApiError && err.transient && ++transientFailures < MAX_TRANSIENT_POLL_FAILURES)) throw err;
      }
      await sleep(POLL_MS, undefined, { signal: interrupt.signal }).catch(() => undefined);
    }
  } finally {
    process.off('SIGINT', onSigint);
    view.stop();
  }
  if (interrupt.signal.aborted || last === null) {
    fail(`interrupted: batch ${id} keeps running on the service; check it later with 'importctl batch status ${id}'`);
    return EXIT_INTERRUPTED;
  }

  const failures = last.failed > 0 ? await client.failures(id) : [];
  printSummary(out, last, failures);
  if (last.state === 'CANCELLED') {
    fail(`batch ${id} was cancelled`);
    return EXIT_FAILED;
  }
  if (last.failed > 0) {
    fail(`${last.failed} of ${last.total_items} item(s) failed; list them with 'importctl batch failures ${id}'`);
    return EXIT_SOME_FAILED;
  }
  if (last.state !== 'COMPLETED') {
    fail(`batch ${id} ended ${last.state}`);
    return EXIT_FAILED;
  }
  return EXIT_OK;
}

/** Why an item failed, in one word: the first problem's code, else the envelope's (invalid_json has no items). */
function failureCode(item: BatchItem): string {
  return item.error?.errors?.[0]?.code ?? item.error?.code ?? 'unknown';
}

function printSummary(out: (line?: string) => void, s: BatchStatus, failures: BatchItem[]): void {
  out(`batch ${s.batch_id} ${s.state}${s.dry_run ? ' (dry run)' : ''}`);
  out(`total ${s.total_items}, succeeded ${s.succeeded}, failed ${s.failed}, cancelled ${s.cancelled}`);
  if (failures.length === 0) return;
  const byCode = new Map<string, number>();
  for (const f of failures) byCode.set(failureCode(f), (byCode.get(failureCode(f)) ?? 0) + 1);
  const sorted = [...byCode].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  out(`failed by code: ${sorted.map(([code, n]) => `${code} ${n}`).join(', ')}`);
}

function printStatus(out: (line?: string) => void, s: BatchStatus): void {
  const fields: Array<[string, string]> = [
    ['batch', s.batch_id],
    ['supplier', s.import_supplier],
    ['team', s.operations_team_name],
    ['dry run', s.dry_run ? 'yes' : 'no'],
    ['state', s.state],
    ['total', String(s.total_items)],
    ['succeeded', String(s.succeeded)],
    ['failed', String(s.failed)],
    ['cancelled', String(s.cancelled)],
    ['created at', s.created_at],
    ['finished at', s.finished_at ?? '-'],
  ];
  const width = Math.max(...fields.map(([k]) => k.length));
  for (const [k, v] of fields) out(`${k.padEnd(width)}  ${v}`);
  out();
  table(
    out,
    ['STAGE', 'WAITING', 'ACTIVE', 'DELAYED', 'COMPLETED', 'FAILED'],
    STAGE_NAMES.map((name) => {
      const c = s.stages[name];
      return [name, c.waiting, c.active, c.delayed, c.completed, c.failed].map(String);
    }),
  );
}

function printFailures(out: (line?: string) => void, items: BatchItem[]): void {
  const rows: string[][] = [];
  for (const it of items) {
    const e = it.error;
    const problems = e?.errors?.length ? e.errors : [{ code: e?.code, attr: e?.attr ?? null, detail: e?.detail ?? e?.error_detail }];
    for (const p of problems) {
      rows.push([String(it.line), it.external_account_number ?? '-', it.stage, p.code ?? '-', p.attr ?? '-', oneLine(p.detail ?? '')]);
    }
  }
  table(out, ['LINE', 'ACCOUNT', 'STAGE', 'CODE', 'ATTR', 'DETAIL'], rows);
}

function printReconciliation(out: (line?: string) => void, r: ReconciliationReport): void {
  const t = r.totals;
  out(`batch ${r.batch_id} (${r.import_supplier}, ${r.state}): ${t.items_succeeded} succeeded item(s), ${r.balanced ? 'balanced' : `${r.differences_total} difference(s)`}`);
  const rows: string[][] = [
    ['accounts', String(t.accounts.file), String(t.accounts.database), '', ''],
    ['notes', String(t.notes.file), String(t.notes.database), '', ''],
    ['statements (gross amount)', String(t.statements.file), String(t.statements.database), t.statements.gross_amount.file, t.statements.gross_amount.database],
    ['payment instructions', String(t.payment_instructions.file), String(t.payment_instructions.database), '', ''],
    ...t.transactions.map((x) => [`transactions ${x.type}`, String(x.file.count), String(x.database.count), x.file.amount, x.database.amount]),
  ];
  table(out, ['', 'FILE', 'DATABASE', 'FILE AMOUNT', 'DATABASE AMOUNT'], rows);
  if (r.differences.length === 0) return;
  out('');
  table(
    out,
    ['LINE', 'ACCOUNT', 'NUMBER', 'KIND', 'IDENTIFIER', 'PROBLEM', 'FILE', 'DATABASE'],
    r.differences.map((d) => [String(d.line), d.external_account_number ?? '-', d.service_account_number ?? '-', d.kind, oneLine(d.identifier), d.problem, oneLine(d.file ?? '-'), oneLine(d.database ?? '-')]),
  );
  if (r.differences_total > r.differences.length) out(`… and ${r.differences_total - r.differences.length} more: importctl batch reconcile-report ${r.batch_id} --csv`);
}

// ---- progress -------------------------------------------------------------------------------

interface Progress {
  upload(sent: number, size: number): void;
  stages(s: BatchStatus): void;
  stop(): void;
}

/** Bars when stderr is a terminal; otherwise plain lines that read well in CI logs and files. */
function createProgress(io: CohortCliIo): Progress {
  const tty = io.streams?.stderr;
  return tty?.isTTY ? new BarProgress(tty) : new LineProgress((line) => io.err(`${line}\n`));
}

/**
 * How far each stage is: items that passed it or failed at it, out of those that got there or may
 * still get there. Items that failed or were cancelled earlier never reach a later stage, so a
 * total of total_items would leave that stage's bar short forever.
 */
function stageView(s: BatchStatus): Array<{ name: string; done: number; of: number; counts: StageCounts }> {
  let pendingEarlier = 0;
  return STAGE_NAMES.map((name) => {
    const c = s.stages[name];
    const done = c.completed + c.failed;
    const here = c.waiting + c.active + c.delayed;
    const view = { name, done, of: done + here + pendingEarlier, counts: c };
    pendingEarlier += here;
    return view;
  });
}

const stageNote = (c: StageCounts): string => {
  const parts = [c.active ? `active ${c.active}` : '', c.delayed ? `retrying ${c.delayed}` : '', c.failed ? `failed ${c.failed}` : ''].filter(Boolean);
  return parts.length ? ` (${parts.join(', ')})` : '';
};

/**
 * The batch's pace over the last half-minute of polls, and the time left at it: what an operator
 * watching a 50,000-account batch wants to know. Progress counts every stage an account has passed
 * (or failed at), a quarter of an account each, not only finished accounts: a batch spends its first
 * minute filling the pipeline, and finished accounts alone would promise hours left then.
 */
export class Pace {
  readonly #samples: Array<{ at: number; done: number }> = [];
  constructor(private readonly now: () => number = Date.now) {}

  /** Adds a poll's status; answers the pace text (empty until there are two polls apart and some progress). */
  note(s: Pick<BatchStatus, 'state' | 'cancelled' | 'total_items' | 'stages'>): string {
    const at = this.now();
    // In accounts: each stage passed or failed at is a quarter; a cancelled account has nothing left to do.
    const done = STAGE_NAMES.reduce((n, name) => n + s.stages[name].completed + s.stages[name].failed, 0) / STAGE_NAMES.length;
    const finished = Math.min(s.total_items, done + s.cancelled);
    this.#samples.push({ at, done: finished });
    while (this.#samples.length > 2 && at - this.#samples[0]!.at > PACE_WINDOW_MS) this.#samples.shift();
    const first = this.#samples[0]!;
    const seconds = (at - first.at) / 1000;
    if (s.state !== 'RUNNING' || seconds <= 0 || finished <= first.done) return '';
    const rate = (finished - first.done) / seconds;
    return `${rate >= 10 ? rate.toFixed(0) : rate.toFixed(1)} accounts/s, about ${duration((s.total_items - finished) / rate)} left`;
  }
}

const PACE_WINDOW_MS = 30_000;

/** 75 → "1m 15s"; 3,700 → "1h 2m"; under a minute in seconds. */
export function duration(totalSeconds: number): string {
  const t = Math.max(0, Math.ceil(totalSeconds));
  if (t < 60) return `${t}s`;
  if (t < 3600) return `${Math.floor(t / 60)}m ${t % 60}s`;
  return `${Math.floor(t / 3600)}h ${Math.floor((t % 3600) / 60)}m`;
}

class LineProgress implements Progress {
  #last = '';
  #lastAt = 0;
  readonly #startedAt = Date.now();
  constructor(private readonly print: (line: string) => void) {}

  upload(sent: number, size: number): void {
    // A small file is sent before the first second: no line for it.
    if (Date.now() - this.#startedAt >= 1000) this.#emit(`uploading: ${bytes(sent)} of ${bytes(size)}`);
  }

  readonly #pace = new Pace();

  stages(s: BatchStatus): void {
    const stages = stageView(s).map((v) => `${v.name} ${v.done}/${v.of}${stageNote(v.counts)}`);
    const pace = this.#pace.note(s);
    this.#emit(`${s.state}: ${stages.join(' | ')} | succeeded ${s.succeeded}, failed ${s.failed} of ${s.total_items}${pace ? ` | ${pace}` : ''}`);
  }

  stop(): void {}

  /** Only changes, at most once a second: a log gets a heartbeat, not a flood. */
  #emit(line: string): void {
    const now = Date.now();
    if (line === this.#last || (this.#lastAt !== 0 && now - this.#lastAt < 1000)) return;
    this.#last = line;
    this.#lastAt = now;
    this.print(line);
  }
}

class BarProgress implements Progress {
  readonly #multi: cliProgress.MultiBar;
  #upload: cliProgress.SingleBar | null = null;
  #stages: Map<string, cliProgress.SingleBar> | null = null;

  constructor(stream: NodeJS.WriteStream) {
    this.#multi = new cliProgress.MultiBar(
      { stream, format: ' {name} {bar} {shown}{note}', barsize: 30, hideCursor: false, clearOnComplete: false, autopadding: true, fps: 10 },
      cliProgress.Presets.shades_classic,
    );
  }

  upload(sent: number, size: number): void {
    this.#upload ??= this.#multi.create(size, 0, { name: 'upload  ', shown: '', note: '' });
    this.#upload.update(sent, { shown: `${bytes(sent)} / ${bytes(size)}` });
  }

  readonly #pace = new Pace();
  #paceBar: cliProgress.SingleBar | null = null;

  stages(s: BatchStatus): void {
    this.#stages ??= new Map(STAGE_NAMES.map((name) => [name, this.#multi.create(s.total_items, 0, { name: name.padEnd(8), shown: '', note: '' })]));
    for (const v of stageView(s)) {
      const bar = this.#stages.get(v.name)!;
      bar.setTotal(v.of);
      bar.update(v.done, { shown: `${v.done}/${v.of}`, note: stageNote(v.counts) });
    }
    // The whole batch: finished of total, at the pace of the last half-minute, and the time left.
    const done = s.succeeded + s.failed + s.cancelled;
    this.#paceBar ??= this.#multi.create(s.total_items, 0, { name: 'batch   ', shown: '', note: '' });
    const pace = this.#pace.note(s);
    this.#paceBar.update(done, { shown: `${done}/${s.total_items}`, note: pace ? ` (${pace})` : '' });
  }

  stop(): void {
    this.#multi.stop();
  }
}

function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MB`;
  return `${(n / 1024 ** 3).toFixed(2)} GB`;
}

// ---- output ---------------------------------------------------------------------------------

/**
 * Writes to stdout waiting for 'drain' when the reader is slower, so a million-line cohort piped to
 * a slow consumer is never buffered in memory. Resolves to false once the reader has gone (EPIPE).
 */
/** Bytes (the service's CSV) to stdout as they arrive; stops quietly when the reader has gone. */
async function copyToStdout(io: CohortCliIo, bytes: AsyncIterable<Uint8Array>): Promise<void> {
  const writer = stdoutWriter(io);
  const decoder = new TextDecoder();
  for await (const chunk of bytes) {
    if (!(await writer.write(decoder.decode(chunk, { stream: true })))) return;
  }
  await writer.write(decoder.decode());
}

function stdoutWriter(io: CohortCliIo): { write(text: string): Promise<boolean> } {
  const stream = io.streams?.stdout;
  if (!stream) {
    return {
      write: async (text) => {
        io.out(text);
        return true;
      },
    };
  }
  let gone = false;
  // Without a listener an EPIPE would be an uncaught exception with a stack trace.
  stream.on('error', () => {
    gone = true;
  });
  return {
    async write(text) {
      if (gone || stream.destroyed) return false;
      if (stream.write(text)) return true;
      await new Promise<void>((resolve) => {
        const done = () => {
          stream.off('drain', done);
          stream.off('close', done);
          stream.off('error', done);
          resolve();
        };
        stream.on('drain', done);
        stream.on('close', done);
        stream.on('error', done);
      });
      return !gone && !stream.destroyed;
    },
  };
}

function table(out: (line: string) => void, header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ').trimEnd();
  out(line(header));
  for (const r of rows) out(line(r));
}

const oneLine = (s: string): string => s.replace(/\s*\n\s*/g, ' ').trim();

// ---- argument parsers -----------------------------------------------------------------------

function positiveInt(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < 1) throw new InvalidArgumentError('Expected a positive whole number.');
  return n;
}

function wholeNumber(value: string): number {
  const n = Number(value);
  if (!/^-?\d+$/.test(value.trim()) || !Number.isSafeInteger(n)) throw new InvalidArgumentError('Expected a whole number.');
  return n;
}

function rate(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0 || n > 1) throw new InvalidArgumentError('Expected a number from 0 to 1.');
  return n;
}

function isoDate(value: string): string {
  const d = new Date(`${value}T00:00:00Z`);
  if (!/^\d{4}-\d\d-\d\d$/.test(value) || Number.isNaN(d.getTime()) || utcDate(d) !== value) throw new InvalidArgumentError('Expected a date as YYYY-MM-DD.');
  return value;
}

function batchId(value: string): string {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value)) throw new InvalidArgumentError('Expected a batch id (a UUID).');
  return value.toLowerCase();
}
