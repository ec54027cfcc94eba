import { readFileSync } from 'node:fs';
import path from 'node:path';
import { makeAccountDataSchema } from '../../src/imports/accounts/account.schemas.js';
import { seededReferenceData } from '../../src/imports/reference/reference.service.js';
import { issuesToItems } from '../../src/imports/shared/validation.js';

/** A fixed "today" for rule tests: the published example's dates all lie before it. */
export const TODAY = '2026-01-15';

const schemaFor = new Map<string, ReturnType<typeof makeAccountDataSchema>>();

/** Every problem the account schema (structure and rules, no database) finds, as `code@attr`. */
export function accountErrors(input: unknown, today = TODAY): string[] {
  let schema = schemaFor.get(today);
  if (!schema) {
    schema = makeAccountDataSchema(() => today, seededReferenceData());
    schemaFor.set(today, schema);
  }
  const result = schema.safeParse(input, { reportInput: true });
  return result.success ? [] : issuesToItems(result.error.issues).map((i) => `${i.code}@${i.attr ?? ''}`);
}

/** The parsed account, or throws listing the problems. */
export function parseAccount(input: unknown, today = TODAY): unknown {
  const result = makeAccountDataSchema(() => today, seededReferenceData()).safeParse(input, { reportInput: true });
  if (!result.success) throw new Error(issuesToItems(result.error.issues).map((i) => `${i.code}@${i.attr ?? ''}`).join(', '));
  return result.data;
}

/** A fresh deep copy of one of the document's example payloads (test/fixtures/published/). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests reach into the example freely
export function published(name: 'account' | 'transactions' | 'notes' | 'historical-statements' | 'payment-instruction'): any {
  return JSON.parse(readFileSync(path.join(import.meta.dirname, '..', 'fixtures', 'published', `${name}.json`), 'utf8'));
}
