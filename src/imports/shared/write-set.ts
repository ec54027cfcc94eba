import DataLoader from 'dataloader';
import type { Executor } from '../../db/database.js';

/**
 * The extras writes of a set of accounts in one transaction, with one statement per kind of read
 * and one per table for the whole set, however many accounts it holds (issue 12).
 *
 * Each account's writes are the services' own checked writes (LockedWrite): the same code runs for
 * a REST request (a set of one) and for a set of the pipeline. Every account's writes run at once;
 * each read they make through `read` joins the reads of the same kind the other accounts make at
 * that moment, and goes to PostgreSQL as one statement. The rows they `insert` are held until every
 * account of the set has been checked, and only the rows of accounts whose writes all succeeded are
 * written, table by table. So an account refused by its own data keeps none of its rows, and its
 * neighbours lose nothing.
 *
 * Reads see the database as it was before the set's inserts: an account must appear at most once in
 * a set (a caller with the same account twice runs it in a second set, after the first has flushed).
 */

/** A read several accounts make, answered for all of them by one statement. */
export interface SetRead<K, R> {
  /** Each key's answer, in the order of `keys`. */
  load(trx: Executor, keys: readonly K[]): Promise<R[]>;
}

/** A table's rows from every account of the set, written by one statement (or one per chunk). */
export interface SetInsert<R> {
  insert(trx: Executor, rows: R[]): Promise<void>;
}

/** What an account's writes may do: read through the set's shared reads, and hold rows for the set's inserts. */
export interface Writes {
  /** The set's transaction, for what cannot be shared. */
  readonly trx: Executor;
  read<K, R>(what: SetRead<K, R>, key: K): Promise<R>;
  insert<R>(into: SetInsert<R>, rows: readonly R[]): void;
}

/** One account's write in a set: what it may do, and the account (as the caller locked it). */
export type SetWrite<T, A> = (w: Writes, account: A) => Promise<T>;

export type WriteOutcome<T> = { ok: true; results: T[] } | { ok: false; error: unknown };

export interface SetEntry<T, A extends { id: string }> {
  account: A;
  /** Run in order; all or nothing for the account. */
  writes: ReadonlyArray<SetWrite<T, A>>;
}

/**
 * Runs every entry's writes (each entry's in order, the entries side by side), then writes the held
 * rows of the entries that succeeded. An entry's own failure is its outcome; a failed insert throws
 * (the transaction is then the caller's to roll back). Accounts must be distinct (see above).
 */
export async function runWriteSet<T, A extends { id: string }>(trx: Executor, entries: ReadonlyArray<SetEntry<T, A>>): Promise<Array<WriteOutcome<T>>> {
  const seen = new Set<string>();
  for (const e of entries) {
    if (seen.has(e.account.id)) throw new Error(`runWriteSet: account ${e.account.id} appears twice in one set`);
    seen.add(e.account.id);
  }
  // A loader per kind of read, for this set only: nothing outlives the transaction, nothing is cached.
  const loaders = new Map<SetRead<unknown, unknown>, DataLoader<unknown, unknown>>();
  const loaderFor = <K, R>(what: SetRead<K, R>): DataLoader<K, R> => {
    let loader = loaders.get(what as SetRead<unknown, unknown>) as DataLoader<K, R> | undefined;
    if (!loader) {
      loader = new DataLoader<K, R>((keys) => what.load(trx, keys), { cache: false });
      loaders.set(what as SetRead<unknown, unknown>, loader as DataLoader<unknown, unknown>);
    }
    return loader;
  };

  const held = entries.map(() => new Map<SetInsert<unknown>, unknown[]>());
  // Tables are written in the order an account first named them (notes before transactions, …).
  const order: Array<SetInsert<unknown>> = [];
  const outcomes = await Promise.all(
    entries.map(async (entry, k): Promise<WriteOutcome<T>> => {
      const mine = held[k]!;
      const w: Writes = {
        trx,
        read: (what, key) => loaderFor(what).load(key),
        insert: (into, rows) => {
          if (rows.length === 0) return;
          const table = into as SetInsert<unknown>;
          if (!order.includes(table)) order.push(table);
          mine.set(table, [...(mine.get(table) ?? []), ...rows]);
        },
      };
      try {
        const results: T[] = [];
        for (const write of entry.writes) results.push(await write(w, entry.account));
        return { ok: true, results };
      } catch (error) {
        mine.clear();
        return { ok: false, error };
      }
    }),
  );
  for (const table of order) {
    const rows = held.flatMap((m) => m.get(table) ?? []);
    if (rows.length > 0) await table.insert(trx, rows);
  }
  return outcomes;
}

/** One account's writes as a set of one (the REST door): its own failure is thrown. */
export async function runWrites<T, A extends { id: string }>(trx: Executor, account: A, writes: ReadonlyArray<SetWrite<T, A>>): Promise<T[]> {
  const [outcome] = await runWriteSet(trx, [{ account, writes }]);
  if (!outcome!.ok) throw outcome!.error;
  return outcome!.results;
}

/**
 * Splits items into rounds in which each account appears at most once, keeping each account's
 * items in their order: the first of every account in round 0, the second in round 1, and so on.
 */
export function roundsByAccount<I>(items: readonly I[], accountOf: (item: I) => string): I[][] {
  const rounds: I[][] = [];
  const count = new Map<string, number>();
  for (const item of items) {
    const key = accountOf(item);
    const n = count.get(key) ?? 0;
    count.set(key, n + 1);
    (rounds[n] ??= []).push(item);
  }
  return rounds;
}

/** Rows by a key, each group in the rows' order (Map.groupBy needs Node 21). */
export function groupBy<R, K>(rows: readonly R[], keyOf: (row: R) => K): Map<K, R[]> {
  const out = new Map<K, R[]>();
  for (const row of rows) {
    const key = keyOf(row);
    const group = out.get(key);
    if (group) group.push(row);
    else out.set(key, [row]);
  }
  return out;
}
