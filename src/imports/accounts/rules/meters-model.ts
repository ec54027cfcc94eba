import { addDaysUtc } from '../../../clock.js';
import type { CrossFieldContext } from '../../shared/fields.js';
import { isRecord } from '../../shared/fields.js';

// How the meter rules read a (possibly partly refused) payload. Every field is read through a Reader,
// which answers UNKNOWN for a field that did not parse (or that a value rule refused), so a
// rule never draws a conclusion from a value it cannot trust: it skips the decision instead.

export type Path = PropertyKey[];

/** An object of the payload and its path relative to the value the rule checks. */
export interface Node {
  readonly v: Record<string, unknown>;
  readonly path: Path;
}

export const UNKNOWN: unique symbol = Symbol('unknown');
export type Known<T> = T | typeof UNKNOWN;

export class Reader {
  /**
   * Nothing in the checked value failed to parse (the common case: a valid account), so every field
   * is trusted without asking about its path. Other rules' findings never make a field unparsed.
   */
  readonly clean: boolean;

  constructor(private readonly ctx: CrossFieldContext) {
    this.clean = ctx.parsed([]);
  }

  /** The checked value itself, when it is an object. */
  root(value: unknown): Node | undefined {
    return isRecord(value) ? { v: value, path: [] } : undefined;
  }

  /** A field's parsed value (undefined when absent or null), or UNKNOWN when it did not parse. */
  raw(n: Node, key: string): unknown {
    return this.clean || this.ctx.parsed([...n.path, key]) ? (n.v[key] ?? undefined) : UNKNOWN;
  }

  text(n: Node, key: string): Known<string | undefined> {
    const x = this.raw(n, key);
    return x === UNKNOWN ? UNKNOWN : typeof x === 'string' ? x : undefined;
  }

  /** A string field that is given and not blank; an empty string counts as not given. */
  filled(n: Node, key: string): Known<string | undefined> {
    const s = this.text(n, key);
    return s === UNKNOWN || s === undefined || s.trim() !== '' ? s : undefined;
  }

  flag(n: Node, key: string): Known<boolean | undefined> {
    const x = this.raw(n, key);
    return x === UNKNOWN ? UNKNOWN : typeof x === 'boolean' ? x : undefined;
  }

  int(n: Node, key: string): Known<number | undefined> {
    const x = this.raw(n, key);
    return x === UNKNOWN ? UNKNOWN : typeof x === 'number' ? x : undefined;
  }

  /** Whether a field is given (not absent, not null); UNKNOWN when it did not parse. */
  given(n: Node, key: string): Known<boolean> {
    const x = this.raw(n, key);
    return x === UNKNOWN ? UNKNOWN : x !== undefined;
  }

  /** The objects of a list field, each with its path (entries that are not objects are left out). */
  list(n: Node, key: string): Node[] {
    const xs = n.v[key];
    if (!Array.isArray(xs)) return [];
    const out: Node[] = [];
    xs.forEach((x: unknown, i) => {
      if (isRecord(x)) out.push({ v: x, path: [...n.path, key, i] });
    });
    return out;
  }

  /** How many entries a list field has (0 when absent), or UNKNOWN when it is not a list. */
  count(n: Node, key: string): Known<number> {
    const xs = n.v[key] ?? undefined;
    if (xs === undefined) return 0;
    return Array.isArray(xs) ? xs.length : UNKNOWN;
  }

  object(n: Node, key: string): Node | undefined {
    const x = n.v[key];
    return isRecord(x) ? { v: x, path: [...n.path, key] } : undefined;
  }

  report(code: string, message: string, path: Path): void {
    this.ctx.addIssue(code, message, path);
  }
}

/** The date a day after (or with a negative count, before) a date. */
export const plusDays = addDaysUtc;

/** An active meter is one not removed. */
export function isActive(r: Reader, meter: Node): Known<boolean> {
  const removed = r.text(meter, 'removed_on');
  return removed === UNKNOWN ? UNKNOWN : removed === undefined;
}

/**
 * Half-hourly settled: a half-hourly measurement class (C to G), or profile class 0. Without
 * either, a meter point is taken as non-half-hourly.
 */
export function isHalfHourly(r: Reader, mp: Node): Known<boolean> {
  const mc = r.text(mp, 'measurement_class');
  const pc = r.int(mp, 'profile_class');
  if (mc === UNKNOWN || pc === UNKNOWN) return UNKNOWN;
  return mc !== undefined ? 'CDEFG'.includes(mc) : pc === 0;
}

/** A meter point of the account, with the supply address it belongs to. */
export interface MeterPointNode extends Node {
  readonly gas: boolean;
  readonly address: number;
}

/** Every meter point of the given supply addresses whose supply type is known. */
export function meterPointsOf(r: Reader, addresses: readonly Node[]): MeterPointNode[] {
  const out: MeterPointNode[] = [];
  addresses.forEach((address, i) => {
    for (const mp of r.list(address, 'meter_points')) {
      const type = r.text(mp, 'supply_type');
      if (type === 'GAS' || type === 'ELECTRICITY') out.push({ ...mp, gas: type === 'GAS', address: i });
    }
  });
  return out;
}

