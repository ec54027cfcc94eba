import fc from 'fast-check';
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { describe, expect, it } from 'vitest';
import { normalisedMobile } from '../../src/imports/shared/fields.js';

/** The rule as the full metadata states it: what normalisedMobile must accept, and as what. */
function byFullMetadata(s: string): string | null {
  const p = parsePhoneNumberFromString(s, 'GB');
  const type = p?.getType();
  return p && (type === 'MOBILE' || type === 'FIXED_LINE_OR_MOBILE') ? p.number : null;
}

describe('normalisedMobile (read with the mobile-only metadata)', () => {
  it('accepts exactly what the full metadata calls a mobile, normalised the same way', () => {
    const digits = (n: number) => fc.array(fc.integer({ min: 0, max: 9 }), { minLength: n, maxLength: n }).map((d) => d.join(''));
    const number = fc.oneof(
      digits(9).map((d) => `07${d}`), // UK mobiles and the 070 personal numbers
      digits(9).map((d) => `+447${d}`),
      digits(9).map((d) => `01${d}`), // UK landlines
      digits(8).map((d) => `020${d}`),
      digits(10).map((d) => `+1${d}`), // the US: mobiles and landlines alike
      digits(9).map((d) => `+33${d}`),
      digits(8).map((d) => `+49${d}`),
      digits(9).map((d) => `08${d}`), // freephone and special rates
      fc.string({ maxLength: 14 }),
    );
    fc.assert(
      fc.property(number, (s) => {
        expect(normalisedMobile(s)).toBe(byFullMetadata(s));
      }),
      { numRuns: 5000, seed: 20261122 },
    );
  });
});
