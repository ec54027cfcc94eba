import { describe, expect, it } from 'vitest';
import { accountPayload } from '../helpers/fixtures.js';
import { generateCohort } from '../../src/cohort/generate.js';
import { accountErrors, published, TODAY } from './harness.js';

describe('what suppliers already send', () => {
  it('accepts the published example account as it is', () => {
    expect(accountErrors(published('account'))).toEqual([]);
  });

  it("accepts this project's own test fixture account", () => {
    expect(accountErrors(accountPayload('SUPPLIER', 'EXT-1'))).toEqual([]);
  });

  it('accepts every account of a generated cohort that carries no planted mistake, and refuses every one that does', () => {
    for (const { bundle, mistake } of generateCohort({ count: 200, supplier: 'SUPPLIER', today: TODAY, invalidRate: 0.2, seed: 7 })) {
      const errors = accountErrors(bundle.account);
      if (mistake) expect(errors.length, `${String(bundle.account.external_account_number)} (${mistake})`).toBeGreaterThan(0);
      else expect(errors, String(bundle.account.external_account_number)).toEqual([]);
    }
  });
});
