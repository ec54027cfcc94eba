#!/usr/bin/env node
import { realpathSync } from 'node:fs';
import { userInfo } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { actingAs, listAudit, recordAudit, type AuditEntry } from '../audit/audit-log.js';
import { ApiKeyNameTaken, createApiKey, revokeApiKey, UnknownScopeSupplier } from '../auth/api-keys.js';
import { formatDatetime } from '../clock.js';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { createDb } from '../db/create-db.js';
import type { Db, Executor } from '../db/database.js';
import { ensureDatabase, migrate } from '../db/migrator.js';
import { AppError } from '../errors.js';
import { readAccountTree } from '../imports/accounts/account-tree.repository.js';
import { markToSkip } from '../imports/accounts/account.repository.js';
import { accountView } from '../imports/accounts/account-view.js';
import { addReferenceValue, listReferenceValues, retireReferenceValue } from '../imports/reference/reference.repository.js';
import { isReferenceKind, REFERENCE_KINDS, type ReferenceKind } from '../imports/reference/reference.seed.js';
import { findSupplierByCode } from '../imports/suppliers/supplier.repository.js';
import { createSupplier, listSuppliers, parseSupplierStatus, setSupplierAutoRegister, setSupplierDefaultTeam, setSupplierStatus } from '../imports/suppliers/supplier.service.js';
import { createTeam, listTeams } from '../imports/teams/team.service.js';
import { PACKAGE_VERSION } from '../project-root.js';
import {
  createOperator,
  generatePassword,
  isOperatorRole,
  listOperators,
  MAX_PASSWORD_LENGTH,
  OperatorProblem,
  passwordProblem,
  setOperatorDisabled,
  setOperatorPassword,
  setOperatorRole,
} from '../console/operators.js';
import type { OperatorRole } from '../db/database.js';
import { registerCohortCommands } from './cohort-commands.js';
import { registerWebhookCommands } from './webhook-commands.js';

/** Where the CLI writes; tests pass their own so that main() runs without touching the process. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  env: NodeJS.ProcessEnv;
  /** The process's own streams when running as the program: for backpressure and terminal progress bars. */
  streams?: { stdout: NodeJS.WriteStream; stderr: NodeJS.WriteStream };
  /** What `--password-stdin` reads; the process's stdin when running as the program. */
  stdin?: NodeJS.ReadableStream;
}

export const EXIT_OK = 0;
/** The command was understood but could not be done (unknown supplier, duplicate, database unreachable…). */
export const EXIT_FAILED = 1;
/** The command line or the configuration is wrong. */
export const EXIT_USAGE = 2;

/** A problem with what the operator typed, found after commander accepted the line. */
class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** A refusal worth one line to the operator, never a stack trace. */
class CliFailure extends Error {
  override readonly name = 'CliFailure';
}

const HELP_FOOTER = `
Configuration comes from the environment (DATABASE_URL, …), as for the server; Redis is not used.

Exit status:
  0  success
  1  the command failed (unknown or duplicate name, already imported, database unreachable, …)
  2  usage error (bad command line) or invalid configuration

Errors are one line on stderr, starting with 'importctl: '.`;

