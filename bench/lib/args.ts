/** Command-line options of `npm run bench -- …`. */

export const SCENARIOS = ['cohort', 'ceiling', 'limit', 'peer', 'http', 'upload', 'registration'] as const;
export type Scenario = (typeof SCENARIOS)[number];

export interface BenchOptions {
  smoke: boolean;
  only: ReadonlySet<Scenario>;
  accounts: number;
  peerAccounts: number;
  peerClients: number;
  uploadLines: number;
  /** Accounts (1–2 meter points each) whose meter points the registration scenario registers. */
  registrationAccounts: number;
  httpSeconds: number;
  httpConnections: number;
  /** Seconds of unmeasured load before each autocannon measurement. */
  httpWarmupSeconds: number;
  ceilingConcurrency: number;
  /** Concurrent loaders of the limit scenario, and the accounts each loads per transaction. */
  limitLoaders: number;
  limitSetSize: number;
  /** --scaling: only the cohort, at each of these sizes, to see whether accounts/s holds as the tables grow. */
  scaling: number[] | null;
  /** Worker processes (each `node dist/workers/all.js`) driving the cohort, on the same database and Redis prefix. */
  workerProcesses: number;
  keep: boolean;
  build: boolean;
  /** Run the service processes with --cpu-prof (profiles kept in bench/results/profiles-<date>/). */
  profile: boolean;
  /** Where the JSON goes; default bench/results/<YYYY-MM-DDTHH-MM>[-smoke].json. */
  out: string | undefined;
  /** Run the soak instead of the scenarios: mixed REST rounds against growing tables, a cohort beside them. */
  soak: boolean;
  /** Length of the soak in minutes (at least 3: the ratio compares the last minute with the second). */
  minutes: number;
  /** REST clients of the soak. */
  soakClients: number;
  /** Accounts per cohort batch run back to back beside the soak's clients. */
  soakBatchAccounts: number;
}

export const USAGE = `usage: npm run bench -- [options]

  --smoke                 small sizes (300 accounts, 60 peer accounts, http 2 s x 10 connections,
                          5,000 upload lines, 200 registration accounts); exit 1 unless every
                          count is exact
  --only LIST             comma-separated subset of: ${SCENARIOS.join(', ')}
  --accounts N            cohort size (default 20000)
  --peer-accounts N       REST peer cohort size (default 2000)
  --peer-clients N        concurrent REST clients (default 8)
  --upload-lines N        lines in the upload scenario (default 100000)
  --registration          only the registration scenario (the same as --only registration): meter
                          points marked, requests sent to a loopback gateway, its events applied
  --registration-accounts N  accounts of the registration scenario, 1-2 meter points each
                          (default 10000; --smoke: 200)
  --http-seconds S        autocannon duration per route (default 10)
  --http-connections N    autocannon connections (default 50)
  --ceiling-concurrency N concurrent loops (and pool size) of the ceiling (default 16)
  --limit-loaders N       concurrent loaders of the limit (default 4)
  --limit-set-size N      accounts per transaction in the limit (default 1000)
  --scaling               instead of the scenarios: the cohort alone at two sizes (5,000 and 50,000;
                          --smoke: 300 and 1,500), accounts/s compared (within 15%?)
  --scaling-sizes A,B     the sizes --scaling runs
  --worker-processes N    worker processes driving the cohort, as a deployment scaling past one
                          process runs them (default 1); CPU 'workers' is their sum, peak RSS
                          'workers' the largest single process's, each process's in the JSON
  --keep                  keep the bench databases (names are printed) instead of dropping them
  --no-build              use dist/ as it is instead of running npm run build first
  --profile               run the API and workers with --cpu-prof; profiles are kept in
                          bench/results/profiles-<date>/ (figures are then a little lower)
  --out FILE              write the JSON there instead of bench/results/<date>.json
  --soak                  instead of the scenarios: 8 REST clients of mixed rounds against growing
                          tables, cohort batches beside them, figures per minute and a soak: line
  --minutes N             soak length in minutes (default 10, at least 3)
  --soak-clients N        REST clients of the soak (default 8)
  --soak-batch N          accounts per cohort batch beside the soak (default 2000)
  --help`;

export class UsageError extends Error {}

