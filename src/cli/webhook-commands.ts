import { InvalidArgumentError, type Command } from 'commander';
import { formatDatetime } from '../clock.js';
import type { Config } from '../config.js';
import { createDb } from '../db/create-db.js';
import type { Db, WebhookEventType } from '../db/database.js';
import { listDeliveries, type DeliveryRow } from '../webhooks/deliveries.repository.js';
import type { WebhookRow } from '../webhooks/webhooks.repository.js';
import { addWebhook, disableSupplierWebhook, parseWebhookEvents, supplierIdOf, supplierWebhooks, WEBHOOK_EVENTS, webhookUrlProblem } from '../webhooks/webhooks.service.js';

/** The part of importctl's CliIo these commands use (not imported: importctl imports this module). */
export interface WebhookCliIo {
  out(text: string): void;
  err(text: string): void;
}

/** A command's work once parsing succeeded; resolves to the exit status. */
export type WebhookJob = (config: Config) => Promise<number>;

const EXIT_OK = 0;
const EXIT_USAGE = 2;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Adds `supplier webhook add|list|disable|deliveries` to importctl (docs/operators.md, "Webhooks").
 * Refusals (an unknown supplier or webhook) are the service's AppErrors: importctl prints their
 * detail and exits 1. A webhook's secret is printed once, by `add`, and never logged or audited.
 */
export function registerWebhookCommands(program: Command, io: WebhookCliIo, setJob: (job: WebhookJob) => void): void {
  const out = (line = '') => io.out(`${line}\n`);
  const withDb = (work: (db: Db, config: Config) => Promise<number | void>) =>
    setJob(async (config) => {
      // One connection is all a command needs; destroy() ends the pool so the process can exit.
      const { db } = createDb(config.databaseUrl, { max: 1 });
      try {
        return (await work(db, config)) ?? EXIT_OK;
      } finally {
        await db.destroy();
      }
    });

  const supplier = program.commands.find((c) => c.name() === 'supplier') ?? program.command('supplier');
  const webhook = supplier
    .command('webhook')
    .description("A supplier's webhooks: signed JSON events when a batch finishes or an account fails.");

  webhook
    .command('add')
    .description('Add a webhook; its id and signing secret are printed once, the secret alone on the last line.')
    .argument('<code>', 'supplier code')
    .argument('<url>', 'where events are POSTed: http(s), https only in production', urlArg)
    .option('--events <list>', `comma-separated, of ${WEBHOOK_EVENTS.join(', ')} (default: both)`, eventsArg)
    .action((code: string, url: string, opts: { events?: WebhookEventType[] }) =>
      withDb(async (db, config) => {
        const problem = webhookUrlProblem(url, config.nodeEnv);
        if (problem) {
          io.err(`importctl: ${problem}\n`);
          return EXIT_USAGE;
        }
        const added = await db.transaction().execute((trx) => addWebhook(trx, { supplierCode: code, url, events: opts.events ?? [...WEBHOOK_EVENTS], nodeEnv: config.nodeEnv }));
        out(`added webhook ${added.id} to supplier ${code}: ${added.events.join(', ')} -> ${added.url}`);
        out('warning: the signing secret is shown only once and cannot be recovered; give it to the receiver now.');
        out(added.secret);
      }),
    );

  webhook
    .command('list')
    .description("List a supplier's webhooks, enabled and disabled (never their secrets).")
    .argument('<code>', 'supplier code')
    .option('--json', 'as JSON')
    .action((code: string, opts: { json?: boolean }) =>
      withDb(async (db) => {
        const rows = await supplierWebhooks(db, code);
        if (opts.json) return void out(JSON.stringify(rows.map(webhookJson), null, 2));
        table(
          out,
          ['ID', 'URL', 'EVENTS', 'CREATED_AT', 'DISABLED_AT'],
          rows.map((w) => [w.id, w.url, w.events.join(','), formatDatetime(w.created_at), w.disabled_at ? formatDatetime(w.disabled_at) : '']),
        );
      }),
    );

  webhook
    .command('disable')
    .description('Disable a webhook: no new events are sent to it, and its deliveries still pending are given up.')
    .argument('<code>', 'supplier code')
    .argument('<id>', 'webhook id (from `supplier webhook list`)', (v: string) => {
      if (!UUID.test(v)) throw new InvalidArgumentError('Expected a webhook id (a UUID).');
      return v;
    })
    .action((code: string, id: string) =>
      withDb(async (db) => {
        const w = await db.transaction().execute((trx) => disableSupplierWebhook(trx, { supplierCode: code, id, now: new Date() }));
        out(`disabled webhook ${w.id} of supplier ${code} (${w.url})`);
      }),
    );

  webhook
    .command('deliveries')
    .description("A supplier's webhook deliveries, newest first: state, attempts and the receiver's last answer.")
    .argument('<code>', 'supplier code')
    .option('--batch <id>', 'only those of this batch', (v: string) => {
      if (!UUID.test(v)) throw new InvalidArgumentError('Expected a batch id (a UUID).');
      return v;
    })
    .option('--limit <n>', 'at most this many (default 50, at most 10,000)', (v: string) => {
      const n = Number(v);
      if (!/^\d+$/.test(v) || n < 1 || n > 10_000) throw new InvalidArgumentError('a whole number from 1 to 10,000');
      return n;
    })
    .option('--json', 'as JSON (with the start of each last answer)')
    .action((code: string, opts: { batch?: string; limit?: number; json?: boolean }) =>
      withDb(async (db) => {
        const s = await supplierIdOf(db, code);
        const rows = await listDeliveries(db, { supplierId: s.id, ...(opts.batch ? { batchId: opts.batch } : {}), limit: opts.limit ?? 50 });
        if (opts.json) return void out(JSON.stringify(rows.map(deliveryJson), null, 2));
        table(
          out,
          ['CREATED_AT', 'EVENT', 'STATE', 'ATTEMPTS', 'STATUS', 'BATCH', 'EVENT_ID', 'LAST_ERROR'],
          rows.map((d) => [formatDatetime(d.created_at), d.event_type, d.state, String(d.attempts), d.last_status_code?.toString() ?? '', d.batch_id ?? '', d.event_id, d.last_error ?? '']),
        );
      }),
    );
}

const at = (d: Date | null): string | null => (d === null ? null : formatDatetime(d));

const webhookJson = (w: WebhookRow) => ({ id: w.id, url: w.url, events: w.events, created_at: at(w.created_at), disabled_at: at(w.disabled_at) });

const deliveryJson = (d: DeliveryRow) => ({
  id: d.id,
  webhook_id: d.webhook_id,
  url: d.url,
  batch_id: d.batch_id,
  event_id: d.event_id,
  event_type: d.event_type,
  state: d.state,
  attempts: d.attempts,
  last_status_code: d.last_status_code,
  last_error: d.last_error,
  last_response: d.last_response,
  created_at: at(d.created_at),
  last_attempt_at: at(d.last_attempt_at),
  delivered_at: at(d.delivered_at),
});

/** The checks that need no configuration; https-only in production is checked once it is read. */
function urlArg(value: string): string {
  const problem = webhookUrlProblem(value, 'development');
  if (problem) throw new InvalidArgumentError(`${problem}.`);
  return value;
}

function eventsArg(value: string): WebhookEventType[] {
  const parsed = parseWebhookEvents(value);
  if ('problem' in parsed) throw new InvalidArgumentError(`${parsed.problem}.`);
  return parsed.events;
}

/** Columns padded to their widest cell, as importctl's other tables. */
function table(out: (line: string) => void, header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ').trimEnd();
  out(line(header));
  for (const r of rows) out(line(r));
}
