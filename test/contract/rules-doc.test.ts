import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { readContract } from '../../src/contract/generate.js';
import { RULES_DOC, ruleStatuses, rulesDoc } from '../../src/contract/rules-doc.js';
import { accountRules, accountRulesNotImplemented } from '../../src/imports/accounts/rules/index.js';

describe('the table of the document\'s account rules (docs/account-rules.md)', () => {
  const statuses = ruleStatuses(readContract());

  it('classifies every rule: applied, or not applied with a reason', () => {
    expect(statuses.filter((s) => !s.implemented && !s.reason).map((s) => `${s.at} ${s.code}`)).toEqual([]);
  });

  it('names a test for every rule it says is applied (a test titled "<place> <code>")', () => {
    expect(statuses.filter((s) => s.implemented && !s.test).map((s) => `${s.at} ${s.code}`)).toEqual([]);
  });

  it('gives no rule both an implementation and a reason not to apply it, and names only places and codes the document has', () => {
    const known = new Set(statuses.map((s) => `${s.at} ${s.code}`));
    const implemented = accountRules(() => '2000-01-01')
      .filter((r) => r.source !== 'service')
      .flatMap((r) => r.codes.map((c) => `${r.at} ${c}`));
    const notImplemented = accountRulesNotImplemented.flatMap((n) => n.codes.map((c) => `${n.at} ${c}`));
    expect(implemented.filter((k) => !known.has(k))).toEqual([]);
    expect(notImplemented.filter((k) => !known.has(k))).toEqual([]);
    expect(notImplemented.filter((k) => implemented.includes(k))).toEqual([]);
  });

  it('is up to date', () => {
    expect(readFileSync(RULES_DOC, 'utf8')).toBe(rulesDoc(statuses));
  });
});
