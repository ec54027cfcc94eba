import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';

/**
 * Linux /proc readings: CPU time (utime + stime, in clock ticks) and resident memory of the
 * processes a scenario involves. Everything here returns null rather than throwing when a process
 * is gone or /proc is unreadable, so a measurement never breaks a run.
 */

export const CLK_TCK = (() => {
  try {
    const n = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    return Number.isFinite(n) && n > 0 ? n : 100;
  } catch {
    return 100;
  }
})();

export interface ProcStat {
  pid: number;
  comm: string;
  ppid: number;
  /** Own user + system time, in ticks. */
  self: number;
  /** Time of waited-for children, in ticks (the postmaster accumulates its exited backends here). */
  children: number;
}

export function readStat(pid: number): ProcStat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // comm is in parentheses and may itself contain spaces or parentheses: split after the last ')'.
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open === -1 || close === -1) return null;
  const rest = text.slice(close + 2).split(' ');
  // rest[0] is field 3 (state); utime is field 14 → rest[11].
  const field = (n: number) => Number(rest[n - 3]);
  return { pid, comm: text.slice(open + 1, close), ppid: field(4), self: field(14) + field(15), children: field(16) + field(17) };
}

export interface Memory {
  rssKb: number;
  /** Peak RSS since start or since the last resetPeak. */
  hwmKb: number;
}

export function readMemory(pid: number): Memory | null {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
    const m = { rssKb: kb('VmRSS'), hwmKb: kb('VmHWM') };
    return Number.isFinite(m.rssKb) ? m : null;
  } catch {
    return null;
  }
}

/** Resets VmHWM to the current RSS (Linux ≥ 4.0, own or root-owned processes); false when refused. */
export function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** Every live process whose comm is one of `names`. */
export function processesNamed(names: readonly string[]): ProcStat[] {
  const out: ProcStat[] = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return out;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readStat(Number(entry));
    if (stat && names.includes(stat.comm)) out.push(stat);
  }
  return out;
}

/**
 * CPU ticks of a server made of many processes (Redis, and PostgreSQL when nothing else shares it).
 * Live processes count their own time; a root of the tree (a process whose parent is not in the
 * group) also counts its reaped children, so children that exit between two readings still count.
 */
export function groupTicks(comm: string): { ticks: number; processes: number } | null {
  const procs = processesNamed([comm]);
  if (procs.length === 0) return null;
  const pids = new Set(procs.map((p) => p.pid));
  let ticks = 0;
  for (const p of procs) ticks += p.self + (pids.has(p.ppid) ? 0 : p.children);
  return { ticks, processes: procs.length };
}

export function readCmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
  } catch {
    return '';
  }
}

/**
 * PostgreSQL processes by whom they work for, read from their process titles
 * (`postgres: 15/main: <user> <database> <host>(<port>) <state>`, `… autovacuum worker <database>`):
 * `ours` are backends of the given databases, `helper` the server's own processes (WAL writer,
 * checkpointer, background writer…), `other` backends of other databases. The postmaster's reaped
 * children (backends that have exited) cannot be told apart and are reported as `reaped`.
 */
export interface PgProcess {
  pid: number;
  ticks: number;
  kind: 'ours' | 'helper' | 'other';
}

export function postgresProcesses(databases: readonly string[]): { processes: PgProcess[]; reaped: number } | null {
  const procs = processesNamed(['postgres']);
  if (procs.length === 0) return null;
  const pids = new Set(procs.map((p) => p.pid));
  let reaped = 0;
  const processes = procs.map((p): PgProcess => {
    if (!pids.has(p.ppid)) reaped += p.children;
    const title = readCmdline(p.pid);
    const words = new Set(title.split(/\s+/));
    const kind = databases.some((d) => words.has(d)) ? 'ours' : /\(\d+\)|\[local\]|autovacuum worker/.test(title) ? 'other' : 'helper';
    return { pid: p.pid, ticks: p.self, kind };
  });
  return { processes, reaped };
}

/** Busy ticks of the whole machine (every CPU, everything but idle and iowait). */
export function machineBusyTicks(): number | null {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
    const [, user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).map(Number);
    return user! + nice! + system! + irq! + softirq! + steal!;
  } catch {
    return null;
  }
}

export const mb = (kb: number): number => kb / 1024;
