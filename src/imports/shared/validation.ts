import type { z } from 'zod';
import { AppError, attrOf, type ErrorItem } from '../../errors.js';

/**
 * Adds an issue carrying one of the interface's stable codes. Refinements use this so that
 * the mapper below can report `code` exactly; `message` becomes the human-readable detail.
 */
export function addCodedIssue(
  ctx: { addIssue: (issue: z.core.$ZodRawIssue) => void } | z.RefinementCtx,
  code: string,
  message: string,
  path: PropertyKey[] = [],
): void {
  ctx.addIssue({ code: 'custom', message, params: { code }, path, input: undefined } as z.core.$ZodRawIssue);
}

const STRING_ORIGINS = new Set(['string']);
const ARRAY_ORIGINS = new Set(['array', 'set']);

/** Maps zod issues to the interface's error items: one item per problem, `attr` a dot path. */
export function issuesToItems(issues: readonly z.core.$ZodIssue[]): ErrorItem[] {
  const items: ErrorItem[] = [];
  for (const issue of issues) {
    const attr = attrOf(issue.path);
    switch (issue.code) {
      case 'unrecognized_keys':
        for (const key of issue.keys) {
          items.push({ code: 'unknown_field', detail: `Unknown field '${key}'.`, attr: attrOf([...issue.path, key]) });
        }
        break;
      case 'invalid_type': {
        const input = (issue as { input?: unknown }).input;
        if (input === undefined) items.push({ code: 'required', detail: 'This field is required.', attr });
        else if (input === null) items.push({ code: 'null', detail: 'This field may not be null.', attr });
        else items.push({ code: 'invalid_type', detail: `Expected ${issue.expected}, received ${describe(input)}.`, attr });
        break;
      }
      case 'invalid_value':
        items.push({
          code: 'invalid_choice',
          detail: `Not a valid choice; expected one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}.`,
          attr,
        });
        break;
      case 'too_big':
        if (STRING_ORIGINS.has(issue.origin)) {
          items.push({ code: 'max_length', detail: `Ensure this field has no more than ${String(issue.maximum)} characters.`, attr });
        } else if (ARRAY_ORIGINS.has(issue.origin)) {
          items.push({ code: 'too_many_items', detail: `Ensure this list has no more than ${String(issue.maximum)} items.`, attr });
        } else {
          items.push({ code: 'max_value', detail: `Ensure this value is less than or equal to ${String(issue.maximum)}.`, attr });
        }
        break;
      case 'too_small':
        if (STRING_ORIGINS.has(issue.origin)) {
          items.push(
            Number(issue.minimum) <= 1
              ? { code: 'blank', detail: 'This field may not be blank.', attr }
              : { code: 'min_length', detail: `Ensure this field has at least ${String(issue.minimum)} characters.`, attr },
          );
        } else if (ARRAY_ORIGINS.has(issue.origin)) {
          items.push({ code: 'min_items', detail: `Ensure this list has at least ${String(issue.minimum)} item(s).`, attr });
        } else {
          items.push({ code: 'min_value', detail: `Ensure this value is greater than or equal to ${String(issue.minimum)}.`, attr });
        }
        break;
      case 'invalid_union': {
        // Unions are used only for "one of these shapes"; report the closest branch's first problem.
        const branch = issue.errors.find((errs) => errs.length > 0);
        items.push(...(branch ? issuesToItems(branch.map((i) => ({ ...i, path: [...issue.path, ...i.path] }))) : []));
        if (!branch) items.push({ code: 'invalid_type', detail: issue.message, attr });
        break;
      }
      case 'custom': {
        const code = (issue.params as { code?: string } | undefined)?.code ?? 'invalid';
        items.push({ code, detail: issue.message, attr });
        break;
      }
      case 'invalid_format':
        items.push({ code: issue.format === 'email' ? 'invalid_email' : 'invalid_format', detail: issue.message, attr });
        break;
      default:
        items.push({ code: 'invalid', detail: issue.message, attr });
    }
  }
  return items;
}

function describe(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

/**
 * Parses input with a schema, or throws a 400 envelope listing every problem.
 * `reportInput` lets the mapper tell a missing field (`required`) from a null one (`null`).
 */
export function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown, code: string, detail: string): z.output<S> {
  const result = schema.safeParse(input, { reportInput: true });
  if (result.success) return result.data;
  throw new AppError(400, code, detail, issuesToItems(result.error.issues));
}

/** Orders problems by the index of the list entry they concern (`notes.3…` before `notes.10…`), stably. */
export function sortByEntry(items: readonly ErrorItem[], list: string): ErrorItem[] {
  const pattern = new RegExp(`^${list}\\.(\\d+)`);
  const index = (attr: string | null) => Number(pattern.exec(attr ?? '')?.[1] ?? -1);
  return [...items].sort((a, b) => index(a.attr) - index(b.attr));
}
