import { STAGES } from '../../src/queue/contract.js';
import type { CeilingResult, LimitResult } from './ceiling.js';
import { CPU_NAMES, type CpuSeconds } from './meter.js';
import { PEER_STEPS, type PeerResult } from './peer.js';
import type { HttpResult } from './http-load.js';
import type { CohortResult } from './pipeline.js';
import { fmt, ms, round, table } from './stats.js';
import type { UploadResult } from './upload.js';
import type { RegistrationResult } from './registration.js';
import type { PerUnit } from './pgstats.js';

export interface Machine {
  cpu: string;
  cores: number;
  memory_gib: number;
  os: string;
  node: string;
  postgres: string;
  postgres_settings: Record<string, string>;
  redis: string;
  load_average_at_start: number[];
}

export type Outcome<T> = { ok: true; result: T } | { ok: false; error: string };

export interface Results {
  cohort?: Outcome<CohortResult>;
  ceiling?: Outcome<CeilingResult>;
  limit?: Outcome<LimitResult>;
  peer?: Outcome<PeerResult>;
  http?: Outcome<HttpResult>;
  upload?: Outcome<UploadResult>;
  registration?: Outcome<RegistrationResult>;
}

export interface Ratios {
  pipeline_over_ceiling: number | null;
  batch_over_rest: number | null;
  validate_over_bare: number | null;
  validate_p99_ms: number | null;
  upload_rss_growth_mb: number | null;
  pipeline_over_limit: number | null;
  /** Not a ratio: the registration scenario's events applied per second (on its own line, not the ratios line). */
  registration_events_per_s: number | null;
}

const ok = <T>(o: Outcome<T> | undefined): T | undefined => (o?.ok ? o.result : undefined);
const ratio = (a: number | undefined, b: number | undefined): number | null => (a !== undefined && b !== undefined && b > 0 ? round(a / b, 3) : null);

export function ratiosOf(r: Results): Ratios {
  const cohort = ok(r.cohort);
  const http = ok(r.http);
  return {
    pipeline_over_ceiling: ratio(cohort?.accounts_per_s, ok(r.ceiling)?.accounts_per_s),
    batch_over_rest: ratio(cohort?.accounts_per_s, ok(r.peer)?.accounts_per_s),
    validate_over_bare: ratio(http?.validate.requests_per_s, http?.bare.requests_per_s),
    validate_p99_ms: http ? http.validate.p99_ms : null,
    upload_rss_growth_mb: ok(r.upload)?.rss_growth_mb ?? null,
    pipeline_over_limit: ratio(cohort?.accounts_per_s, ok(r.limit)?.accounts_per_s),
    registration_events_per_s: ok(r.registration)?.events_applied.per_s ?? null,
  };
}

export interface Target {
  name: string;
  want: string;
  value: number | null;
  met: boolean | null;
}

export function targetsOf(q: Ratios): Target[] {
  const t = (name: string, want: string, value: number | null, test: (v: number) => boolean): Target => ({ name, want, value, met: value === null ? null : test(value) });
  return [
    t('pipeline / ceiling', '>= 0.60', q.pipeline_over_ceiling, (v) => v >= 0.6),
    t('batch / REST', '>= 3.0', q.batch_over_rest, (v) => v >= 3),
    t('validate / bare', '>= 0.20', q.validate_over_bare, (v) => v >= 0.2),
    t('validate p99 (ms)', '<= 25', q.validate_p99_ms, (v) => v <= 25),
    t('upload RSS growth (MB)', '<= 150', q.upload_rss_growth_mb, (v) => v <= 150),
    t('registration events/s', '>= 2000', q.registration_events_per_s, (v) => v >= 2000),
  ];
}

/** The last line of every run, in a fixed form CI logs and people can grep. */
export function ratiosLine(q: Ratios): string {
  const f = (v: number | null, digits: number) => (v === null ? 'n/a' : v.toFixed(digits));
  return `ratios: pipeline/ceiling=${f(q.pipeline_over_ceiling, 2)} batch/rest=${f(q.batch_over_rest, 2)} validate/bare=${f(q.validate_over_bare, 2)} validate_p99_ms=${f(q.validate_p99_ms, 0)} upload_rss_growth_mb=${f(q.upload_rss_growth_mb, 0)} pipeline/limit=${f(q.pipeline_over_limit, 2)}`;
}

