/** Nearest-rank percentile (p in 0..100) of unsorted values; NaN when there are none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export interface Distribution {
  n: number;
  p50: number;
  p99: number;
  max: number;
}

export function distribution(values: readonly number[]): Distribution {
  return { n: values.length, p50: percentile(values, 50), p99: percentile(values, 99), max: values.length ? Math.max(...values) : NaN };
}

/** Rounds for the JSON file: figures, not float noise. */
export const round = (n: number, digits = 2): number => (Number.isFinite(n) ? Number(n.toFixed(digits)) : n);

/** A fixed-point figure for the table, or 'n/a'. */
export function fmt(n: number | undefined | null, digits = 1): string {
  return n === undefined || n === null || !Number.isFinite(n) ? 'n/a' : n.toFixed(digits);
}

/** Milliseconds with a precision that suits their size. */
export function ms(n: number | undefined): string {
  if (n === undefined || !Number.isFinite(n)) return 'n/a';
  if (Number.isInteger(n)) return String(n);
  return n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2);
}

/** A left-aligned first column and right-aligned others. */
export function table(rows: ReadonlyArray<readonly string[]>, indent = '  '): string {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows.map((row) => indent + row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ').trimEnd()).join('\n');
}
