import DataLoader from 'dataloader';

/**
 * Lookups by key that concurrent requests share: the keys asked for while the event loop handles
 * one round of ready sockets go to PostgreSQL as one query (`WHERE key IN (…)`), and each caller
 * gets its own answer. Nothing is cached: every request still reads the current row, so a
 * revocation or a new claim is seen by the very next request, exactly as with a query per request.
 * Keys missing from the answered map resolve to undefined.
 */
export function batchedLookup<K extends string, V>(load: (keys: readonly K[]) => Promise<Map<K, V>>): (key: K) => Promise<V | undefined> {
  const loader = new DataLoader<K, V | undefined>(
    async (keys) => {
      const found = await load(keys);
      return keys.map((k) => found.get(k));
    },
    // setImmediate: after the poll phase, so the requests whose bytes arrived together share a query.
    { cache: false, batchScheduleFn: (run) => setImmediate(run), maxBatchSize: 500 },
  );
  return (key) => loader.load(key);
}