/** Runs one command line (without the node and script arguments) and resolves to the exit status. */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  const out = (line = '') => io.out(`${line}\n`);
  const fail = (message: string) => io.err(`importctl: ${oneLine(message)}\n`);
  // Help printed because a subcommand is missing goes to stderr in many lines; we replace it with one.
  let errorHelp = '';

  const program = new Command('importctl')
    .description('Operator commands for the data-import service.')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.out(s),
      writeErr: (s) => {
        errorHelp += s;
      },
      outputError: (s) => fail(s.replace(/^error:\s*/, '')),
    })
    .showSuggestionAfterError(true)
    .version(PACKAGE_VERSION, '-V, --version', 'print the version')
    .addHelpText('after', HELP_FOOTER);

  // Each action only records what to run: configuration and the database are opened after parsing,
  // so `--help` and usage errors work even with a broken environment.
  // A job may resolve to its own exit status (cohort upload's 2 and 130); otherwise success is 0.
  let job: ((config: Config) => Promise<void | number>) | undefined;
  /** Runs a change and its audit line in one transaction (no change without its line); `entry` null: nothing changed, nothing recorded. */
  const audited = <T>(db: Db, change: (trx: Executor) => Promise<T>, entry: (result: T) => AuditEntry | null): Promise<T> =>
    db.transaction().execute(async (trx) => {
      const result = await change(trx);
      const line = entry(result);
      if (line) await recordAudit(trx, line);
      return result;
    });
  const withDb = (work: (db: Db) => Promise<void>) => {
    job = async (config) => {
      // One connection is all a CLI command needs; destroy() ends the pool so the process can exit.
      const { db } = createDb(config.databaseUrl, { max: 1 });
      try {
        await work(db);
      } finally {
        await db.destroy();
      }
    };
  };

  program
    .command('db')
    .description('Database administration.')
    .command('migrate')
    .description('Create the database if it does not exist, then apply pending migrations.')
    .action(() => {
      job = async (config) => {
        if (await ensureDatabase(config.databaseUrl)) out(`created database ${databaseLabel(config.databaseUrl)}`);
        const result = await migrate(config.databaseUrl);
        for (const name of result.applied) out(`applied ${name}`);
        out(
          result.applied.length === 0
            ? `database is up to date (${result.alreadyApplied} already applied)`
            : `${result.applied.length} migration(s) applied, ${result.alreadyApplied} already applied`,
        );
      };
    });

  const supplier = program.command('supplier').description('Import suppliers: the companies whose accounts are being migrated.');
  supplier
    .command('create')
    .description('Create an import supplier.')
    .argument('<code>', 'supplier code used by clients (letters, digits, _ . -)')
    .option('--name <name>', 'display name (default: the code)')
    .option('--status <status>', 'ongoing, paused or complete, any case (default: ongoing)', statusArg)
    .option('--documents-root <path>', 'where its statement documents live (default: empty)')
    .option('--send-customer-emails', 'send emails to its customers (default: off)')
    .option('--auto-register', 'register the meter points of every account created from now on (default: off; docs/registration.md)')
    .action((code: string, opts: { name?: string; status?: string; documentsRoot?: string; sendCustomerEmails?: boolean; autoRegister?: boolean }) =>
      withDb(async (db) => {
        const s = await audited(
          db,
          (trx) =>
            createSupplier(trx, {
              code,
              ...(opts.name !== undefined ? { name: opts.name } : {}),
              ...(opts.status !== undefined ? { status: opts.status } : {}),
              ...(opts.documentsRoot !== undefined ? { documentsRoot: opts.documentsRoot } : {}),
              sendCustomerEmails: opts.sendCustomerEmails === true,
              autoRegister: opts.autoRegister === true,
            }),
          (c) => ({ action: 'supplier.create', targetKind: 'supplier', target: c.code, detail: { name: c.name, status: c.status, documents_root: c.documents_root, send_customer_emails: c.send_customer_emails, auto_register: c.auto_register_since !== null } }),
        );
        out(`created supplier ${s.code} (${s.name}), status ${s.status}`);
      }),
    );
  supplier
    .command('set-status')
    .description("Set a supplier's migration status; Paused and Complete refuse every migration attempt.")
    .argument('<code>', 'supplier code')
    .argument('<status>', 'ongoing, paused or complete (any case)', statusArg)
    .action((code: string, status: string) =>
      withDb(async (db) => {
        const s = await audited(db, (trx) => setSupplierStatus(trx, code, status), (c) => ({ action: 'supplier.set_status', targetKind: 'supplier', target: c.code, detail: { status: c.status } }));
        out(`supplier ${s.code} status ${s.status}`);
      }),
    );
  supplier
    .command('set-auto-register')
    .description('Register the meter points of every account created from now on (on), or stop (off).')
    .argument('<code>', 'supplier code')
    .argument('<on_or_off>', 'on or off', (v: string) => {
      if (v !== 'on' && v !== 'off') throw new InvalidArgumentError('Expected on or off.');
      return v;
    })
    .action((code: string, onOff: 'on' | 'off') =>
      withDb(async (db) => {
        const s = await audited(db, (trx) => setSupplierAutoRegister(trx, code, onOff === 'on'), (c) => ({ action: 'supplier.set_auto_register', targetKind: 'supplier', target: c.code, detail: { auto_register: onOff === 'on' } }));
        out(s.auto_register_since ? `supplier ${s.code} registers the accounts created since ${formatDatetime(s.auto_register_since)}` : `supplier ${s.code} does not register automatically`);
      }),
    );
  supplier
    .command('set-team')
    .description('Set the operations team its scheduled (v2) accounts go to; they name none of their own.')
    .argument('<code>', 'supplier code')
    .argument('<team>', 'operations team name')
    .action((code: string, teamName: string) =>
      withDb(async (db) => {
        const s = await audited(db, (trx) => setSupplierDefaultTeam(trx, code, teamName), (c) => ({ action: 'supplier.set_team', targetKind: 'supplier', target: c.code, detail: { team: teamName } }));
        out(`supplier ${s.code} schedules its v2 accounts into team '${teamName}'`);
      }),
    );
  supplier
    .command('list')
    .description('List suppliers.')
    .option('--json', 'as JSON')
    .action((opts: { json?: boolean }) =>
      withDb(async (db) => {
        const rows = await listSuppliers(db);
        if (opts.json) {
          out(
            JSON.stringify(
              rows.map((r) => ({ code: r.code, name: r.name, status: r.status, documents_root: r.documents_root, send_customer_emails: r.send_customer_emails, created_at: formatDatetime(r.created_at) })),
              null,
              2,
            ),
          );
          return;
        }
        table(
          out,
          ['CODE', 'NAME', 'STATUS', 'DOCUMENTS_ROOT', 'CUSTOMER_EMAILS', 'CREATED_AT'],
          rows.map((s) => [s.code, s.name, s.status, s.documents_root, s.send_customer_emails ? 'yes' : 'no', formatDatetime(s.created_at)]),
        );
      }),
    );

  const team = program.command('team').description('Operations teams (accounts are assigned to one when created).');
  team
    .command('create')
    .description('Create an operations team.')
    .argument('<name>', 'team name, as clients send it in operations_team_name')
    .action((name: string) =>
      withDb(async (db) => {
        const t = await audited(db, (trx) => createTeam(trx, name), (c) => ({ action: 'team.create', targetKind: 'team', target: c.name }));
        out(`created team ${t.name}`);
      }),
    );
  team
    .command('list')
    .description('List operations teams.')
    .option('--json', 'as JSON')
    .action((opts: { json?: boolean }) =>
      withDb(async (db) => {
        const rows = await listTeams(db);
        if (opts.json) return void out(JSON.stringify(rows.map((t) => ({ name: t.name, created_at: formatDatetime(t.created_at) })), null, 2));
        table(out, ['NAME', 'CREATED_AT'], rows.map((t) => [t.name, formatDatetime(t.created_at)]));
      }),
    );

  const apiKey = program.command('api-key').description('API keys clients exchange for tokens (ObtainToken).');
  apiKey
    .command('create')
    .description('Issue a key; it is printed once, alone on the last line, and only its hash is stored.')
    .argument('<name>', 'a name to revoke it by later (unique among active keys)')
    .option('--supplier <code>', 'scope the key to this import supplier (repeat for several); without it the key reaches every supplier', (code: string, codes: string[]) => [...codes, code], [] as string[])
    .action((name: string, opts: { supplier: string[] }) =>
      withDb(async (db) => {
        if (name.trim() === '') throw new UsageError('the API key name must not be empty');
        let issued;
        try {
          issued = await createApiKey(db, name, opts.supplier);
        } catch (err) {
          if (err instanceof UnknownScopeSupplier) throw new CliFailure(`Cannot scope the key: ${err.message}.`);
          throw err;
        }
        // Its name and scope, never the key.
        await recordAudit(db, { action: 'api_key.create', targetKind: 'api_key', target: issued.name, detail: { suppliers: issued.suppliers } });
        out(`created API key '${issued.name}'`);
        out(
          issued.suppliers.length > 0
            ? `scope: suppliers ${issued.suppliers.join(', ')} only; every other supplier is invisible to it`
            : 'scope: EVERY supplier (no --supplier given): it can read and write all suppliers\' accounts and batches',
        );
        out('warning: the key is shown only once and cannot be recovered; store it now.');
        out(issued.key);
      }),
    );
  apiKey
    .command('revoke')
    .description("Revoke the active key of that name; its tokens stop working at once.")
    .argument('<name>', 'the name given at creation')
    .action((name: string) =>
      withDb(async (db) => {
        const revoked = await audited(db, (trx) => revokeApiKey(trx, name, new Date()), (done) => (done ? { action: 'api_key.revoke', targetKind: 'api_key', target: name } : null));
        if (!revoked) throw new CliFailure(`No active API key is named '${name}'.`);
        out(`revoked API key '${name}'`);
      }),
    );

  const reference = program
    .command('reference')
    .description(`The platform's reference lists (decisions §6): ${REFERENCE_KINDS.join(', ')}. Servers pick up a change within a second.`);
  const kindArg = (kind: string): ReferenceKind => {
    const upper = kind.toUpperCase();
    if (!isReferenceKind(upper)) throw new UsageError(`unknown reference list '${kind}'; one of ${REFERENCE_KINDS.join(', ')}`);
    return upper;
  };
  reference
    .command('list')
    .description('List the values of one list, or of all: value, where it came from, and whether it is retired.')
    .argument('[kind]', 'a list name, for example CHARGE_REASON')
    .action((kind?: string) =>
      withDb(async (db) => {
        const rows = await listReferenceValues(db, kind === undefined ? undefined : kindArg(kind));
        for (const r of rows) out(`${r.kind}\t${r.value === '' ? '""' : r.value}\t${r.source}${r.retired_at ? `\tretired ${formatDatetime(r.retired_at)}` : ''}`);
      }),
    );
  reference
    .command('add')
    .description('Add a value to a list, or take a retired one back into use.')
    .argument('<kind>', 'a list name')
    .argument('<value>', 'the value, as clients will send it')
    .action((kind: string, value: string) =>
      withDb(async (db) => {
        const k = kindArg(kind);
        if (value.length > 255) throw new UsageError('a reference value is at most 255 characters');
        const added = await audited(db, (trx) => addReferenceValue(trx, k, value), (done) => (done ? { action: 'reference.add', targetKind: 'reference', target: `${k}:${value}` } : null));
        out(added ? `added ${k} ${JSON.stringify(value)}` : `${k} ${JSON.stringify(value)} is already in use`);
      }),
    );
  reference
    .command('retire')
    .description('Retire a value: new requests using it are refused (invalid_choice); what was imported with it keeps it.')
    .argument('<kind>', 'a list name')
    .argument('<value>', 'the value')
    .action((kind: string, value: string) =>
      withDb(async (db) => {
        const k = kindArg(kind);
        const retired = await audited(db, (trx) => retireReferenceValue(trx, k, value), (done) => (done ? { action: 'reference.retire', targetKind: 'reference', target: `${k}:${value}` } : null));
        if (!retired) throw new CliFailure(`${k} has no value ${JSON.stringify(value)} in use.`);
        out(`retired ${k} ${JSON.stringify(value)}`);
      }),
    );

  const account = program.command('account').description('Individual account imports.');
  account
    .command('show')
    .description('Print an imported account as stored, as JSON: its fields, customers, supply addresses, meter points with meters, registers, readings and agreements, the counts of its history, and the data it was created from.')
    .argument('<supplier>', 'supplier code')
    .argument('<external_account_number>', "the account's number at the supplier")
    .action((supplierCode: string, external: string) =>
      withDb(async (db) => {
        const s = await findSupplierByCode(db, supplierCode);
        if (!s) throw new CliFailure(`Import supplier '${supplierCode}' does not exist.`);
        const rows = await readAccountTree(db, s.id, external);
        if (!rows) throw new CliFailure(`Account '${external}' of supplier '${s.code}' has not been imported.`);
        out(JSON.stringify(accountView(s.code, rows), null, 2));
      }),
    );
  account
    .command('skip')
    .description('Mark an account to be skipped: staging and processing it are refused from then on.')
    .argument('<supplier>', 'supplier code')
    .argument('<external_account_number>', "the account's number at the supplier")
    .action((supplierCode: string, external: string) =>
      withDb(async (db) => {
        if (external.trim() === '') throw new UsageError('the external account number must not be empty');
        const s = await findSupplierByCode(db, supplierCode);
        if (!s) throw new CliFailure(`Import supplier '${supplierCode}' does not exist.`);
        if ((await markToSkip(db, s.id, external)) === 'already_imported') {
          throw new CliFailure(`Account '${external}' of supplier '${s.code}' is already imported; it cannot be skipped.`);
        }
        await recordAudit(db, { action: 'account.skip', targetKind: 'account', target: `${s.code}/${external}` });
        out(`account '${external}' of supplier '${s.code}' marked to skip`);
      }),
    );

  const audit = program.command('audit').description('Who changed what: the audit log of importctl, the API and the console.');
  audit
    .command('list')
    .description('The newest lines first.')
    .option('--limit <n>', 'at most this many lines (default 50, at most 10,000)', (v: string) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 1 || n > 10_000) throw new InvalidArgumentError('a whole number from 1 to 10,000');
      return n;
    })
    .option('--batch <id>', 'only the lines of this batch')
    .option('--supplier <code>', 'only the lines of this supplier')
    .option('--json', 'as JSON')
    .action((opts: { limit?: number; batch?: string; supplier?: string; json?: boolean }) =>
      withDb(async (db) => {
        if (opts.batch !== undefined && opts.supplier !== undefined) throw new UsageError('give --batch or --supplier, not both');
        const target = opts.batch !== undefined ? { targetKind: 'batch' as const, target: opts.batch } : opts.supplier !== undefined ? { targetKind: 'supplier' as const, target: opts.supplier } : {};
        const lines = await listAudit(db, { limit: opts.limit ?? 50, ...target });
        if (opts.json) {
          out(JSON.stringify(lines.map((l) => ({ ...l, at: formatDatetime(l.at) })), null, 2));
          return;
        }
        table(
          out,
          ['AT', 'ACTOR', 'ACTION', 'TARGET', 'DETAIL'],
          lines.map((l) => [formatDatetime(l.at), `${l.actor_kind}:${l.actor}`, l.action, `${l.target_kind}:${l.target}`, JSON.stringify(l.detail)]),
        );
      }),
    );

  const operator = program.command('operator').description('Operator accounts for the console at /admin/ (viewers see; operators act).');
  /** The password: read from stdin (its first line) with --password-stdin, else generated and printed once. */
  const passwordFor = async (opts: { passwordStdin?: boolean }): Promise<{ password: string; generated: boolean }> => {
    if (!opts.passwordStdin) return { password: generatePassword(), generated: true };
    if (!io.stdin) throw new UsageError('--password-stdin needs a standard input');
    let text = '';
    for await (const chunk of io.stdin) {
      text += String(chunk);
      if (text.length > MAX_PASSWORD_LENGTH + 2) break;
    }
    const password = text.split(/\r?\n/)[0] ?? '';
    const problem = passwordProblem(password);
    if (problem) throw new UsageError(problem);
    return { password, generated: false };
  };
  const roleArg = (v: string): OperatorRole => {
    if (!isOperatorRole(v)) throw new InvalidArgumentError('Expected viewer or operator.');
    return v;
  };
  const operatorFailure = (err: unknown): never => {
    if (err instanceof OperatorProblem) throw new CliFailure(err.message);
    throw err;
  };
  const printPassword = (name: string, p: { password: string; generated: boolean }) => {
    if (!p.generated) return;
    out(`warning: the password of '${name}' is shown only once; hand it over now (they sign in at /admin/sign-in).`);
    out(p.password);
  };
  operator
    .command('create')
    .description('Create an operator; without --password-stdin a password is generated and printed once, alone on the last line.')
    .argument('<name>', "sign-in name: lower-case letters, digits, '.', '_' or '-'")
    .requiredOption('--role <role>', 'viewer (sees everything, changes nothing) or operator (also acts)', roleArg)
    .option('--password-stdin', 'read the password from the first line of standard input (at least 12 characters)')
    .action((name: string, opts: { role: OperatorRole; passwordStdin?: boolean }) =>
      withDb(async (db) => {
        const p = await passwordFor(opts);
        await createOperator(db, name, opts.role, p.password).catch(operatorFailure);
        out(`created ${opts.role} '${name}'`);
        printPassword(name, p);
      }),
    );
  operator
    .command('set-password')
    .description('Give an operator a new password; their sessions end. Generated and printed once unless --password-stdin.')
    .argument('<name>', 'operator name')
    .option('--password-stdin', 'read the password from the first line of standard input')
    .action((name: string, opts: { passwordStdin?: boolean }) =>
      withDb(async (db) => {
        const p = await passwordFor(opts);
        await setOperatorPassword(db, name, p.password).catch(operatorFailure);
        out(`new password set for '${name}'; their sessions have ended`);
        printPassword(name, p);
      }),
    );
  operator
    .command('set-role')
    .description("Change an operator's role; it applies from their next request.")
    .argument('<name>', 'operator name')
    .argument('<role>', 'viewer or operator', roleArg)
    .action((name: string, role: OperatorRole) =>
      withDb(async (db) => {
        await setOperatorRole(db, name, role).catch(operatorFailure);
        out(`'${name}' is now a ${role}`);
      }),
    );
  for (const [command, disabled] of [['disable', true], ['enable', false]] as const) {
    operator
      .command(command)
      .description(disabled ? 'Stop an operator signing in; their sessions end at their next request.' : 'Let a disabled operator sign in again.')
      .argument('<name>', 'operator name')
      .action((name: string) =>
        withDb(async (db) => {
          await setOperatorDisabled(db, name, disabled).catch(operatorFailure);
          out(`'${name}' ${disabled ? 'disabled' : 'enabled'}`);
        }),
      );
  }
  operator
    .command('list')
    .description('List operators.')
    .option('--json', 'as JSON')
    .action((opts: { json?: boolean }) =>
      withDb(async (db) => {
        const rows = await listOperators(db);
        const at = (d: Date | null) => (d === null ? null : formatDatetime(d));
        if (opts.json) {
          out(JSON.stringify(rows.map((r) => ({ name: r.name, role: r.role, created_at: at(r.created_at), password_set_at: at(r.password_set_at), disabled_at: at(r.disabled_at) })), null, 2));
          return;
        }
        table(out, ['NAME', 'ROLE', 'CREATED_AT', 'DISABLED_AT'], rows.map((r) => [r.name, r.role, formatDatetime(r.created_at), at(r.disabled_at) ?? '']));
      }),
    );

  registerCohortCommands(program, io, (j) => {
    job = j;
  });
  registerWebhookCommands(program, io, (j) => void (job = j));

  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (err) {
    if (!(err instanceof CommanderError)) throw err;
    if (err.code === 'commander.help' && err.exitCode !== 0) {
      const usage = /Usage: (\S+(?: [a-z][\w-]*)*)/.exec(errorHelp)?.[1] ?? 'importctl';
      fail(`missing command; run '${usage} --help'`);
      return EXIT_USAGE;
    }
    io.err(errorHelp);
    // Help and version are the only "errors" that succeed; everything else commander reports is usage.
    return err.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
  }
  if (!job) return EXIT_OK;

  let config: Config;
  try {
    // importctl neither signs nor verifies tokens: TOKEN_SECRET is not needed (src/config.ts).
    config = loadConfig(io.env, { signsTokens: false });
  } catch (err) {
    if (err instanceof ConfigError) {
      fail(err.message);
      return EXIT_USAGE;
    }
    throw err;
  }

  try {
    // Every change a command makes is recorded as done by the user who ran it (the audit log).
    return (await actingAs({ kind: 'cli', name: cliUser() }, () => job!(config))) ?? EXIT_OK;
  } catch (err) {
    if (err instanceof UsageError) {
      fail(err.message);
      return EXIT_USAGE;
    }
    fail(describeFailure(err, config.databaseUrl));
    return EXIT_FAILED;
  }
}

