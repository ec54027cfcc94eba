import { z } from 'zod';
import { choice, crossFieldCheck, dateString, datetimeString, decimalString, email, isRecord, type CrossFieldContext } from '../imports/shared/fields.js';
import { addCodedIssue } from '../imports/shared/validation.js';

// The building blocks schemas.generated.ts is written in. Each maps one kind of constraint of the
// published document onto zod so that the error mapper (issuesToItems) reports the interface's
// codes: `required`, `null`, `invalid_type`, `invalid_choice`, `max_length`, `min_length`,
// `min_items`, `min_value`, `max_value`, `invalid_date`, `invalid_datetime`, `invalid_time`,
// `invalid_decimal`, `invalid_email` and `unknown_field` (every object is strict).

/** A string, optionally bounded in length. The document never forbids "" unless it says minLength. */
export function text(limits: { maxLength?: number; minLength?: number } = {}) {
  let bounded = z.string();
  if (limits.minLength !== undefined) bounded = bounded.min(limits.minLength);
  if (limits.maxLength !== undefined) bounded = bounded.max(limits.maxLength);
  // zod runs length checks on any value with a .length, so a list sent for a string would also get
  // a length error; the bounds run only once the value is known to be a string.
  return limits.minLength === undefined && limits.maxLength === undefined ? z.string() : z.string().pipe(bounded);
}

/** An e-mail address (`invalid_email`), with the document's length bound checked first. */
export function emailAddress(limits: { maxLength?: number } = {}) {
  return text(limits).pipe(email);
}

/** A calendar date `YYYY-MM-DD` (`invalid_date`). */
export function date() {
  return dateString;
}

/** A date-time with `Z` or an offset, or a bare date meaning midnight UTC (`invalid_datetime`); output in UTC. */
export function datetime() {
  return datetimeString;
}

const TIME_RE = /^([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d)(?:\.\d{1,6})?)?$/;

/** A time of day, ISO 8601 `HH:MM[:SS[.ffffff]]` (`invalid_time`). */
export function time() {
  return z.string().transform((s, ctx) => {
    if (TIME_RE.test(s)) return s;
    addCodedIssue(ctx, 'invalid_time', 'Enter a valid time in the format HH:MM[:SS].');
    return z.NEVER;
  });
}

/**
 * A decimal within the document's pattern `^-?\d{0,I}(?:\.\d{0,F})?$`, given as a string or a JSON
 * number (the document's own examples send numbers), output as a canonical decimal string.
 */
export function decimal(limits: { integerDigits: number; fractionDigits: number }) {
  return decimalString({ maxIntegerDigits: limits.integerDigits, maxFractionDigits: limits.fractionDigits });
}

/** A JSON integer, optionally bounded (`min_value`, `max_value`). */
export function integer(limits: { minimum?: number; maximum?: number } = {}) {
  let bounded = z.number();
  if (limits.minimum !== undefined) bounded = bounded.min(limits.minimum);
  if (limits.maximum !== undefined) bounded = bounded.max(limits.maximum);
  // As for text(): the bounds only once the value is known to be an integer.
  return limits.minimum === undefined && limits.maximum === undefined ? z.number().int() : z.number().int().pipe(bounded);
}

export function boolean() {
  return z.boolean();
}

/** A JSON object whose keys the document leaves open (`params`, structured addresses). */
export function jsonObject() {
  return z.record(z.string(), z.unknown());
}

/** A field the document gives no type: any JSON value, but it must be present when required. */
export function anyValue() {
  return z.unknown();
}

export { choice };

export function array<T extends z.ZodType>(item: T, limits: { minItems?: number; maxItems?: number } = {}) {
  const { minItems, maxItems } = limits;
  if (minItems === undefined && maxItems === undefined) return z.array(item);
  // As for text(): zod would run a plain .min() on a string sent for the list too; this bound looks
  // only at a value that is a list.
  return z.array(item).check((payload) => {
    const n = Array.isArray(payload.value) ? payload.value.length : undefined;
    if (n === undefined) return;
    if (minItems !== undefined && n < minItems) {
      payload.issues.push({ code: 'too_small', origin: 'array', minimum: minItems, inclusive: true, input: payload.value, path: [], message: `Too few items (at least ${String(minItems)}).` });
    }
    if (maxItems !== undefined && n > maxItems) {
      payload.issues.push({ code: 'too_big', origin: 'array', maximum: maxItems, inclusive: true, input: payload.value, path: [], message: `Too many items (at most ${String(maxItems)}).` });
    }
  });
}

/** A field that may be omitted. */
export function optional<T extends z.ZodType>(schema: T) {
  return schema.optional();
}

/** A field that may be omitted or null. */
export function optionalNullable<T extends z.ZodType>(schema: T) {
  return schema.nullable().optional();
}

