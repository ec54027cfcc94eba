import { Decimal } from 'decimal.js';
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { parsePhoneNumberFromString as parseWithMobileMetadata } from 'libphonenumber-js/mobile';
import { isValid as isValidPostcode, toNormalised as normalisePostcode } from 'postcode';
import { z } from 'zod';
import { addCodedIssue } from './validation.js';

// Every field below starts from z.string() (or number/string) so that a missing, null or
// wrongly-typed value gets the mapper's `required` / `null` / `invalid_type`; only a value of
// the right type reaches the coded check, which is why each check reports exactly one item.

/** Echoes input in a message without letting a huge value bloat the error envelope. */
export function shown(v: unknown): string {
  const s = typeof v === 'string' ? v : (JSON.stringify(v) ?? String(v));
  return JSON.stringify(s.length > 64 ? `${s.slice(0, 61)}...` : s);
}

/**
 * A string that must pass `ok`, else one issue with `code`. Written as a transform rather than a
 * refinement because a failed transform aborts the field: checks chained after it (`date_in_future`
 * after `invalid_date`) then do not run on a value already known to be bad.
 */
function checkedString(code: string, message: (s: string) => string, ok: (s: string) => boolean) {
  return z.string().transform((s, ctx) => {
    if (ok(s)) return s;
    addCodedIssue(ctx, code, message(s));
    return z.NEVER;
  });
}

/* ------------------------------------------------------------------------------------------ */
/* Dates                                                                                       */
/* ------------------------------------------------------------------------------------------ */

const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;

function isLeapYear(y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}

function isRealDate(y: number, m: number, d: number): boolean {
  if (y < 1 || m < 1 || m > 12 || d < 1) return false;
  const days = [31, isLeapYear(y) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1] ?? 0;
  return d <= days;
}

/** True for `YYYY-MM-DD` naming a real Gregorian calendar date (year 0001-9999). */
export function isCalendarDate(s: string): boolean {
  const m = DATE_RE.exec(s);
  return m !== null && isRealDate(Number(m[1]), Number(m[2]), Number(m[3]));
}

/** A calendar date `YYYY-MM-DD`; 2026-02-30 is `invalid_date`. Output is the input string. */
export const dateString = checkedString('invalid_date', (s) => `${shown(s)} is not a valid date in the format YYYY-MM-DD.`, isCalendarDate);

/**
 * A date on or before today. `today` returns the UTC calendar date (`YYYY-MM-DD`); it is a function
 * because the service's clock is injectable and "today" must be read at parse time, not build time.
 * Same-format ISO dates order lexically, so plain string comparison is a date comparison.
 */
export function dateNotInFuture(today: () => string) {
  return dateString.superRefine((s, ctx) => {
    const t = today();
    if (s > t) addCodedIssue(ctx, 'date_in_future', `Date may not be in the future (today is ${t}).`);
  });
}


/* ------------------------------------------------------------------------------------------ */
/* Datetimes                                                                                   */
/* ------------------------------------------------------------------------------------------ */

// Seconds and fraction optional, as ISO 8601 allows; a zone (`Z` or an offset) is mandatory
// because a local time cannot be placed on the timeline.
const DATETIME_RE =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:(Z)|([+-])(\d{2})(?::?(\d{2}))?)$/;

interface ParsedDatetime {
  date: Date;
  hasFraction: boolean;
}

function parseDatetimeParts(s: string): ParsedDatetime | undefined {
  const m = DATETIME_RE.exec(s);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, sec, frac, zulu, sign, oh, om] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(sec ?? '0');
  if (!isRealDate(year, month, day) || hour > 23 || minute > 59 || second > 59) return undefined;
  let offsetMinutes = 0;
  if (zulu === undefined) {
    const offH = Number(oh);
    const offM = Number(om ?? '0');
    if (offH > 23 || offM > 59) return undefined;
    offsetMinutes = (sign === '-' ? -1 : 1) * (offH * 60 + offM);
  }
  // Sub-millisecond digits are dropped: the service stores and compares at millisecond precision.
  const ms = frac === undefined ? 0 : Number(frac.padEnd(3, '0').slice(0, 3));
  const date = new Date(0);
  // setUTCFullYear, unlike Date.UTC, does not map years 0-99 onto 1900-1999.
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute - offsetMinutes, second, ms);
  const utcYear = date.getUTCFullYear();
  if (utcYear < 1 || utcYear > 9999) return undefined;
  return { date, hasFraction: frac !== undefined };
}

/** The instant an ISO 8601 datetime with a zone names, or undefined if it is not one. */
export function parseIsoDatetime(s: string): Date | undefined {
  return parseDatetimeParts(s)?.date;
}

/**
 * An ISO 8601 datetime carrying `Z` or an offset, or a bare date (midnight UTC); `invalid_datetime`
 * otherwise, including a time without a zone. Normalised to UTC:
 * `YYYY-MM-DDTHH:MM:SSZ`, or `YYYY-MM-DDTHH:MM:SS.sssZ` when the input had a fraction.
 */