function statusArg(value: string): string {
  try {
    return parseSupplierStatus(value);
  } catch {
    throw new InvalidArgumentError('Expected ongoing, paused or complete.');
  }
}

/** Host, port and database of a URL, never its credentials: error lines end up in shell histories and CI logs. */
function databaseLabel(databaseUrl: string): string {
  try {
    const u = new URL(databaseUrl);
    return `${u.hostname}${u.port ? `:${u.port}` : ''}${u.pathname}`;
  } catch {
    return '(unparsable DATABASE_URL)';
  }
}

const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

function describeFailure(err: unknown, databaseUrl: string): string {
  if (err instanceof AppError) return err.detail;
  if (err instanceof ApiKeyNameTaken || err instanceof CliFailure) return err.message;
  // Node reports a refused connection to a name with several addresses as an AggregateError with no message.
  const first = err instanceof AggregateError && err.errors.length > 0 ? (err.errors[0] as unknown) : err;
  const e = first as { code?: string; message?: string };
  const message = e.message || String(first);
  if (e.code === '3D000') return `${message} (run 'importctl db migrate' to create it)`;
  if (
    (e.code !== undefined && (CONNECTION_CODES.has(e.code) || e.code.startsWith('28') || e.code.startsWith('08'))) ||
    /timeout exceeded when trying to connect|Connection terminated/.test(message)
  ) {
    return `cannot use PostgreSQL at ${databaseLabel(databaseUrl)}: ${message}`;
  }
  return `unexpected error: ${message}`;
}