export function parseArgs(argv: readonly string[]): BenchOptions | 'help' {
  const flags = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) throw new UsageError(`unexpected argument '${arg}'`);
    const eq = arg.indexOf('=');
    const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    if (!BOOLEAN_FLAGS.has(name) && !VALUE_FLAGS.has(name)) throw new UsageError(`unknown option --${name}`);
    if (eq !== -1) flags.set(name, arg.slice(eq + 1));
    else if (BOOLEAN_FLAGS.has(name)) flags.set(name, true);
    else {
      const value = argv[++i];
      if (value === undefined) throw new UsageError(`--${name} needs a value`);
      flags.set(name, value);
    }
  }
  if (flags.has('help')) return 'help';

  const smoke = flags.get('smoke') === true;
  const int = (name: string, fallback: number, min = 1): number => {
    const raw = flags.get(name);
    if (raw === undefined) return fallback;
    if (raw === true || !/^\d+$/.test(raw) || Number(raw) < min) throw new UsageError(`--${name} must be a whole number of at least ${min}`);
    return Number(raw);
  };
  let only: Set<Scenario> = new Set(SCENARIOS);
  const onlyRaw = flags.get('only');
  if (onlyRaw !== undefined) {
    if (onlyRaw === true) throw new UsageError('--only needs a list');
    const names = onlyRaw.split(',').map((s) => s.trim()).filter(Boolean);
    const unknown = names.filter((n) => !(SCENARIOS as readonly string[]).includes(n));
    if (unknown.length > 0 || names.length === 0) throw new UsageError(`--only takes ${SCENARIOS.join(', ')}; got '${onlyRaw}'`);
    only = new Set(names as Scenario[]);
  }
  if (flags.get('registration') === true) {
    if (onlyRaw !== undefined) throw new UsageError('--registration is --only registration: give one or the other');
    only = new Set(['registration']);
  }
  const out = flags.get('out');
  const sizes = (name: string, fallback: number[]): number[] => {
    const raw = flags.get(name);
    if (raw === undefined) return fallback;
    const list = raw === true ? [] : raw.split(',').map((x) => x.trim());
    if (list.length < 2 || list.some((x) => !/^\d+$/.test(x) || Number(x) < 1)) throw new UsageError(`--${name} takes two or more sizes, such as 5000,50000`);
    return list.map(Number);
  };
  return {
    smoke,
    only,
    accounts: int('accounts', smoke ? 300 : 20_000),
    peerAccounts: int('peer-accounts', smoke ? 60 : 2_000),
    peerClients: int('peer-clients', 8),
    uploadLines: int('upload-lines', smoke ? 5_000 : 100_000),
    registrationAccounts: int('registration-accounts', smoke ? 200 : 10_000),
    httpSeconds: int('http-seconds', smoke ? 2 : 10),
    httpConnections: int('http-connections', smoke ? 10 : 50),
    httpWarmupSeconds: smoke ? 1 : 2,
    ceilingConcurrency: int('ceiling-concurrency', 16),
    limitLoaders: int('limit-loaders', 4),
    limitSetSize: int('limit-set-size', 1_000),
    scaling: flags.get('scaling') === true ? sizes('scaling-sizes', smoke ? [300, 1_500] : [5_000, 50_000]) : null,
    workerProcesses: int('worker-processes', 1),
    keep: flags.get('keep') === true,
    build: flags.get('no-build') !== true,
    profile: flags.get('profile') === true,
    out: typeof out === 'string' ? out : undefined,
    soak: flags.get('soak') === true,
    minutes: int('minutes', 10, 3),
    soakClients: int('soak-clients', 8),
    soakBatchAccounts: int('soak-batch', 2_000),
  };
}

const BOOLEAN_FLAGS = new Set(['smoke', 'keep', 'no-build', 'profile', 'help', 'soak', 'scaling', 'registration']);
const VALUE_FLAGS = new Set(['only', 'accounts', 'peer-accounts', 'peer-clients', 'upload-lines', 'registration-accounts', 'http-seconds', 'http-connections', 'ceiling-concurrency', 'limit-loaders', 'limit-set-size', 'scaling-sizes', 'worker-processes', 'out', 'minutes', 'soak-clients', 'soak-batch']);
