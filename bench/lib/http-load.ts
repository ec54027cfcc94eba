import autocannon from 'autocannon';
import { utcDate } from '../../src/clock.js';
import { generateCohort } from '../../src/cohort/generate.js';
import type { BenchEnv } from './env.js';
import { call } from './http-client.js';
import { Meter, type CpuSeconds } from './meter.js';
import { round } from './stats.js';

export interface RouteLoad {
  route: string;
  requests: number;
  requests_per_s: number;
  p50_ms: number;
  p99_ms: number;
  non_2xx: number;
  /** Answers by HTTP status. */
  statuses: Record<string, number>;
  errors: number;
  cpu_s: CpuSeconds;
}

export interface HttpResult {
  connections: number;
  seconds: number;
  body_bytes: number;
  bare: RouteLoad;
  validate: RouteLoad;
  problems: string[];
}

/**
 * A realistic account data object of about 2 KB: a generated account with a joint second customer
 * and the legacy-system metadata suppliers usually carry. Valid, with meter points nobody claims.
 */
export function realisticAccount(supplier: string): Record<string, unknown> {
  const [generated] = [...generateCohort({ count: 1, supplier, prefix: 'HTTP', seed: 424242, today: utcDate(new Date()) })];
  const account = structuredClone(generated!.bundle.account);
  const customers = account.customers as Array<Record<string, unknown>>;
  const first = customers[0]!;
  customers.push({ ...first, title: 'Mx', given_name: 'Robin', email: 'robin.joint-holder@example.org', date_of_birth: '1979-06-14' });
  const metadata = account.metadata as Array<{ key: string; value: string }>;
  const legacy = [
    ['legacy_tariff', 'Fixed 12M'],
    ['legacy_payment_day', '15'],
    ['legacy_region', 'North West'],
    ['legacy_contract_end', '2026-03-31'],
    ['legacy_smart_meter', 'SMETS2'],
    ['legacy_segment', 'dual-fuel-online'],
    ['legacy_psr_flags', 'none'],
    ['legacy_agent', 'retention-team'],
  ];
  for (const [key, value] of legacy) {
    if (JSON.stringify(account).length >= 2000) break;
    metadata.push({ key: key!, value: value! });
  }
  return account;
}

async function load(env: BenchEnv, opts: { route: string; method: 'GET' | 'POST'; headers?: Record<string, string>; body?: string; connections: number; seconds: number; warmupSeconds: number }): Promise<RouteLoad> {
  const base = { url: `${env.apiUrl}${opts.route}`, method: opts.method, connections: opts.connections, ...(opts.headers ? { headers: opts.headers } : {}), ...(opts.body ? { body: opts.body } : {}) };
  if (opts.warmupSeconds > 0) await autocannon({ ...base, duration: opts.warmupSeconds });
  const meter = new Meter({ api: env.api?.pid });
  meter.start();
  const r = await autocannon({ ...base, duration: opts.seconds });
  const measured = meter.stop();
  const ok = r['2xx'];
  return {
    route: `${opts.method} ${opts.route}`,
    requests: ok,
    requests_per_s: round(ok / r.duration, 1),
    p50_ms: r.latency.p50,
    p99_ms: r.latency.p99,
    non_2xx: r.non2xx,
    statuses: Object.fromEntries(Object.entries(r.statusCodeStats ?? {}).map(([code, s]) => [code, s.count])),
    errors: r.errors,
    cpu_s: measured.cpu,
  };
}

/** The validate endpoint under load next to a bare route (GET /healthz) of the same server. */
export async function runHttp(env: BenchEnv, token: string, supplier: string, opts: { connections: number; seconds: number; warmupSeconds: number }): Promise<HttpResult> {
  const body = JSON.stringify(realisticAccount(supplier));
  const headers = { authorization: `Token ${token}`, 'content-type': 'application/json' };
  const probe = await call(env.apiUrl, token, 'POST', '/v1/data-import/validate-account/', JSON.parse(body));
  if (probe.status !== 200) throw new Error(`validate answered ${probe.status} to the load body: ${JSON.stringify(probe.body).slice(0, 800)}`);

  const bare = await load(env, { route: '/healthz', method: 'GET', ...opts });
  const validate = await load(env, { route: '/v1/data-import/validate-account/', method: 'POST', headers, body, ...opts });
  const problems: string[] = [];
  for (const r of [bare, validate]) {
    if (r.non_2xx > 0 || r.errors > 0) problems.push(`${r.route}: ${r.non_2xx} non-2xx answers (by status: ${JSON.stringify(r.statuses)}) and ${r.errors} connection errors`);
  }
  return { connections: opts.connections, seconds: opts.seconds, body_bytes: Buffer.byteLength(body), bare, validate, problems };
}