/** The operating-system user running importctl: who the audit log says did it. */
function cliUser(): string {
  try {
    return userInfo().username;
  } catch {
    return process.env.USER ?? process.env.USERNAME ?? 'unknown';
  }
}

const oneLine = (s: string): string => s.replace(/\s*\n\s*/g, ' ').trim();

/** Columns padded to their widest cell so the output reads as a table and splits on runs of blanks. */
function table(out: (line: string) => void, header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ').trimEnd();
  out(line(header));
  for (const r of rows) out(line(r));
}

/** True when this file is the program being run (directly, through the npm bin symlink, or via tsx). */
function isEntryPoint(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

/**
 * importctl as the program: arguments from the command line, output to the process's streams, the
 * exit status set when it ends. Run when this file is the script, and by src/cli/run.mjs (the fast
 * launcher of the compiled CLI).
 */
export function runAsProgram(): void {
  // The reader went away (`importctl supplier list | head -1`): nothing more to say, not a crash.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') process.exit(process.exitCode ?? EXIT_OK);
      throw err;
    });
  }
  main(process.argv.slice(2), {
    out: (s) => process.stdout.write(s),
    err: (s) => process.stderr.write(s),
    env: process.env,
    streams: { stdout: process.stdout, stderr: process.stderr },
    stdin: process.stdin,
  }).then(
    (code) => {
      // exitCode rather than exit(): pending stdout is flushed, and a handle left open would show up as a hang.
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`importctl: unexpected error: ${oneLine(err instanceof Error ? err.message : String(err))}\n`);
      process.exitCode = EXIT_FAILED;
    },
  );
}

if (isEntryPoint()) runAsProgram();
