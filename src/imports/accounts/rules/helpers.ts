import type { CrossFieldContext } from '../../shared/fields.js';
import { isRecord, shown } from '../../shared/fields.js';
import { compareMoments } from '../../../contract/rules.js';
import type { CrossRuleSpec, ValueRuleSpec } from '../../../contract/rules.js';

// Small factories for the shapes most of the document's rules take. Each returns a RuleSpec; the
// rule files list them, so the rules and their places in the document read as one table.

/** Shared with the field checks: echoes a value in a message without letting a long one bloat the envelope. */
export { shown };

/** A string field's value rule: `ok` decides; `normalise` may rewrite an accepted value. */
export function stringRule(
  at: string,
  code: string,
  message: (s: string) => string,
  ok: (s: string) => boolean,
  extra: { normalise?: (s: string) => string; source?: 'service' } = {},
): ValueRuleSpec {
  return {
    at,
    codes: [code],
    ...(extra.source ? { source: extra.source } : {}),
    value: (v, report) => {
      if (typeof v !== 'string') return v;
      if (!ok(v)) {
        report(code, message(v));
        return v;
      }
      return extra.normalise ? extra.normalise(v) : v;
    },
  };
}

/** The parsed string at `key` of an object, if it parsed cleanly; undefined otherwise. */
export function parsedString(obj: unknown, key: string, ctx: CrossFieldContext, prefix: readonly PropertyKey[] = []): string | undefined {
  if (!isRecord(obj) || !ctx.parsed([...prefix, key])) return undefined;
  const v = obj[key];
  return typeof v === 'string' ? v : undefined;
}

/**
 * `to`, when given, may not be before `from` (or not on or before it when `strict`): one problem at
 * `to`. Dates and date-times compare as instants.
 */
export function periodRule(at: string, from: string, to: string, code: string, strict = false, source?: 'service'): CrossRuleSpec {
  return {
    at,
    codes: [code],
    ...(source ? { source } : {}),
    cross: (obj, ctx) => {
      const a = parsedString(obj, from, ctx);
      const b = parsedString(obj, to, ctx);
      if (a === undefined || b === undefined) return;
      const order = compareMoments(b, a);
      if (order < 0 || (strict && order === 0)) {
        ctx.addIssue(code, `${to} (${b}) must be ${strict ? 'after' : 'on or after'} ${from} (${a}).`, [to]);
      }
    },
  };
}

/**
 * No two entries of a list share a key: every repeat after the first is reported, at `attrOf(i)`
 * relative to the list. `keyOf` returns undefined for an entry it cannot judge (unparsed, key absent).
 */
export function uniqueInList(
  at: string,
  code: string,
  keyOf: (entry: unknown, i: number, ctx: CrossFieldContext) => string | undefined,
  message: (key: string) => string,
  attrOf: (i: number) => PropertyKey[] = (i) => [i],
): CrossRuleSpec {
  return {
    at,
    codes: [code],
    cross: (list, ctx) => {
      if (!Array.isArray(list)) return;
      const seen = new Set<string>();
      list.forEach((entry: unknown, i) => {
        const key = keyOf(entry, i, ctx);
        if (key === undefined) return;
        if (seen.has(key)) ctx.addIssue(code, message(key), attrOf(i));
        seen.add(key);
      });
    },
  };
}

/** The key of a list entry's field, when that field parsed and holds a string. */
export function entryKey(field: string) {
  return (entry: unknown, i: number, ctx: CrossFieldContext): string | undefined => parsedString(entry, field, ctx, [i]);
}

/** A date or date-time field that may not be after today (UTC). */
export function notInFuture(at: string, code: string, today: () => string, source?: 'service'): ValueRuleSpec {
  return {
    at,
    codes: [code],
    ...(source ? { source } : {}),
    value: (v, report) => {
      if (typeof v !== 'string') return v;
      const t = today();
      if (v.slice(0, 10) > t) report(code, `${shown(v)} is in the future (today is ${t}).`);
      return v;
    },
  };
}
