/** Time as the service sees it: injectable so tests can move it without sleeping. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock tests can set and advance. */
export class FakeClock implements Clock {
  constructor(private current: Date = new Date()) {}
  now(): Date {
    return new Date(this.current.getTime());
  }
  set(date: Date): void {
    this.current = new Date(date.getTime());
  }
  advance(ms: number): void {
    this.current = new Date(this.current.getTime() + ms);
  }
}

const DAY_MS = 86_400_000;
/** The last day asked for: the date rules ask for "today" thousands of times a second, nearly always the same day. */
let lastDay = { start: NaN, text: '' };

/** The calendar date in UTC (YYYY-MM-DD): "today" for every date rule, whatever the server's zone. */
export function utcDate(d: Date): string {
  const ms = d.getTime();
  if (ms >= lastDay.start && ms < lastDay.start + DAY_MS) return lastDay.text;
  const text = d.toISOString().slice(0, 10);
  // Only days with a four-digit year have a UTC midnight that Date.UTC gives directly; others are not remembered.
  if (Number.isFinite(ms) && /^\d{4}-/.test(text)) lastDay = { start: ms - (((ms % DAY_MS) + DAY_MS) % DAY_MS), text };
  return text;
}

/** The interface's datetime form, `YYYY-MM-DDTHH:MM:SSZ` (UTC, whole seconds). */
export const formatDatetime = (d: Date): string => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

/** Like formatDatetime, but keeps milliseconds when there are any (so a given instant round-trips). */
export const formatInstant = (d: Date): string => (d.getUTCMilliseconds() === 0 ? formatDatetime(d) : d.toISOString());

/** A calendar date (YYYY-MM-DD) moved by whole days, in UTC. */
export function addDaysUtc(date: string, days: number): string {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  const dt = new Date(0);
  dt.setUTCFullYear(y, m - 1, d + days); // unlike Date.UTC, keeps years below 100 as they are
  return dt.toISOString().slice(0, 10);
}
