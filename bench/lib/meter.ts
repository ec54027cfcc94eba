import { CLK_TCK, groupTicks, machineBusyTicks, mb, postgresProcesses, readMemory, readStat, resetPeak } from './procfs.js';

/** The processes a scenario is measured over; a child that is not running is simply absent. */
export interface Tracked {
  api?: number | undefined;
  /** One pid per worker process, in a fixed order (a restarted process takes its predecessor's place). */
  workers?: readonly number[] | undefined;
}

/**
 * api, workers: the service processes (workers: every worker process together). postgres: backends
 * of the bench's databases plus the server's helper processes (WAL writer, checkpointer…).
 * pg_other: every other PostgreSQL backend (other databases on a shared server) and backends that
 * exited. redis: the whole server. bench: this process (load generator, sandbox vendor).
 * machine: all busy CPU time of the machine.
 */
export type CpuName = 'api' | 'workers' | 'postgres' | 'redis' | 'bench' | 'pg_other' | 'machine';
export const CPU_NAMES: readonly CpuName[] = ['api', 'workers', 'postgres', 'redis', 'bench', 'pg_other', 'machine'];

export type CpuSeconds = Partial<Record<CpuName, number>>;

/** The databases whose backends count as the bench's own (set once the run has created them). */
const ownDatabases: string[] = [];
export function countDatabaseAsOwn(name: string): void {
  ownDatabases.push(name);
}

interface Snapshot {
  at: number;
  ticks: Partial<Record<'redis' | 'machine', number>>;
  pg: { byPid: Map<number, { ticks: number; kind: 'ours' | 'helper' | 'other' }>; total: number } | null;
  benchUs: number;
}

function snapshot(): Snapshot {
  const ticks: Snapshot['ticks'] = {};
  const redis = groupTicks('redis-server');
  if (redis) ticks.redis = redis.ticks;
  const machine = machineBusyTicks();
  if (machine !== null) ticks.machine = machine;
  const pgNow = postgresProcesses(ownDatabases);
  const pg = pgNow
    ? { byPid: new Map(pgNow.processes.map((p) => [p.pid, { ticks: p.ticks, kind: p.kind }])), total: pgNow.processes.reduce((a, p) => a + p.ticks, pgNow.reaped) }
    : null;
  const u = process.cpuUsage();
  return { at: performance.now(), ticks, pg, benchUs: u.user + u.system };
}

/** One worker process's own figures (a restarted one's include its predecessors'). */
export interface ProcessFigures {
  cpu_s?: number;
  peak_rss_mb?: number;
}

export interface Measured {
  seconds: number;
  cpu: CpuSeconds;
  peakRssMb: Partial<Record<'api' | 'workers', number>>;
  peakRssScope: 'scenario' | 'process lifetime';
  /** Each worker process's figures, in the order of Tracked.workers (cpu.workers is their sum, peakRssMb.workers their largest). */
  workerProcesses: ProcessFigures[];
}

type Service = 'api' | 'workers';
const SERVICES: readonly Service[] = ['api', 'workers'];

/** A service process the meter follows, and the ones it replaced (track). */
interface Followed {
  pid: number | undefined;
  /** Its ticks at start(); 0 for a process started since, whose whole life counts. */
  base: number | undefined;
  /** Its CPU and peak when last sampled, in case it dies before stop(). */
  last: { ticks: number; hwmKb: number } | undefined;
  /** What the processes it replaced had used when last sampled, and their largest peak. */
  retired: { ticks: number; hwmKb: number };
}

const pidsOf = (tracked: Tracked): Record<Service, ReadonlyArray<number | undefined>> => ({ api: [tracked.api], workers: tracked.workers ?? [] });

/**
 * CPU seconds each process spent between start() and stop(), plus the peak RSS of the service
 * processes over the same span (VmHWM reset at start, so the peak is this scenario's own).
 * A service process replaced mid-scenario (track) keeps counting: what the old one had used when
 * last sampled, plus the whole life of the new one.
 */
export class Meter {
  readonly #followed: Record<Service, Followed[]>;
  #start: Snapshot | undefined;
  #peakReset: boolean[] = [];

  constructor(tracked: Tracked) {
    const pids = pidsOf(tracked);
    const follow = (pid: number | undefined): Followed => ({ pid, base: undefined, last: undefined, retired: { ticks: 0, hwmKb: 0 } });
    this.#followed = { api: pids.api.map(follow), workers: pids.workers.map(follow) };
  }

  #all(): Followed[] {
    return SERVICES.flatMap((name) => this.#followed[name]);
  }

