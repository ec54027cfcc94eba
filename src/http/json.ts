import { isSafeNumber, parse } from 'lossless-json';

/**
 * JSON.parse that never loses a digit: a number literal a double cannot hold exactly
 * (`12345678901.1234567891`) is kept as its decimal string, which every decimal field accepts.
 * Numbers that survive the round trip stay numbers. `__proto__` keys cannot pollute prototypes.
 */
export function parseJsonExact(text: string): unknown {
  return parse(text, null, (literal) => (isSafeNumber(literal) ? Number(literal) : literal));
}
