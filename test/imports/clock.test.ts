import fc from 'fast-check';
import { expect, it } from 'vitest';
import { utcDate } from '../../src/clock.js';

// utcDate remembers the last day it answered: whatever order instants come in (the same day again,
// the next day, a day long ago, either side of midnight), it must answer what toISOString says.
it('answers the UTC calendar date of any instant, in any order of calls', () => {
  const DAY = 86_400_000;
  const instant = fc.oneof(
    fc.integer({ min: -62_135_596_800_000, max: 253_402_300_799_999 }),
  );
  // Around the midnights of a few neighbouring days, where a remembered day must end exactly.
  const nearMidnights = fc
    .tuple(fc.integer({ min: -100_000, max: 100_000 }), fc.array(fc.tuple(fc.integer({ min: -1, max: 2 }), fc.integer({ min: -2, max: 2 })), { minLength: 1, maxLength: 20 }))
    .map(([day, steps]) => steps.map(([d, off]) => (day + d) * DAY + off));
  fc.assert(
    fc.property(fc.oneof(fc.array(instant, { minLength: 1, maxLength: 20 }), nearMidnights), (times) => {
      for (const t of times) expect(utcDate(new Date(t))).toBe(new Date(t).toISOString().slice(0, 10));
    }),
    { numRuns: 2_000 },
  );
  expect(() => utcDate(new Date(NaN))).toThrow(RangeError);
});