export const datetimeString = z.string().transform((s, ctx) => {
  // A bare date means midnight UTC (decisions §1): the published examples send them.
  if (isCalendarDate(s)) return `${s}T00:00:00Z`;
  const parsed = parseDatetimeParts(s);
  if (!parsed) {
    addCodedIssue(ctx, 'invalid_datetime', 'Enter a valid datetime in ISO 8601 format with Z or a UTC offset (YYYY-MM-DDTHH:MM:SSZ).');
    return z.NEVER;
  }
  const iso = parsed.date.toISOString();
  return parsed.hasFraction ? iso : `${iso.slice(0, 19)}Z`;
});

/** Orders two datetimes accepted by `datetimeString` (either form): negative, zero or positive. */
export function compareDatetimes(a: string, b: string): number {
  const da = parseIsoDatetime(a);
  const db = parseIsoDatetime(b);
  if (!da || !db) throw new TypeError(`Not an ISO 8601 datetime with a zone: ${da ? b : a}`);
  return da.getTime() - db.getTime();
}

/* ------------------------------------------------------------------------------------------ */
/* Decimals                                                                                    */
/* ------------------------------------------------------------------------------------------ */

// Plain decimal notation with an optional exponent; this excludes what decimal.js would otherwise
// accept (hex/binary/octal, Infinity, NaN). The exponent is bounded so no input can make decimal.js
// under/overflow or expand into a huge string.
const DECIMAL_RE = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d{1,4})?$/;

export interface DecimalLimits {
  maxIntegerDigits: number;
  maxFractionDigits: number;
}

/**
 * Canonical decimal string for a JSON number or a decimal string, or an error message.
 * Numbers go through String(n): the JSON parser hands over as numbers only literals a double holds
 * exactly, so the shortest round-trip text is the literal's value. No float arithmetic happens.
 * Limits apply to the canonical value, so trailing fractional and leading zeros do not count.
 */
export function canonicalDecimal(input: string | number, limits: DecimalLimits): { value: string } | { error: string } {
  if (typeof input === 'number' && !Number.isFinite(input)) return { error: 'Enter a valid decimal number.' };
  const text = typeof input === 'number' ? String(input) : input.trim();
  if (!DECIMAL_RE.test(text)) return { error: 'Enter a valid decimal number.' };
  const d = new Decimal(text);
  const integerDigits = d.isZero() ? 0 : Math.max(d.e + 1, 0);
  if (integerDigits > limits.maxIntegerDigits) {
    return { error: `Ensure there are no more than ${String(limits.maxIntegerDigits)} digits before the decimal point (max ${String(limits.maxIntegerDigits)} integer digits).` };
  }
  if (d.decimalPlaces() > limits.maxFractionDigits) {
    return { error: `Ensure there are no more than ${String(limits.maxFractionDigits)} decimal places (max ${String(limits.maxFractionDigits)} fraction digits).` };
  }
  return { value: d.isZero() ? '0' : d.toFixed() };
}

/**
 * A decimal given as a JSON number or a decimal string, output as a canonical decimal string
 * (no exponent, no leading or trailing zeros, "-0" → "0"). Bad text or too many digits: `invalid_decimal`.
 * Numbers are listed first so that a boolean or object reads "Expected number, received boolean".
 */
export function decimalString(limits: DecimalLimits) {
  return z.union([z.number(), z.string()]).transform((v, ctx) => {
    const result = canonicalDecimal(v, limits);
    if ('error' in result) {
      addCodedIssue(ctx, 'invalid_decimal', result.error);
      return z.NEVER;
    }
    return result.value;
  });
}

/* ------------------------------------------------------------------------------------------ */
/* Contact details                                                                             */
/* ------------------------------------------------------------------------------------------ */

/** A UK postcode normalised to upper case with a single space (`SW1A 1AA`), or null when it is not one. */
export function normaliseUkPostcode(s: string): string | null {
  const trimmed = s.trim();
  return isValidPostcode(trimmed) ? normalisePostcode(trimmed) : null;
}

// RFC 5321 limits: a longer address can never be delivered, whatever the pattern says.
const MAX_EMAIL_LENGTH = 254;
const MAX_EMAIL_LOCAL_LENGTH = 64;

/** An e-mail address (`invalid_email`); kept as given. */
export const email = checkedString(
  'invalid_email',
  () => 'Enter a valid e-mail address.',
  (s) => z.regexes.email.test(s) && s.length <= MAX_EMAIL_LENGTH && s.lastIndexOf('@') <= MAX_EMAIL_LOCAL_LENGTH,
);

// Numbers without a country code are read as UK numbers: the service migrates UK accounts.
const DEFAULT_COUNTRY = 'GB';

/**
 * A valid mobile number in E.164, or null. Read with libphonenumber's "mobile" metadata, which holds
 * only the mobile patterns: the same answer as the full metadata's getType() (MOBILE, or
 * FIXED_LINE_OR_MOBILE where mobiles cannot be told apart from landlines, as in the US), at a quarter
 * of the cost (a profile of the validate endpoint had libphonenumber at a quarter of its CPU).
 */
