/** PostgreSQL accepts at most 65,535 bind parameters per statement; stay well under it. */
const MAX_PARAMS = 60_000;

/**
 * Splits rows for multi-row INSERTs so no statement exceeds the bind-parameter limit, whatever the
 * row count: a valid 5,000-transaction request must not fail on a protocol limit.
 */
export function chunkRows<T extends object>(rows: readonly T[]): T[][] {
  if (rows.length === 0) return [];
  const columns = Math.max(1, Object.keys(rows[0]!).length);
  const size = Math.max(1, Math.floor(MAX_PARAMS / columns));
  const chunks: T[][] = [];
  for (let i = 0; i < rows.length; i += size) chunks.push(rows.slice(i, i + size));
  return chunks;
}
