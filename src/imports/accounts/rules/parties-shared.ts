import type { CrossFieldContext } from '../../shared/fields.js';
import { isRecord } from '../../shared/fields.js';
import { parsedString } from './helpers.js';

// Small readings of the payload that several party rules share.

/**
 * Whether a field counts as given: the document's rules speak of fields being "provided", and a
 * blank string, an empty list or an empty object carries nothing, so none of them counts.
 */
export function provided(v: unknown): boolean {
  if (v === undefined || v === null) return false;
  if (typeof v === 'string') return v.trim() !== '';
  if (Array.isArray(v)) return v.length > 0;
  if (isRecord(v)) return Object.keys(v).length > 0;
  return true;
}

/** The parsed boolean at `key`, if it parsed cleanly; undefined otherwise (absent, null or broken). */
export function parsedBoolean(obj: unknown, key: string, ctx: CrossFieldContext, prefix: readonly PropertyKey[] = []): boolean | undefined {
  if (!isRecord(obj) || !ctx.parsed([...prefix, key])) return undefined;
  const v = obj[key];
  return typeof v === 'boolean' ? v : undefined;
}

/**
 * The type the account will be created with. An explicit account_type wins; the deprecated
 * is_managed / is_portfolio_lead flags stand in for it when it is absent; the document's default
 * is DOMESTIC. Undefined when account_type was sent but did not parse: no type-dependent rule can
 * then be judged.
 */
export function accountTypeOf(account: unknown, ctx: CrossFieldContext): string | undefined {
  if (!isRecord(account)) return undefined;
  if (account.account_type !== undefined) return parsedString(account, 'account_type', ctx);
  if (parsedBoolean(account, 'is_managed', ctx) === true) return 'MANAGED';
  if (parsedBoolean(account, 'is_portfolio_lead', ctx) === true) return 'PORTFOLIO_LEAD';
  return 'DOMESTIC';
}

// The document's account types come in domestic and business families (plain, vacant, occupier,
// third-party billed); MANAGED, PORTFOLIO_LEAD and SYSTEM belong to neither.
export const isDomestic = (type: string | undefined): boolean => type !== undefined && type.startsWith('DOMESTIC');
export const isBusiness = (type: string | undefined): boolean => type !== undefined && type.startsWith('BUSINESS');
export const isOccupierType = (type: string | undefined): boolean => type !== undefined && type.endsWith('_OCCUPIER');