  start(): void {
    for (const f of this.#all()) if (f.pid !== undefined) this.#peakReset.push(resetPeak(f.pid));
    this.#start = snapshot();
    for (const f of this.#all()) {
      const stat = f.pid === undefined ? null : readStat(f.pid);
      if (stat) f.base = stat.self;
    }
    this.sample();
  }

  /** Remembers the service processes' current CPU and peak, in case they die before stop(). */
  sample(): void {
    for (const f of this.#all()) {
      const stat = f.pid === undefined ? null : readStat(f.pid);
      const mem = f.pid === undefined ? null : readMemory(f.pid);
      if (stat) f.last = { ticks: stat.self, hwmKb: mem?.hwmKb ?? 0 };
    }
  }

  /** Follows restarted service processes from now on (`tracked` lists the processes in the constructor's order). */
  track(tracked: Tracked): void {
    const pids = pidsOf(tracked);
    for (const name of SERVICES) {
      pids[name].forEach((pid, i) => {
        const f = this.#followed[name][i];
        if (!f || pid === undefined || pid === f.pid) return;
        if (f.last) {
          f.retired.ticks += f.last.ticks - (f.base ?? 0);
          f.retired.hwmKb = Math.max(f.retired.hwmKb, f.last.hwmKb);
        }
        f.pid = pid;
        f.base = 0;
        f.last = undefined;
      });
    }
  }

  stop(): Measured {
    const start = this.#start;
    if (!start) throw new Error('meter not started');
    const end = snapshot();
    const figures = (f: Followed): { ticks: number | undefined; hwmKb: number } => {
      const now = (f.pid === undefined ? null : readStat(f.pid))?.self ?? f.last?.ticks;
      const mem = f.pid === undefined ? null : readMemory(f.pid);
      return {
        ticks: now !== undefined && f.base !== undefined ? f.retired.ticks + now - f.base : undefined,
        hwmKb: Math.max(mem?.hwmKb ?? 0, f.last?.hwmKb ?? 0, f.retired.hwmKb),
      };
    };
    const each = { api: this.#followed.api.map(figures), workers: this.#followed.workers.map(figures) };
    const cpu: CpuSeconds = {};
    const peakRssMb: Partial<Record<Service, number>> = {};
    for (const name of SERVICES) {
      const ticks = each[name].flatMap((f) => (f.ticks === undefined ? [] : [f.ticks]));
      // CPU time adds up: with several worker processes, `workers` is what they cost together.
      if (ticks.length > 0) cpu[name] = ticks.reduce((a, b) => a + b, 0) / CLK_TCK;
      // Peaks do not: each process reaches its own at its own moment, so `workers` is the largest
      // single process's peak, which is what sizing one process (its memory limit) needs.
      const kb = Math.max(0, ...each[name].map((f) => f.hwmKb));
      if (kb > 0) peakRssMb[name] = Math.round(mb(kb) * 10) / 10;
    }
    for (const name of ['redis', 'machine'] as const) {
      const a = start.ticks[name];
      const b = end.ticks[name];
      if (a !== undefined && b !== undefined) cpu[name] = (b - a) / CLK_TCK;
    }
    if (start.pg && end.pg) {
      // Per process for the ones alive at the end; whatever else changed (exited backends, other
      // databases) is pg_other, so the three always add up to the server's total.
      let ours = 0;
      for (const [pid, p] of end.pg.byPid) {
        if (p.kind === 'other') continue;
        ours += p.ticks - (start.pg.byPid.get(pid)?.ticks ?? 0);
      }
      cpu.postgres = ours / CLK_TCK;
      cpu.pg_other = (end.pg.total - start.pg.total - ours) / CLK_TCK;
    }
    cpu.bench = (end.benchUs - start.benchUs) / 1e6;
    for (const k of Object.keys(cpu) as CpuName[]) cpu[k] = Math.round(cpu[k]! * 100) / 100;
    return {
      seconds: (end.at - start.at) / 1000,
      cpu,
      peakRssMb,
      peakRssScope: this.#peakReset.length > 0 && this.#peakReset.every(Boolean) ? 'scenario' : 'process lifetime',
      workerProcesses: each.workers.map((f) => ({
        ...(f.ticks === undefined ? {} : { cpu_s: Math.round((f.ticks / CLK_TCK) * 100) / 100 }),
        ...(f.hwmKb > 0 ? { peak_rss_mb: Math.round(mb(f.hwmKb) * 10) / 10 } : {}),
      })),
    };
  }
}