export function normalisedMobile(s: string): string | null {
  const phone = parseWithMobileMetadata(s, DEFAULT_COUNTRY);
  const type = phone?.getType();
  return phone && (type === 'MOBILE' || type === 'FIXED_LINE_OR_MOBILE') ? phone.number : null;
}

/** Any valid phone number in E.164, or null. */
export function normalisedPhone(s: string): string | null {
  const phone = parsePhoneNumberFromString(s, DEFAULT_COUNTRY);
  return phone?.isValid() ? phone.number : null;
}

/* ------------------------------------------------------------------------------------------ */
/* Meter point identifiers                                                                     */
/* ------------------------------------------------------------------------------------------ */

const MPAN_PRIMES = [3, 5, 7, 13, 17, 19, 23, 29, 31, 37, 41, 43] as const;

/** The check digit an MPAN core's first 12 digits require. */
export function mpanCheckDigit(first12: string): number {
  if (!/^\d{12}$/.test(first12)) throw new TypeError('An MPAN core check digit needs exactly 12 digits.');
  let sum = 0;
  for (let i = 0; i < 12; i++) sum += Number(first12[i]) * (MPAN_PRIMES[i] ?? 0);
  return (sum % 11) % 10;
}

/** True for 13 digits whose last is the check digit of the first 12. */
export function isValidMpanCore(s: string): boolean {
  return /^\d{13}$/.test(s) && mpanCheckDigit(s.slice(0, 12)) === Number(s[12]);
}

/** True for a gas meter point reference number: 6 to 10 digits. */
export function isValidMprn(s: string): boolean {
  return /^\d{6,10}$/.test(s);
}



/* ------------------------------------------------------------------------------------------ */
/* Enumerations and cross-field checks                                                         */
/* ------------------------------------------------------------------------------------------ */

/**
 * One of a fixed set of strings. Going through z.string() first means missing, null and non-string
 * values get `required` / `null` / `invalid_type` like any other field; only a wrong string is
 * `invalid_choice` (a bare z.enum reports all of them as `invalid_choice`).
 */
export function choice<const T extends readonly [string, ...string[]]>(values: T) {
  return z.string().pipe(z.enum(values));
}

export interface CrossFieldContext {
  /**
   * True when nothing at or below `path` (relative to the checked value) failed, so the value
   * there is parsed output. A missing optional field counts as parsed; its value is undefined.
   */
  parsed(path: readonly PropertyKey[]): boolean;
  addIssue(code: string, message: string, path: PropertyKey[]): void;
}


/**
 * A check that relates several fields and still runs when other fields failed. zod skips an object's
 * refinements once anything inside it failed, which would hide these errors until the others were
 * fixed; `when` overrides that. Because the value may then be partly unparsed, it arrives as
 * `unknown`: test its shape, and use `ctx.parsed` to look only at fields that parsed cleanly.
 */
export function crossFieldCheck<T>(check: (value: unknown, ctx: CrossFieldContext) => void): z.core.$ZodCheck<T> {
  return z.superRefine<T>(
    (value, payload) => {
      check(value, {
        // Problems other cross-field checks found are about relations between values, not about a
        // value failing to parse: two checks on the same fields must both report (a repeated key is
        // both decisions.md's duplicate_key and the document's metadata_has_duplicate_keys).
        parsed: (path) => payload.issues.length === 0 || !failedPaths(payload.issues).has(pathKey(path)),
        addIssue: (code, message, path) =>
          payload.addIssue({ code: 'custom', message, params: { code, [CROSS_FIELD]: true }, path, input: undefined } as z.core.$ZodRawIssue),
      });
    },
    { when: () => true },
  );
}

const CROSS_FIELD = 'crossField';

const pathKey = (path: readonly PropertyKey[]): string => path.map((p) => `${typeof p === 'number' ? '#' : '.'}${String(p)}`).join('');

type Issues = ReadonlyArray<{ code?: string; params?: unknown; path?: PropertyKey[] }>;

/**
 * The keys of every path at or above a problem that is not another cross-field check's finding.
 * Rules ask about many fields, and every check on one object shares its list of problems, which only
 * grows: the set is built once per list and extended with what was appended since, so an invalid
 * payload costs linear time rather than a scan of every problem for every field asked about.
 */
const failedIndex = new WeakMap<Issues, { seen: number; keys: Set<string> }>();
function failedPaths(issues: Issues): Set<string> {
  let entry = failedIndex.get(issues);
  if (!entry) failedIndex.set(issues, (entry = { seen: 0, keys: new Set() }));
  for (; entry.seen < issues.length; entry.seen++) {
    const issue = issues[entry.seen]!;
    if (isCrossFieldIssue(issue)) continue;
    const path = issue.path ?? [];
    for (let n = 0; n <= path.length; n++) entry.keys.add(pathKey(path.slice(0, n)));
  }
  return entry.keys;
}

function isCrossFieldIssue(issue: { code?: string; params?: unknown }): boolean {
  return issue.code === 'custom' && (issue.params as Record<string, unknown> | undefined)?.[CROSS_FIELD] === true;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