export function nullable<T extends z.ZodType>(schema: T) {
  return schema.nullable();
}

/**
 * A `oneOf` with a discriminator: the value of `property` picks the branch, which then reports its own
 * problems at their own paths. A missing discriminator is `required` and an unknown one
 * `invalid_choice`, both at `property`; a mapping key "null" also covers an absent or null value.
 */
export function oneOf<M extends Record<string, z.ZodType>>(property: string, mapping: M) {
  const keys = Object.keys(mapping);
  return z.unknown().transform((value, ctx): z.output<M[keyof M]> => {
    if (!isRecord(value)) {
      ctx.addIssue({ code: 'invalid_type', expected: 'object', input: value });
      return z.NEVER;
    }
    const raw = value[property];
    const key = raw === undefined || raw === null ? 'null' : String(raw);
    const branch = typeof raw === 'object' && raw !== null ? undefined : mapping[key];
    if (!branch) {
      if (raw === undefined) ctx.addIssue({ code: 'invalid_type', expected: 'string', input: undefined, path: [property] });
      else if (raw === null) ctx.addIssue({ code: 'invalid_type', expected: 'string', input: null, path: [property] });
      else ctx.addIssue({ code: 'invalid_value', values: keys, input: raw, path: [property] });
      return z.NEVER;
    }
    const result = branch.safeParse(value, { reportInput: true });
    if (result.success) return result.data as z.output<M[keyof M]>;
    for (const issue of result.error.issues) ctx.addIssue({ ...issue, input: (issue as { input?: unknown }).input } as z.core.$ZodRawIssue);
    // The value as given, not z.NEVER: the enclosing object's cross-field checks still see this
    // entry (a repeated meter point is a duplicate even when another of its fields is wrong), and
    // they look only at the fields that parsed.
    return value as z.output<M[keyof M]>;
  });
}

/* ------------------------------------------------------------------------------------------ */
/* Hooks: where this service's rules attach to the generated structure                         */
/* ------------------------------------------------------------------------------------------ */

/** Looks at one field's parsed value; may replace it (normalisation) or report a coded problem. */
export type ValueRule = (value: unknown, report: (code: string, message: string) => void) => unknown;

/** Looks at an object (or array) as a whole, even when parts of it failed; see crossFieldCheck. */
export type CrossRule = (value: unknown, ctx: CrossFieldContext) => void;

/**
 * How the rules reach the generated schemas. `field` receives a property's schema before it is made
 * optional or nullable, so a rule sees only present, non-null values of the right type.
 * `object` receives every object schema (and `array` every list) by its location in the document.
 */
export interface ContractHooks {
  field<T extends z.ZodType>(at: string, schema: T): T;
  /** A value of one of the deployment's reference lists (decisions §6): `invalid_choice` otherwise. */
  reference(kind: string): z.ZodType<string>;
  object<S extends z.core.$ZodLooseShape>(name: string, shape: S): z.ZodObject<S, z.core.$strict>;
}

/** Hooks applying the given rules; locations are `Schema.property` (fields, lists) and `Schema` (objects). */
export function makeHooks(rules: {
  values: ReadonlyMap<string, readonly ValueRule[]>;
  cross: ReadonlyMap<string, readonly CrossRule[]>;
  /** The values of a reference list as they stand when a request is checked. */
  reference: (kind: string) => ReadonlySet<string>;
}): ContractHooks {
  return {
    reference(kind) {
      return z.string().check((payload) => {
        if (rules.reference(kind).has(payload.value)) return;
        payload.issues.push({
          code: 'custom',
          message: `${JSON.stringify(payload.value.slice(0, 64))} is not one of this platform's values here (${kind.toLowerCase().replace(/_/g, ' ')}).`,
          params: { code: 'invalid_choice' },
          input: payload.value,
          path: [],
        });
      });
    },
    field(at, schema) {
      const values = rules.values.get(at) ?? [];
      const cross = rules.cross.get(at) ?? [];
      let out = schema;
      if (values.length > 0) {
        out = out.check((payload) => {
          let failed = false;
          for (const rule of values) {
            payload.value = rule(payload.value, (code, message) => {
              failed = true;
              payload.issues.push({ code: 'custom', message, params: { code }, input: payload.value, path: [] });
            }) as typeof payload.value;
            if (failed) return;
          }
        }) as typeof out;
      }
      for (const rule of cross) out = out.check(crossFieldCheck(rule)) as typeof out;
      return out;
    },
    object(name, shape) {
      let out = z.strictObject(shape);
      for (const rule of rules.cross.get(name) ?? []) out = out.check(crossFieldCheck(rule));
      return out;
    },
  };
}