/** The registration scenario's figures in a fixed form, printed under the ratios line when it ran. */
export function registrationLine(r: Results): string | undefined {
  const reg = ok(r.registration);
  if (!reg) return undefined;
  return `registration: meter_points=${reg.meter_points} marking_s=${reg.marking.seconds.toFixed(2)} requests_per_s=${reg.requests.per_s.toFixed(0)} events_per_s=${reg.events_applied.per_s.toFixed(0)}`;
}

const cpuRow = (label: string, cpu: CpuSeconds | undefined): string[] => [label, ...CPU_NAMES.map((n) => (cpu?.[n] === undefined ? '-' : fmt(cpu[n], 1)))];

/** The plain-text table printed at the end of a run. */
export function renderReport(r: Results, machine: Machine, header: string, smoke: boolean): string {
  const out: string[] = [header, `machine: ${machineLine(machine)}`, ''];
  const failed = (name: string, o: Outcome<unknown> | undefined) => {
    if (o && !o.ok) out.push(`${name}: FAILED: ${o.error}`, '');
  };

  const cohort = ok(r.cohort);
  failed('cohort', r.cohort);
  if (cohort) {
    // One worker process keeps the wording of old runs ("API and worker processes": one of each).
    const workers = cohort.worker_processes === 1 ? 'worker processes' : `${cohort.worker_processes} worker processes`;
    out.push(`cohort: ${cohort.accounts} accounts (3 notes, 10 transactions, 2 statements with PDFs, 1 payment instruction each), one batch, API and ${workers}`);
    out.push(
      table([
        ['accounts/s, upload start to batch end', fmt(cohort.accounts_per_s, 1)],
        ['seconds (upload accepted after)', `${fmt(cohort.seconds, 1)} (${fmt(cohort.upload_seconds, 1)})`],
        ['batch', `${cohort.batch.state}: ${cohort.batch.succeeded} succeeded, ${cohort.batch.failed} failed`],
      ]),
    );
    if (STAGES.some((st) => cohort.stages[st].sampled > 0)) {
      out.push(
        table([
          ['stage (ms)', 'jobs', 'run p50', 'run p99', 'wait p50', 'wait p99'],
          ...STAGES.map((s) => {
            const t = cohort.stages[s];
            return [s, String(t.sampled), ms(t.run_p50_ms), ms(t.run_p99_ms), ms(t.wait_p50_ms), ms(t.wait_p99_ms)];
          }),
        ]),
      );
    } else {
      out.push('  (no per-stage job times: completed jobs leave Redis at once; see the CPU and PostgreSQL tables)');
    }
    out.push(`  Redis: ${fmt(cohort.redis_commands_per_account, 1)} commands per account (${cohort.redis_top_commands.map((c) => `${c.command} ${fmt(c.per_account, 1)}`).join(', ')})`);
    const perProcess = cohort.per_worker_process;
    if (perProcess) {
      const each = (key: 'cpu_s' | 'peak_rss_mb', digits: number) => perProcess.map((p) => fmt(p[key], digits)).join(' / ');
      out.push(`  each worker process: CPU ${each('cpu_s', 1)} s (workers in the CPU table: their sum), peak RSS ${each('peak_rss_mb', 0)} MB (in the RSS table: the largest)`);
    }
    out.push('');
  }

  const ceiling = ok(r.ceiling);
  failed('ceiling', r.ceiling);
  if (ceiling) {
    out.push(`ceiling: the same rows by a tight loop over a pg pool (${ceiling.concurrency} loops, one transaction and ${ceiling.round_trips_per_account} statements per account)`);
    out.push(table([['accounts/s', fmt(ceiling.accounts_per_s, 1)], ['seconds', fmt(ceiling.seconds, 1)]]), '');
  }
  const limit = ok(r.limit);
  failed('limit', r.limit);
  if (limit) {
    out.push(`limit: the same rows bulk-loaded, ${limit.set_size} accounts per transaction by ${limit.loaders} loaders (${limit.statements_per_set} statements per set)`);
    out.push(table([['accounts/s', fmt(limit.accounts_per_s, 1)], ['seconds', fmt(limit.seconds, 1)]]), '');
  }

  const peer = ok(r.peer);
  failed('peer', r.peer);
  if (peer) {
    out.push(`peer: ${peer.accounts} accounts through the REST endpoints, ${peer.clients} keep-alive clients, 7 requests per account`);
    out.push(table([['accounts/s', fmt(peer.accounts_per_s, 1)], ['seconds', fmt(peer.seconds, 1)], ['migrated', `${peer.created} of ${peer.accounts}`]]));
    out.push(table([['request (ms)', 'p50', 'p99'], ...PEER_STEPS.map((s) => [s, ms(peer.steps[s].p50_ms), ms(peer.steps[s].p99_ms)])]), '');
  }

  const http = ok(r.http);
  failed('http', r.http);
  if (http) {
    out.push(`http: autocannon, ${http.connections} connections x ${http.seconds} s per route; validate body ${http.body_bytes} bytes; bare route = GET /healthz`);
    out.push(
      table([
        ['route', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx'],
        ...[http.bare, http.validate].map((l) => [l.route, fmt(l.requests_per_s, 0), ms(l.p50_ms), ms(l.p99_ms), String(l.non_2xx + l.errors)]),
      ]),
      '',
    );
  }

  const upload = ok(r.upload);
  failed('upload', r.upload);
  if (upload) {
    out.push(`upload: ${upload.lines} NDJSON lines (${fmt(upload.bytes / 1e6, 1)} MB) as one batch, workers stopped`);
    out.push(
      table([
        ['lines/s accepted', fmt(upload.lines_per_s, 0)],
        ['MB/s', fmt(upload.mb_per_s, 1)],
        ['API RSS before / peak / growth (MB)', `${fmt(upload.rss_before_mb, 0)} / ${fmt(upload.rss_peak_mb, 0)} / ${fmt(upload.rss_growth_mb, 0)}`],
        ['API RSS 3 s after the 202 (MB)', fmt(upload.rss_after_mb, 0)],
      ]),
    );
    out.push(`  RSS (MB) as the upload went on: ${upload.rss_timeline.map(([sent, rss]) => `${fmt(sent, 0)} MB sent: ${fmt(rss, 0)}`).join(', ')}`, '');
  }

  const registration = ok(r.registration);
  failed('registration', r.registration);
  if (registration) {
    const g = registration;
    out.push(
      `registration: ${g.accounts} accounts, ${g.meter_points} meter points (1-2 each), sandbox gateway on loopback answering at once;`,
      `  the registration worker and the poller run in the bench process: worker concurrency ${g.worker_concurrency},`,
      `  REGISTRATION_RATE_PER_SECOND=${g.rate_limit_per_s} (set high: the limiter is not the limit); the poller run back to back, pages of ${g.events_page}`,
    );
    out.push(
      table([
        ['marking (markAccounts, chunks of accounts, with the enqueue)', `${fmt(g.marking.seconds, 2)} s`, `${fmt(g.marking.meter_points_per_s, 0)} meter points/s`],
        ['  of which enqueueing the jobs', `${fmt(g.marking.enqueue_seconds, 2)} s`, `${g.marking.chunks} addBulk`],
        ['requests sent, first sent to last answered (poller stopped)', `${fmt(g.requests.seconds, 2)} s`, `${fmt(g.requests.per_s, 0)} requests/s`],
        ['events applied by the poller, until all ON_SUPPLY', `${fmt(g.events_applied.seconds, 2)} s`, `${fmt(g.events_applied.per_s, 0)} events/s`],
        ['  the same pages read from the gateway alone', `${fmt(g.events_applied.fetch_only_seconds, 2)} s`, `${g.events} events, ${g.events_applied.pages} pages`],
      ]),
      '',
    );
  }

  const cpuRows: string[][] = [];
  if (cohort) cpuRows.push(cpuRow('cohort', cohort.cpu_s));
  if (ceiling) cpuRows.push(cpuRow('ceiling', ceiling.cpu_s));
  if (limit) cpuRows.push(cpuRow('limit', limit.cpu_s));
  if (peer) cpuRows.push(cpuRow('peer', peer.cpu_s));
  if (http) cpuRows.push(cpuRow('http bare', http.bare.cpu_s), cpuRow('http validate', http.validate.cpu_s));
  if (upload) cpuRows.push(cpuRow('upload', upload.cpu_s));
  if (registration) cpuRows.push(cpuRow('registration requests', registration.requests.cpu_s), cpuRow('registration events', registration.events_applied.cpu_s));
  if (cpuRows.length > 0) {
    out.push('CPU seconds during each scenario (postgres: the bench databases\' backends and the server\'s helpers; pg_other: other');
    out.push('databases\' and exited backends; bench: this process, i.e. load generator and sandbox vendor; machine: all busy CPU)');
    out.push(table([['', ...CPU_NAMES], ...cpuRows]), '');
  }
  const rssRows: string[][] = [];
  if (cohort) rssRows.push(['cohort', fmt(cohort.peak_rss_mb.api, 0), fmt(cohort.peak_rss_mb.workers, 0)]);
  if (peer) rssRows.push(['peer', fmt(peer.peak_rss_mb.api, 0), '-']);
  if (upload) rssRows.push(['upload', fmt(upload.rss_peak_mb, 0), '-']);
  if (rssRows.length > 0) {
    out.push(`peak RSS (MB) during each scenario${cohort && cohort.peak_rss_scope !== 'scenario' ? ' (VmHWM could not be reset: peaks since process start)' : ''}`);
    out.push(table([['', 'api', 'workers'], ...rssRows]), '');
  }

  const pgRows: string[][] = [];
  const pgRow = (label: string, p: PerUnit) => [label, ...[p.transactions, p.rollbacks, p.rows_inserted, p.rows_updated, p.rows_deleted, p.rows_scanned, p.rows_fetched, p.buffers].map((n) => fmt(n, 1))];
  if (cohort) pgRows.push(pgRow('cohort, per account', cohort.pg_per_account));
  if (ceiling) pgRows.push(pgRow('ceiling, per account', ceiling.pg_per_account));
  if (limit) pgRows.push(pgRow('limit, per account', limit.pg_per_account));
  if (peer) pgRows.push(pgRow('peer, per account', peer.pg_per_account));
  if (upload) pgRows.push(pgRow('upload, per line', upload.pg_per_line));
  if (registration) pgRows.push(pgRow('registration requests, per meter point', registration.requests.pg_per_meter_point), pgRow('registration events, per event', registration.events_applied.pg_per_event));
  if (pgRows.length > 0) {
    out.push(`PostgreSQL work (pg_stat_database of the scenario's database${smoke ? '; smoke mode waits only 3 s for the counters, so they may be short' : ''})`);
    out.push(table([['', 'transactions', 'rollbacks', 'inserted', 'updated', 'deleted', 'scanned', 'fetched', 'buffers'], ...pgRows]), '');
  }

  const targets = targetsOf(ratiosOf(r));
  out.push(`targets${smoke ? ' (smoke sizes: informational only)' : ' (informational: never the exit code)'}`);
  out.push(table(targets.map((t) => [t.name, t.want, t.value === null ? 'n/a' : String(t.value), t.met === null ? '' : t.met ? 'met' : 'MISSED'])));
  return out.join('\n');
}

export function machineLine(m: Machine): string {
  const pg = Object.entries(m.postgres_settings).map(([k, v]) => `${k}=${v}`).join(', ');
  return `${m.cores} x ${m.cpu}, ${m.memory_gib} GiB, ${m.os}, node ${m.node}, PostgreSQL ${m.postgres} (${pg}), Redis ${m.redis}; load average at start ${m.load_average_at_start.join(' ')}`;
}
