import { parseIsoDatetime } from '../imports/shared/fields.js';
import { makeHooks, type ContractHooks, type CrossRule, type ValueRule } from './builders.js';

/**
 * One rule this service applies to a request body.
 *
 * `at` is the rule's place in the published document: `Schema` for a rule listed on a schema,
 * `Schema.property` for one listed on a property (a list's rules sit on the list property). Rules of
 * the document carry one of the codes the document lists there; `source: 'service'` marks a rule of
 * decisions.md that the document does not list. `attach` runs the rule somewhere else than `at`, for
 * a rule listed on a property that needs its siblings (the enclosing schema's name).
 */
interface RuleBase {
  at: string;
  codes: readonly string[];
  source?: 'service';
  attach?: string;
}

export interface ValueRuleSpec extends RuleBase {
  value: ValueRule;
}

export interface CrossRuleSpec extends RuleBase {
  cross: CrossRule;
}

export type RuleSpec = ValueRuleSpec | CrossRuleSpec;

/** The hooks that attach the given rules, and the deployment's reference lists, to the generated schemas. */
export function hooksFor(rules: readonly RuleSpec[], reference: (kind: string) => ReadonlySet<string>): ContractHooks {
  const values = new Map<string, ValueRule[]>();
  const cross = new Map<string, CrossRule[]>();
  for (const rule of rules) {
    const where = rule.attach ?? rule.at;
    if ('value' in rule) values.set(where, [...(values.get(where) ?? []), rule.value]);
    else cross.set(where, [...(cross.get(where) ?? []), rule.cross]);
  }
  return makeHooks({ values, cross, reference });
}

/** The document's (location, code) pairs that the given rules implement. */
export function implementedPairs(rules: readonly RuleSpec[]): Set<string> {
  return new Set(rules.filter((r) => r.source !== 'service').flatMap((r) => r.codes.map((c) => `${r.at} ${c}`)));
}

/**
 * Orders two dates or date-times as parsed by the contract's builders (a date is midnight UTC):
 * negative, zero or positive. Date-times are compared as instants, not as text, because the
 * normalised forms with and without a fraction do not sort lexically.
 */
export function compareMoments(a: string, b: string): number {
  if (a.length === 10 && b.length === 10) return a < b ? -1 : a > b ? 1 : 0;
  const da = parseIsoDatetime(a.length === 10 ? `${a}T00:00:00Z` : a);
  const db = parseIsoDatetime(b.length === 10 ? `${b}T00:00:00Z` : b);
  if (!da || !db) throw new TypeError(`not a parsed date or date-time: ${da ? b : a}`);
  return da.getTime() - db.getTime();
}

/** The calendar date (UTC) of a parsed date or date-time. */
export function dayOf(moment: string): string {
  if (moment.length === 10) return moment;
  const d = parseIsoDatetime(moment);
  if (!d) throw new TypeError(`not a parsed date-time: ${moment}`);
  return d.toISOString().slice(0, 10);
}

/** A rule of the document this service does not apply (yet), and why; docs/account-rules.md lists them. */
export interface NotImplemented {
  at: string;
  codes: readonly string[];
  reason: string;
}

/** The reasons a rule of the document is not applied, in the words docs/account-rules.md uses. */
export const because = {
  /** It checks the payload against platform data this service does not hold: tariffs, market participants, ledgers… */
  referenceData: (what: string) => `needs the platform's ${what}, which this service does not hold yet`,
  /** It depends on a setting of the real platform's import configuration that this service does not have. */
  configuration: (setting: string) => `depends on the platform setting "${setting}", which this service does not have`,
  /** The document names the rule but not what it accepts. */
  unpublished: (what: string) => `the document does not say ${what}`,
  /** Nothing in the payload this service accepts can make it fail. */
  cannotArise: (why: string) => `cannot arise here: ${why}`,
} as const;
