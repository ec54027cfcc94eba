import { Decimal } from 'decimal.js';
import type { CrossFieldContext } from '../../shared/fields.js';
import { isRecord } from '../../shared/fields.js';

// Reading an object inside a cross-field rule: the rule runs even when parts of the object failed,
// so a value is used only when its own path parsed. `absent` looks at the raw input instead: a
// field that was sent but failed is not "missing" (it already has its own problem).

export interface Fields {
  /** The record itself, when the value is one. */
  readonly record: Record<string, unknown> | undefined;
  /** The parsed value at `key`; undefined when absent, null or failed. */
  get(key: string): unknown;
  /** The parsed string at `key` (dates, decimals, choices and text all parse to strings). */
  str(key: string): string | undefined;
  /** The parsed integer at `key`. */
  int(key: string): number | undefined;
  /** The parsed boolean at `key`. */
  bool(key: string): boolean | undefined;
  /** True when `key` was not sent, or sent as null. */
  absent(key: string): boolean;
  /** True when `key` is absent, or a parsed value that is null (nullable fields). */
  parsedOrAbsent(key: string): boolean;
  /** The path of `key` relative to the checked value. */
  path(...keys: PropertyKey[]): PropertyKey[];
}

export function fieldsOf(value: unknown, ctx: CrossFieldContext, prefix: readonly PropertyKey[] = []): Fields {
  const record = isRecord(value) ? value : undefined;
  const get = (key: string): unknown => {
    if (!record || !ctx.parsed([...prefix, key])) return undefined;
    const v = record[key];
    return v === null ? undefined : v;
  };
  const absent = (key: string) => !record || record[key] === undefined || record[key] === null;
  return {
    record,
    get,
    str: (key) => {
      const v = get(key);
      return typeof v === 'string' ? v : undefined;
    },
    int: (key) => {
      const v = get(key);
      return typeof v === 'number' && Number.isInteger(v) ? v : undefined;
    },
    bool: (key) => {
      const v = get(key);
      return typeof v === 'boolean' ? v : undefined;
    },
    absent,
    parsedOrAbsent: (key) => absent(key) || ctx.parsed([...prefix, key]),
    path: (...keys) => [...prefix, ...keys],
  };
}

/** The entries of a list field of `value` (an empty list when it is not a list). */
export function listOf(value: unknown, key: string): unknown[] {
  if (!isRecord(value)) return [];
  const list = value[key];
  return Array.isArray(list) ? (list as unknown[]) : [];
}

/** True when a field was sent with something in it: not absent, not null, not an empty list or text. */
export function provided(value: unknown, key: string): boolean {
  if (!isRecord(value)) return false;
  const v = value[key];
  if (v === undefined || v === null) return false;
  if (Array.isArray(v) || typeof v === 'string') return v.length > 0;
  return true;
}

/** A decimal string or integer as a Decimal; money is never handled as a float. */
export function dec(v: string | number): Decimal {
  return new Decimal(v);
}

/** The calendar day after a 'YYYY-MM-DD' date. */
export function dayAfter(date: string): string {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + 1);
  return d.toISOString().slice(0, 10);
}
