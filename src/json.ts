import { isSafeNumber, parse } from 'lossless-json';

/**
 * JSON.parse that never loses a digit: a number literal a double cannot hold exactly
 * (`12345678901.1234567891`) is kept as its decimal string, which every decimal field accepts.
 * Numbers that survive the round trip stay numbers. `__proto__` keys cannot pollute prototypes.
 */
export function parseJsonExact(text: string): unknown {
  return parse(
    text,
    (key, value) => {
      if (!storable(key) || (typeof value === 'string' && !storable(value))) throw new UnstorableString();
      return value;
    },
    (literal) => (isSafeNumber(literal) ? Number(literal) : literal),
  );
}

/** A string with a NUL or an unpaired surrogate: PostgreSQL cannot store it, and no real data has one. */
export class UnstorableString extends Error {
  override readonly name = 'UnstorableString';
  constructor() {
    super('strings may not contain NUL characters (\\u0000) or unpaired surrogates');
  }
}

// An unpaired high surrogate, or a low surrogate without its high half.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Whether PostgreSQL can store the string as text: no NUL, no unpaired surrogate. */
export const storable = (s: string): boolean => !s.includes('\u0000') && !LONE_SURROGATE.test(s);

/**
 * Text that may quote the input (a parser's message) made safe to store and show: unpaired
 * surrogates become U+FFFD and control characters (NUL included) become \uXXXX escapes.
 */
export const printable = (s: string): string =>
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  s.toWellFormed().replace(/[\u0000-\u001f\u007f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
