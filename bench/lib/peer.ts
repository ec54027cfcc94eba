import type { AccountBundle } from '../../src/cohort/generate.js';
import { TEAM, type BenchEnv } from './env.js';
import { call } from './http-client.js';
import { Meter, type CpuSeconds } from './meter.js';
import { perUnit, settledCounters, type PerUnit } from './pgstats.js';
import { rowCounts } from './pipeline.js';
import { distribution, round } from './stats.js';

export const PEER_STEPS = ['validate', 'stage', 'process', 'notes', 'transactions', 'statements', 'payment_instruction'] as const;
type PeerStep = (typeof PEER_STEPS)[number];

export interface PeerResult {
  accounts: number;
  clients: number;
  created: number;
  seconds: number;
  accounts_per_s: number;
  requests: number;
  steps: Record<PeerStep, { p50_ms: number; p99_ms: number }>;
  peak_rss_mb: Partial<Record<'api' | 'workers', number>>;
  cpu_s: CpuSeconds;
  rows: Record<string, number>;
  pg_per_account: PerUnit;
  problems: string[];
}

/**
 * The same migration through the REST endpoints, as a supplier's script drives it today: per account
 * validate, stage, process, notes, transactions, statements, payment instruction, in order, with
 * `clients` such scripts running at once over keep-alive connections.
 */
export async function runPeer(env: BenchEnv, token: string, supplier: string, bundles: readonly AccountBundle[], clients: number, settleMs: number): Promise<PeerResult> {
  const latencies: Record<PeerStep, number[]> = Object.fromEntries(PEER_STEPS.map((s) => [s, [] as number[]])) as Record<PeerStep, number[]>;
  const problems: string[] = [];
  let created = 0;
  let requests = 0;

  const migrate = async (b: AccountBundle): Promise<void> => {
    const ext = String(b.account.external_account_number);
    const pair = { import_supplier: supplier, external_account_number: ext };
    const steps: Array<[PeerStep, string, unknown, number]> = [
      ['validate', '/v1/data-import/validate-account/', b.account, 200],
      ['stage', '/v1/data-import/account-import-process/create-or-update/', b.account, 201],
      ['process', '/v1/data-import/account-import-process/process/', { external_account_number: ext, import_supplier_code: supplier, operations_team_name: TEAM }, 201],
      ['notes', '/v1/data-import/notes/create/', { ...pair, notes: b.notes }, 201],
      ['transactions', '/v1/data-import/transactions/create/', { ...pair, transactions: b.transactions }, 201],
      ['statements', '/v1/data-import/historical-statements/create/', { ...pair, statements: b.statements }, 201],
      ['payment_instruction', '/v1/data-import/payment-instruction/create/', { ...pair, ...b.payment_instruction }, 201],
    ];
    for (const [step, path, body, expected] of steps) {
      const t = performance.now();
      const res = await call(env.apiUrl, token, 'POST', path, body);
      latencies[step].push(performance.now() - t);
      requests++;
      if (res.status !== expected) {
        if (problems.length < 5) problems.push(`${ext} ${step} answered ${res.status}: ${JSON.stringify(res.body).slice(0, 500)}`);
        return;
      }
    }
    created++;
  };

  const pgBefore = await settledCounters(env.databaseUrl, settleMs);
  const meter = new Meter({ api: env.api?.pid, workers: env.workers.map((w) => w.pid) });
  let next = 0;
  meter.start();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      for (let i = next++; i < bundles.length; i = next++) await migrate(bundles[i]!);
    }),
  );
  const measured = meter.stop();
  const pgAfter = await settledCounters(env.databaseUrl, settleMs);

  const rows = await rowCounts(env, supplier);
  if (created !== bundles.length) problems.unshift(`${created} of ${bundles.length} accounts migrated over REST`);
  if (rows.accounts !== bundles.length) problems.push(`accounts: ${rows.accounts} rows, expected ${bundles.length}`);
  return {
    accounts: bundles.length,
    clients,
    created,
    seconds: round(measured.seconds),
    accounts_per_s: round(created / measured.seconds),
    requests,
    steps: Object.fromEntries(
      PEER_STEPS.map((s) => {
        const d = distribution(latencies[s]);
        return [s, { p50_ms: round(d.p50), p99_ms: round(d.p99) }];
      }),
    ) as PeerResult['steps'],
    peak_rss_mb: measured.peakRssMb,
    cpu_s: measured.cpu,
    rows,
    pg_per_account: perUnit(pgBefore, pgAfter, bundles.length),
    problems,
  };
}
