import { PUBLISHED_REFERENCE_VALUES } from '../../contract/schemas.generated.js';

/** The lists each deployment keeps as reference data (decisions §6). Payment vendors are configuration. */
export const REFERENCE_KINDS = [
  'CHARGE_REASON',
  'CREDIT_REASON',
  'PAYMENT_REASON',
  'REPAYMENT_REASON',
  'PAYMENT_PAYMENT_TYPE',
  'REPAYMENT_PAYMENT_TYPE',
  'PAYMENT_INSTRUCTION_TYPE',
] as const;
export type ReferenceKind = (typeof REFERENCE_KINDS)[number];

export function isReferenceKind(s: string): s is ReferenceKind {
  return (REFERENCE_KINDS as readonly string[]).includes(s);
}

/** Values decisions §6 requires that the published lists lack. */
const DECISIONS_EXTRA: Partial<Record<ReferenceKind, readonly string[]>> = {
  CREDIT_REASON: ['GENERAL_CREDIT'],
  PAYMENT_PAYMENT_TYPE: ['DIRECT_CREDIT'],
};

/** Published values a deployment holds but does not take until an operator enables them (decisions §6). */
const NOT_ENABLED: Partial<Record<ReferenceKind, readonly string[]>> = {
  PAYMENT_INSTRUCTION_TYPE: ['BPAY', 'CUSTOM', 'GMO_REFUND', 'PAYMENT_SLIP'],
};

export interface SeedValue {
  kind: ReferenceKind;
  value: string;
  source: 'PUBLISHED' | 'DECISIONS';
  enabled: boolean;
}

/** What a new deployment starts with: the published lists and decisions §6's additions. */
export const REFERENCE_SEED: readonly SeedValue[] = REFERENCE_KINDS.flatMap((kind) => {
  const published = PUBLISHED_REFERENCE_VALUES[kind] as readonly string[];
  const extra = (DECISIONS_EXTRA[kind] ?? []).filter((v) => !published.includes(v));
  const off = new Set(NOT_ENABLED[kind] ?? []);
  return [
    ...published.map((value) => ({ kind, value, source: 'PUBLISHED' as const, enabled: !off.has(value) })),
    ...extra.map((value) => ({ kind, value, source: 'DECISIONS' as const, enabled: true })),
  ];
});
