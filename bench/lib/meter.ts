import { CLK_TCK, groupTicks, machineBusyTicks, mb, postgresProcesses, readMemory, readStat, resetPeak } from './procfs.js';

/** The processes a scenario is measured over; a child that is not running is simply absent. */
export interface Tracked {
  api?: number | undefined;
  workers?: number | undefined;
}

/**
 * api, workers: the service processes. postgres: backends of the bench's databases plus the
 * server's helper processes (WAL writer, checkpointer…). pg_other: every other PostgreSQL backend
 * (other databases on a shared server) and backends that exited. redis: the whole server.
 * bench: this process (load generator, sandbox vendor). machine: all busy CPU time of the machine.
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
  ticks: Partial<Record<'api' | 'workers' | 'redis' | 'machine', number>>;
  pg: { byPid: Map<number, { ticks: number; kind: 'ours' | 'helper' | 'other' }>; total: number } | null;
  benchUs: number;
}

function snapshot(tracked: Tracked): Snapshot {
  const ticks: Snapshot['ticks'] = {};
  for (const name of ['api', 'workers'] as const) {
    const pid = tracked[name];
    const stat = pid === undefined ? null : readStat(pid);
    if (stat) ticks[name] = stat.self;
  }
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

export interface Measured {
  seconds: number;
  cpu: CpuSeconds;
  peakRssMb: Partial<Record<'api' | 'workers', number>>;
  peakRssScope: 'scenario' | 'process lifetime';
}

type Service = 'api' | 'workers';
const SERVICES: readonly Service[] = ['api', 'workers'];

/**
 * CPU seconds each process spent between start() and stop(), plus the peak RSS of the service
 * processes over the same span (VmHWM reset at start, so the peak is this scenario's own).
 * A service process replaced mid-scenario (track) keeps counting: what the old one had used when
 * last sampled, plus the whole life of the new one.
 */
export class Meter {
  readonly #tracked: Tracked;
  #start: Snapshot | undefined;
  #peakReset: boolean[] = [];
  readonly #retired: Record<Service, { ticks: number; hwmKb: number }> = { api: { ticks: 0, hwmKb: 0 }, workers: { ticks: 0, hwmKb: 0 } };
  readonly #base: Partial<Record<Service, number>> = {};
  readonly #last: Partial<Record<Service, { ticks: number; hwmKb: number }>> = {};

  constructor(tracked: Tracked) {
    this.#tracked = { ...tracked };
  }

  start(): void {
    for (const name of SERVICES) {
      const pid = this.#tracked[name];
      if (pid !== undefined) this.#peakReset.push(resetPeak(pid));
    }
    this.#start = snapshot(this.#tracked);
    for (const name of SERVICES) if (this.#start.ticks[name] !== undefined) this.#base[name] = this.#start.ticks[name];
    this.sample();
  }

  /** Remembers the service processes' current CPU and peak, in case they die before stop(). */
  sample(): void {
    for (const name of SERVICES) {
      const pid = this.#tracked[name];
      const stat = pid === undefined ? null : readStat(pid);
      const mem = pid === undefined ? null : readMemory(pid);
      if (stat) this.#last[name] = { ticks: stat.self, hwmKb: mem?.hwmKb ?? 0 };
    }
  }

  /** Follows a restarted service process from now on. */
  track(tracked: Tracked): void {
    for (const name of SERVICES) {
      const pid = tracked[name];
      if (pid === undefined || pid === this.#tracked[name]) continue;
      const last = this.#last[name];
      if (last) {
        this.#retired[name].ticks += last.ticks - (this.#base[name] ?? 0);
        this.#retired[name].hwmKb = Math.max(this.#retired[name].hwmKb, last.hwmKb);
      }
      this.#tracked[name] = pid;
      this.#base[name] = 0;
      delete this.#last[name];
    }
  }

  stop(): Measured {
    const start = this.#start;
    if (!start) throw new Error('meter not started');
    const end = snapshot(this.#tracked);
    const cpu: CpuSeconds = {};
    for (const name of SERVICES) {
      const now = end.ticks[name] ?? this.#last[name]?.ticks;
      const base = this.#base[name];
      if (now !== undefined && base !== undefined) cpu[name] = (this.#retired[name].ticks + now - base) / CLK_TCK;
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
    const peakRssMb: Partial<Record<Service, number>> = {};
    for (const name of SERVICES) {
      const pid = this.#tracked[name];
      const mem = pid === undefined ? null : readMemory(pid);
      const kb = Math.max(mem?.hwmKb ?? 0, this.#last[name]?.hwmKb ?? 0, this.#retired[name].hwmKb);
      if (kb > 0) peakRssMb[name] = Math.round(mb(kb) * 10) / 10;
    }
    for (const k of Object.keys(cpu) as CpuName[]) cpu[k] = Math.round(cpu[k]! * 100) / 100;
    return {
      seconds: (end.at - start.at) / 1000,
      cpu,
      peakRssMb,
      peakRssScope: this.#peakReset.length > 0 && this.#peakReset.every(Boolean) ? 'scenario' : 'process lifetime',
    };
  }
}
