import { describe, expect, it } from 'vitest';
import { generateCohort } from '../../src/cohort/generate.js';
import { makeAccountDataSchema } from '../../src/imports/accounts/account.schemas.js';
import { transactionSchema } from '../../src/imports/transactions/transaction.schemas.js';
import { issuesToItems } from '../../src/imports/shared/validation.js';

const today = '2026-11-22';
const schema = makeAccountDataSchema(() => today);

describe('generateCohort', () => {
  it('generates accounts that pass every account rule, with valid transactions', () => {
    const all = [...generateCohort({ count: 200, supplier: 'GEN', today, vendor: 'sandbox' })];
    expect(all).toHaveLength(200);
    for (const { bundle, mistake } of all) {
      expect(mistake).toBeNull();
      const r = schema.safeParse(bundle.account, { reportInput: true });
      expect(r.success ? [] : issuesToItems(r.error.issues)).toEqual([]);
      for (const t of bundle.transactions ?? []) expect(transactionSchema.safeParse(t).success).toBe(true);
      expect(bundle.payment_instruction?.vendor).toBe('sandbox');
    }
    const identifiers = all.flatMap(({ bundle }) =>
      (bundle.account.supply_addresses as Array<{ meter_points: Array<{ identifier: string }> }>).flatMap((s) => s.meter_points.map((m) => m.identifier)),
    );
    expect(new Set(identifiers).size).toBe(identifiers.length);
  });

  it('is deterministic for a seed and plants the mistake it reports', () => {
    const a = [...generateCohort({ count: 300, supplier: 'GEN', today, seed: 7, invalidRate: 0.2 })];
    const b = [...generateCohort({ count: 300, supplier: 'GEN', today, seed: 7, invalidRate: 0.2 })];
    expect(JSON.stringify(a.map((x) => x.bundle))).toBe(JSON.stringify(b.map((x) => x.bundle)));
    const planted = a.filter((x) => x.mistake !== null);
    expect(planted.length).toBeGreaterThan(30);
    expect(planted.length).toBeLessThan(90);
    for (const { bundle, mistake } of planted) {
      const r = schema.safeParse(bundle.account, { reportInput: true });
      expect(r.success).toBe(false);
      if (!r.success) expect(issuesToItems(r.error.issues).map((i) => i.code)).toContain(mistake);
    }
  });

  it('gives different cohorts different meter points', () => {
    const mpan = (prefix: string) =>
      [...generateCohort({ count: 1, supplier: 'GEN', prefix, today })][0]!.bundle.account.supply_addresses as Array<{ meter_points: Array<{ identifier: string }> }>;
    expect(mpan('A')[0]!.meter_points[0]!.identifier).not.toBe(mpan('B')[0]!.meter_points[0]!.identifier);
  });
});