/**
 * The account's supply addresses and meter points. Most meter rules start here: for a clean account
 * (nothing failed to parse, so the answer depends on the value alone) it is worked out once per
 * parse and shared by every rule, instead of once per rule.
 */
export function accountMeterPoints(r: Reader, account: Node): { addresses: Node[]; meterPoints: MeterPointNode[] } {
  const shareable = r.clean && account.path.length === 0;
  const known = shareable ? meterPointsCache.get(account.v) : undefined;
  if (known) return known;
  const addresses = r.list(account, 'supply_addresses');
  const found = { addresses, meterPoints: meterPointsOf(r, addresses) };
  if (shareable) meterPointsCache.set(account.v, found);
  return found;
}

/** Keyed by the parsed account object: each parse makes a new one, so an entry never outlives its parse's rules. */
const meterPointsCache = new WeakMap<object, { addresses: Node[]; meterPoints: MeterPointNode[] }>();

/**
 * The facts most meter rules share, read relative to `today`: which meter points are billable (no
 * supply end, or one after today), which meters are active (not removed), which electricity
 * registers are settlement registers (all but those marked is_settlement false), and up to which
 * date each meter point, meter and register has been billed.
 */
export class Supply {
  constructor(
    readonly r: Reader,
    readonly today: string,
    /** The account-level last billed to date; undefined when the rule sees no account. */
    private readonly accountBilledTo: Known<string | undefined> = undefined,
  ) {}

  billable(mp: Node): Known<boolean> {
    const end = this.r.text(mp, 'supply_end_date');
    return end === UNKNOWN ? UNKNOWN : end === undefined || end > this.today;
  }

  active(meter: Node): Known<boolean> {
    return isActive(this.r, meter);
  }

  settlementRegisters(meter: Node): Known<Node[]> {
    const out: Node[] = [];
    for (const register of this.r.list(meter, 'registers')) {
      const flag = this.r.flag(register, 'is_settlement');
      if (flag === UNKNOWN) return UNKNOWN;
      if (flag !== false) out.push(register);
    }
    return out;
  }

  /** The meter point's own last billed to date, else the account's. */
  meterPointBilledTo(mp: Node): Known<string | undefined> {
    const own = this.r.text(mp, 'last_billed_to_date');
    return own === undefined ? this.accountBilledTo : own;
  }

  /** A gas meter's or electricity register's own date; else its meter point's; else the account's. */
  billedTo(mp: Node, meterOrRegister: Node): Known<string | undefined> {
    const own = this.r.text(meterOrRegister, 'last_billed_to_date');
    return own === undefined ? this.meterPointBilledTo(mp) : own;
  }

  /**
   * Up to when a meter has been billed: a gas meter's date, or the earliest of an electricity
   * meter's settlement registers' dates (its meter point's when it has none).
   */
  meterBilledTo(mp: MeterPointNode, meter: Node): Known<string | undefined> {
    if (mp.gas) return this.billedTo(mp, meter);
    const registers = this.settlementRegisters(meter);
    if (registers === UNKNOWN) return UNKNOWN;
    if (registers.length === 0) return this.meterPointBilledTo(mp);
    let earliest: string | undefined;
    for (const register of registers) {
      const d = this.billedTo(mp, register);
      if (d === UNKNOWN) return UNKNOWN;
      if (d === undefined) return undefined;
      if (earliest === undefined || d < earliest) earliest = d;
    }
    return earliest;
  }

  /** A removed meter billed up to (or past) the day it was removed: nothing of it is left to bill. */
  fullyBilled(mp: MeterPointNode, meter: Node): Known<boolean> {
    const removed = this.r.text(meter, 'removed_on');
    if (removed === UNKNOWN) return UNKNOWN;
    if (removed === undefined) return false;
    const billed = this.meterBilledTo(mp, meter);
    if (billed === UNKNOWN) return UNKNOWN;
    return billed !== undefined && removed <= billed;
  }

  /** Whether the meter point has a meter that was removed (exchanged). */
  hasExchangedMeter(mp: Node): Known<boolean> {
    let any = false;
    for (const meter of this.r.list(mp, 'meters')) {
      const a = this.active(meter);
      if (a === UNKNOWN) return UNKNOWN;
      if (!a) any = true;
    }
    return any;
  }
}

/** The dates of a meter's transfer and historical readings. */
export function meterReadingDates(r: Reader, meter: Node): Known<Set<string>> {
  const dates = new Set<string>();
  for (const list of ['transfer_readings', 'reading_history']) {
    for (const reading of r.list(meter, list)) {
      const d = r.text(reading, 'reading_date');
      if (d === UNKNOWN) return UNKNOWN;
      if (d !== undefined) dates.add(d);
    }
  }
  return dates;
}

/** The dates of every reading of a meter point's meters. */
export function readingDates(r: Reader, mp: Node): Known<Set<string>> {
  const dates = new Set<string>();
  for (const meter of r.list(mp, 'meters')) {
    const own = meterReadingDates(r, meter);
    if (own === UNKNOWN) return UNKNOWN;
    for (const d of own) dates.add(d);
  }
  return dates;
}
