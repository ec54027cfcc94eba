import type { Executor } from '../../db/database.js';
import { activeReferenceValues, referenceVersion } from './reference.repository.js';
import { REFERENCE_SEED, type ReferenceKind } from './reference.seed.js';

/**
 * The deployment's reference lists as validation reads them: synchronously, from memory. `refresh()`
 * is awaited before a request is checked; it asks the database for the lists' version at most once
 * per `maxAgeMs` and reloads them only when an operator changed something, so a change reaches every
 * server within that time and the common case costs one tiny query a second per process.
 */
export interface ReferenceData {
  values(kind: ReferenceKind | string): ReadonlySet<string>;
  refresh(): Promise<void>;
}

const EMPTY: ReadonlySet<string> = new Set();

function byKind(rows: ReadonlyArray<{ kind: string; value: string }>): Map<string, Set<string>> {
  const map = new Map<string, Set<string>>();
  for (const r of rows) {
    let set = map.get(r.kind);
    if (!set) map.set(r.kind, (set = new Set()));
    set.add(r.value);
  }
  return map;
}

export function createReferenceData(db: Executor, opts: { maxAgeMs?: number; now?: () => number } = {}): ReferenceData {
  const maxAgeMs = opts.maxAgeMs ?? 1000;
  const now = opts.now ?? (() => Date.now());
  let lists: Map<string, Set<string>> | undefined;
  let version: string | undefined;
  let checkedAt = -Infinity;
  let inFlight: Promise<void> | undefined;

  async function reload(): Promise<void> {
    const current = await referenceVersion(db);
    if (current !== version || !lists) {
      lists = byKind(await activeReferenceValues(db));
      version = current;
    }
    checkedAt = now();
  }

  return {
    values(kind) {
      // Before the first refresh nothing is known: every value is refused rather than every one let through.
      return lists?.get(kind) ?? EMPTY;
    },
    async refresh() {
      if (lists && now() - checkedAt < maxAgeMs) return;
      inFlight ??= reload().finally(() => {
        inFlight = undefined;
      });
      await inFlight;
    },
  };
}

/** The seeded lists, fixed: for checks that run without a database (tests of the schemas, tools). */
export function seededReferenceData(): ReferenceData {
  const lists = byKind(REFERENCE_SEED.filter((s) => s.enabled));
  return { values: (kind) => lists.get(kind) ?? EMPTY, refresh: async () => undefined };
}
