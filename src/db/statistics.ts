import { sql, type Kysely } from 'kysely';
import type { Database } from './database.js';
import type { Logger } from '../log.js';

/**
 * PostgreSQL plans with the statistics the last ANALYZE left. A cohort loads tens of thousands of
 * rows in minutes, autovacuum's autoanalyze waits for 10% growth and a one-minute nap (and is off on
 * some servers and tuned down on many bulk-load databases), so the service keeps its own tables'
 * statistics current itself: whatever else runs, a table that grew is analyzed soon after.
 */
export interface AnalyzeOptions {
  /** A table is analyzed once more rows than this changed since its last ANALYZE… */
  minChangedRows: number;
  /** …plus this share of the rows it had then. */
  changedShare: number;
}

export const DEFAULT_ANALYZE: AnalyzeOptions = { minChangedRows: 1000, changedShare: 0.2 };

/** Any fixed number: every process of a deployment on the same database takes the same lock. */
const ANALYZE_LOCK = 0x64_69_61_6e; // "dian"

export type AnalyzeOutcome = { ran: false; reason: 'busy' } | { ran: true; tables: Array<{ table: string; changed: number; ms: number }> };

/**
 * ANALYZEs each of the service's tables (the current schema's) whose changed rows since its last
 * ANALYZE, manual or automatic, passed the threshold. One process of a deployment at a time (a
 * session advisory lock on one connection; the others answer busy), one table at a time, each in
 * its own statement, so no lock is held across tables. Costs one catalog query when nothing grew.
 */
export async function analyzeGrownTables(db: Kysely<Database>, opts: AnalyzeOptions = DEFAULT_ANALYZE): Promise<AnalyzeOutcome> {
  return db.connection().execute(async (conn) => {
    const { rows: locked } = await sql<{ ok: boolean }>`SELECT pg_try_advisory_lock(${ANALYZE_LOCK}) AS ok`.execute(conn);
    if (!locked[0]?.ok) return { ran: false, reason: 'busy' } as const;
    try {
      // reltuples is -1 (PostgreSQL 14+) or 0 for a table never analyzed.
      const { rows } = await sql<{ table: string; changed: string }>`
        SELECT s.relname AS table, s.n_mod_since_analyze AS changed
          FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
         WHERE s.schemaname = current_schema()
           AND s.n_mod_since_analyze > ${opts.minChangedRows} + ${opts.changedShare} * GREATEST(c.reltuples, 0)
         ORDER BY s.relname`.execute(conn);
      const tables: Array<{ table: string; changed: number; ms: number }> = [];
      for (const r of rows) {
        const t = performance.now();
        await sql`ANALYZE ${sql.table(r.table)}`.execute(conn);
        tables.push({ table: r.table, changed: Number(r.changed), ms: Math.round(performance.now() - t) });
      }
      return { ran: true, tables } as const;
    } finally {
      await sql`SELECT pg_advisory_unlock(${ANALYZE_LOCK})`.execute(conn);
    }
  });
}

export interface StatisticsKeeper {
  /** Stops the timer and waits for a check in progress. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Runs analyzeGrownTables every `intervalMs` (0: never) in this process. A failed check (the
 * database restarting, say) is logged and tried again at the next tick; it never throws.
 */
export function startStatisticsKeeper(db: Kysely<Database>, opts: { intervalMs: number; log: Logger; analyze?: AnalyzeOptions }): StatisticsKeeper {
  if (opts.intervalMs <= 0) return { stop: async () => undefined };
  let running: Promise<void> | undefined;
  let stopped = false;
  const tick = () => {
    if (running || stopped) return;
    running = analyzeGrownTables(db, opts.analyze)
      .then((outcome) => {
        if (outcome.ran && outcome.tables.length > 0) opts.log.info({ tables: outcome.tables }, 'analyzed tables that grew');
      })
      .catch((err: unknown) => opts.log.warn({ err }, 'could not check or refresh table statistics; trying again later'))
      .finally(() => (running = undefined));
  };
  const timer = setInterval(tick, opts.intervalMs);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
