import { seededReferenceData } from '../../src/imports/reference/reference.service.js';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import type { ContractProperty } from '../../src/contract/generate.js';
import { hooksFor } from '../../src/contract/rules.js';
import { buildContractSchemas } from '../../src/contract/schemas.generated.js';
import { issuesToItems } from '../../src/imports/shared/validation.js';
import {
  ROOTS,
  branchOf,
  choicesOf,
  decimalDigits,
  isDeploymentList,
  isNullable,
  minimal,
  minimalBranch,
  place,
  reachable,
  sample,
  sampleDecimal,
  schemaOf,
  selectableBranches,
  type Branches,
  type Json,
  type JsonObject,
} from './instances.js';

// Every declared constraint of every schema the five request bodies reach, checked against the
// generated structure alone: no rule is attached, so each planted problem must come back as exactly
// the one code the structure owes it, at exactly its place. The cases are derived from the contract
// at test time, so a regenerated contract is checked without editing this file.

const schemas: Record<string, z.ZodType> = buildContractSchemas(hooksFor([], seededReferenceData().values));

/** Every problem the structure of `name` finds in `input`, as `code@attr` (attr '' for the value itself). */
function problems(name: string, input: unknown): string[] {
  const schema = schemas[name];
  if (!schema) throw new Error(`no generated schema ${name}`);
  const result = schema.safeParse(input, { reportInput: true });
  return result.success ? [] : issuesToItems(result.error.issues).map((i) => `${i.code}@${i.attr ?? ''}`).sort();
}

/** A key no schema of the document declares. */
const UNDOCUMENTED = 'zz_undocumented';
/** Stands for "leave the property out". */
const ABSENT = Symbol('absent');

/** Values to try at a property, and the problems each must bring, as [code, path below the property]. */
interface ValueCase {
  label: string;
  values: (Json | typeof ABSENT)[];
  errors: [code: string, below: string][];
}

const ok = (label: string, ...values: (Json | typeof ABSENT)[]): ValueCase => ({ label, values, errors: [] });
const bad = (label: string, code: string, value: Json, below = ''): ValueCase => ({ label, values: [value], errors: [[code, below]] });

/**
 * One case per expected outcome: every accepted value in one, and the values of each code in one,
 * which keeps the suite at a few thousand cases while every value is still tried.
 */
function merged(cases: readonly ValueCase[]): ValueCase[] {
  const groups = new Map<string, ValueCase[]>();
  for (const c of cases) {
    const key = JSON.stringify(c.errors);
    groups.set(key, [...(groups.get(key) ?? []), c]);
  }
  return [...groups.values()].map((group) => {
    const errors = (group[0] as ValueCase).errors;
    const labels = group.map((c) => c.label).join('; ');
    const codes = errors.map(([code, below]) => (below ? `${code} at .${below}` : code)).join(', ');
    return { label: errors.length === 0 ? `accepts ${labels}` : `${labels} → ${codes}`, values: group.flatMap((c) => c.values), errors };
  });
}

/** An address of exactly `length` characters (at least 30) that is a valid e-mail address. */
function emailOfLength(length: number): string {
  const local = 'a'.repeat(Math.min(64, length - 20));
  let domain = 'example.com';
  let rest = length - local.length - 1 - domain.length;
  while (rest > 0) {
    const label = Math.max(Math.min(63, rest - 1), 1);
    domain = `${'d'.repeat(label)}.${domain}`;
    rest -= label + 1;
  }
  return `${local}@${domain}`;
}

function textCases(p: ContractProperty): ValueCase[] {
  const out: ValueCase[] = [];
  if (p.maxLength !== undefined) {
    out.push(ok(`exactly ${String(p.maxLength)} characters`, 'x'.repeat(p.maxLength)));
    out.push(bad(`${String(p.maxLength + 1)} characters`, 'max_length', 'x'.repeat(p.maxLength + 1)));
  }
  if (p.minLength !== undefined && p.minLength > 0) {
    if (p.minLength !== p.maxLength) out.push(ok(`exactly ${String(p.minLength)} characters`, 'x'.repeat(p.minLength)));
    if (p.minLength > 1) out.push(bad(`${String(p.minLength - 1)} characters`, 'min_length', 'x'.repeat(p.minLength - 1)));
    out.push(bad('""', p.minLength === 1 ? 'blank' : 'min_length', ''));
  } else {
    // Without a minLength the document allows an empty string.
    out.push(ok('""', ''));
  }
  return [...out, bad('a number', 'invalid_type', 5), bad('a list', 'invalid_type', ['x'])];
}

function decimalCases(p: ContractProperty): ValueCase[] {
  const { integer, fraction } = decimalDigits(p);
  const widest = `${'9'.repeat(integer)}${fraction > 0 ? `.${'9'.repeat(fraction)}` : ''}`;
  return [
    ok('a JSON number', Number(sampleDecimal(p))),
    ok(`${String(integer)}+${String(fraction)} digits, either sign`, widest, `-${widest}`),
    bad(`${String(integer + 1)} integer digits`, 'invalid_decimal', `1${'0'.repeat(integer)}`),
    bad('as a JSON number', 'invalid_decimal', 10 ** integer),
    bad(`${String(fraction + 1)} fraction digits`, 'invalid_decimal', `0.${'0'.repeat(fraction)}1`),
    bad('words', 'invalid_decimal', 'twelve'),
    bad('a boolean', 'invalid_type', true),
  ];
}

function stringCases(p: ContractProperty): ValueCase[] {
  switch (p.format) {
    case 'date':
      return [
        ok('a leap day', '2024-02-29'),
        bad('29 Feb of a common year', 'invalid_date', '2023-02-29'),
        bad('a date-time', 'invalid_date', '2024-01-31T00:00:00Z'),
        bad('DD/MM/YYYY', 'invalid_date', '31/01/2024'),
        bad('a number', 'invalid_type', 20240131),
      ];
    case 'date-time':
      return [
        ok('a bare date (midnight UTC), an offset, a fraction', '2024-01-31', '2024-01-31T12:00:00+01:00', '2024-01-31T12:00:00.123456Z'),
        bad('no zone', 'invalid_datetime', '2024-01-31T12:00:00'),
        bad('month 13', 'invalid_datetime', '2024-13-01T00:00:00Z'),
        bad('words', 'invalid_datetime', 'yesterday'),
        bad('a number', 'invalid_type', 1706702400),
      ];
    case 'time':
      return [
        ok('HH:MM:SS, HH:MM:SS.f', '23:59:59', '00:00:00.5'),
        bad('hour 24', 'invalid_time', '24:00'),
        bad('a one-digit hour', 'invalid_time', '7:30'),
        bad('a zone', 'invalid_time', '07:30:00Z'),
        bad('a number', 'invalid_type', 730),
      ];
    case 'email': {
      const out = [bad('no @', 'invalid_email', 'someone.example.com'), bad('""', 'invalid_email', ''), bad('a number', 'invalid_type', 5)];
      if (p.maxLength !== undefined) {
        out.push(ok(`an address of exactly ${String(p.maxLength)} characters`, emailOfLength(p.maxLength)));
        out.push(bad(`${String(p.maxLength + 1)} characters`, 'max_length', `${'a'.repeat(p.maxLength - 11)}@example.com`));
      }
      return out;
    }
    case 'decimal':
      return decimalCases(p);
    default:
      return textCases(p);
  }
}

function integerCases(p: ContractProperty): ValueCase[] {
  const out = [bad('a numeric string', 'invalid_type', '1'), bad('a fraction', 'invalid_type', 1.5)];
  if (p.minimum !== undefined) out.push(ok(`the minimum ${String(p.minimum)}`, p.minimum), bad(String(p.minimum - 1), 'min_value', p.minimum - 1));
  if (p.maximum !== undefined) out.push(ok(`the maximum ${String(p.maximum)}`, p.maximum), bad(String(p.maximum + 1), 'max_value', p.maximum + 1));
  return out;
}

/** The values to try at one property (or list item), valid and not, beyond leaving it out. */
function valueCases(p: ContractProperty, at: string, branches: Branches = {}): ValueCase[] {
  const out: ValueCase[] = [ok('a valid value', sample(p, at, branches))];
  // A property without a type takes any JSON value, null included (OpenAPI's nullable needs a type).
  if (isNullable(p) || (!p.ref && p.type === undefined)) out.push(ok('null', null));
  else out.push(bad('null', 'null', null));
  if (p.ref) {
    // One problem inside the referenced schema, to show it surfaces below this property's path.
    const nested = bad(`an undocumented key inside ${p.ref}`, 'unknown_field', { ...minimal(p.ref, branches), [UNDOCUMENTED]: 1 }, UNDOCUMENTED);
    return [...out, bad('a string', 'invalid_type', 'x'), bad('a list', 'invalid_type', []), nested];
  }
  const choices = choicesOf(p, at);
  if (choices) {
    return [...out, ok(`each of its ${String(choices.length)} values`, ...choices), bad('an unlisted value', 'invalid_choice', 'NOT_A_LISTED_VALUE'), bad('a number', 'invalid_type', 1)];
  }
  if (isDeploymentList(p, at)) out.push(ok('a value outside the document list (a deployment list, kept as text)', 'Not In The Published List'));
  switch (p.type) {
    case 'string':
      return [...out, ...stringCases(isDeploymentList(p, at) ? { ...p, maxLength: p.maxLength ?? 255 } : p)];
    case 'integer':
      return [...out, ...integerCases(p)];
    case 'boolean':
      return [...out, ok('false', false), bad('a string', 'invalid_type', 'true'), bad('a number', 'invalid_type', 1)];
    case 'object':
      return [...out, ok('any keys', { any: [1, 'two'] }), bad('a list', 'invalid_type', []), bad('a string', 'invalid_type', '{}')];
    case 'array': {
      const items = p.items as ContractProperty;
      const count = Math.max(p.minItems ?? 1, 1);
      const filled = (item: Json): Json[] => [item, ...Array.from({ length: count - 1 }, () => sample(items, `${at}[]`, branches))];
      out[0] = ok(`${String(count)} valid item(s)`, filled(sample(items, `${at}[]`, branches)));
      out.push(bad('an object', 'invalid_type', {}), bad('""', 'invalid_type', ''));
      if (p.minItems !== undefined && p.minItems > 0) out.push(bad(`${String(p.minItems - 1)} items`, 'min_items', Array.from({ length: p.minItems - 1 }, () => sample(items, `${at}[]`, branches))));
      else out.push(ok('an empty list', []));
      // The item's own constraints, on the first item: problems surface at `<list>.0…`.
      for (const c of valueCases(items, `${at}[]`, branches)) {
        if (c.errors.length === 0) continue;
        out.push({ label: `item 0 ${c.label}`, values: c.values.map((v) => filled(v as Json)), errors: c.errors.map(([code, below]) => [code, below ? `0.${below}` : '0']) });
      }
      return out;
    }
    case undefined:
      return [...out, ok('any JSON value', 'text', 7, false, ['a'], { a: 1 })];
    default:
      throw new Error(`${at}: unknown type ${p.type}`);
  }
}

interface Case {
  title: string;
  schema: string;
  inputs: unknown[];
  expected: string[];
}

const attr = (prefix: string, below: string): string => [prefix, below].filter(Boolean).join('.');

/** Every case for one property, starting from the minimal instance of `schema`. */
function propertyCases(schema: string, property: string, p: ContractProperty, required: boolean): Case[] {
  const at = `${schema}.${property}`;
  const start = minimal(schema);
  const withValue = (v: Json | typeof ABSENT): JsonObject => {
    const out = structuredClone(start);
    if (v === ABSENT) delete out[property];
    else out[property] = v;
    return out;
  };
  const absent: ValueCase = required ? { label: 'left out', values: [ABSENT], errors: [['required', '']] } : ok('left out', ABSENT);
  return merged([absent, ...valueCases(p, at)]).map((c) => ({
    title: `${at}: ${c.label}`,
    schema,
    inputs: c.values.map(withValue),
    expected: c.errors.map(([code, below]) => `${code}@${attr(property, below)}`).sort(),
  }));
}

/** What parsing `instance` with the object schema `branch` must report, from the contract alone. */
function structuralProblems(branch: string, instance: JsonObject): string[] {
  const s = schemaOf(branch);
  const declared = s.properties ?? {};
  const missing = (s.required ?? []).filter((r) => !(r in instance)).map((r) => `required@${r}`);
  const undeclared = Object.keys(instance).filter((k) => !(k in declared)).map((k) => `unknown_field@${k}`);
  return [...missing, ...undeclared].sort();
}

/** The cases of a oneOf: each branch through its key, the discriminator missing, null or unknown. */
function oneOfCases(name: string): Case[] {
  const s = schemaOf(name);
  const discriminator = s.discriminator;
  if (!discriminator) throw new Error(`${name}: a oneOf without discriminator`);
  const d = discriminator.property;
  const out: Case[] = [];
  for (const [key, branch] of Object.entries(discriminator.mapping)) {
    // The key "null" means the discriminator left out or null: the cases after this loop.
    if (key === 'null') continue;
    // The minimal instance of the branch, with the discriminator set to the key that selects it.
    const instance = minimalBranch(name, key);
    const declares = d in (schemaOf(branch).properties ?? {});
    out.push({ title: `${name}: ${d}=${key} selects ${branch}${declares ? '' : `, which does not declare ${d}`}`, schema: name, inputs: [instance], expected: structuralProblems(branch, instance) });
  }
  const first = minimal(name);
  const firstBranch = branchOf(name, first);
  const without = structuredClone(first);
  delete without[d];
  const nullBranch = discriminator.mapping.null;
  out.push({
    title: `${name}: ${d} left out${nullBranch ? ` selects ${nullBranch}` : ''}`,
    schema: name,
    inputs: [without],
    expected: nullBranch ? structuralProblems(nullBranch, without) : [`required@${d}`],
  });
  out.push({
    title: `${name}: ${d} null${nullBranch ? ` selects ${nullBranch}` : ''}`,
    schema: name,
    inputs: [{ ...without, [d]: null }],
    expected: nullBranch ? structuralProblems(nullBranch, { ...without, [d]: null }) : [`null@${d}`],
  });
  out.push({ title: `${name}: ${d} naming no branch`, schema: name, inputs: [{ ...first, [d]: 'NOT_A_BRANCH' }, { ...first, [d]: 99 }], expected: [`invalid_choice@${d}`] });
  // The discriminator, not the shape, picks the branch: an instance of one branch sent with another's
  // key is checked against that other branch. Only pairs whose common properties agree are tried, so
  // the expected problems are exactly the other branch's missing and undeclared properties.
  for (const [key, branch] of selectableBranches(name)) {
    if (key === 'null' || branch === firstBranch) continue;
    const moved = { ...first, [d]: key };
    const mine = schemaOf(firstBranch).properties ?? {};
    const theirs = schemaOf(branch).properties ?? {};
    const agree = Object.keys(moved).every((k) => k === d || !(k in theirs) || JSON.stringify(mine[k]) === JSON.stringify(theirs[k]));
    if (!agree) continue;
    out.push({ title: `${name}: an instance of ${firstBranch} sent with ${d}=${key} is checked as ${branch}`, schema: name, inputs: [moved], expected: structuralProblems(branch, moved) });
  }
  out.push({ title: `${name}: not an object`, schema: name, inputs: ['x', [first]], expected: ['invalid_type@'] });
  // Each title ends with its outcome, which the discriminator's place makes worth spelling out.
  return out.map((c) => ({ ...c, title: `${c.title} → ${c.expected.length === 0 ? 'valid' : c.expected.join(', ')}` }));
}

/** Every case for one schema: the whole instance, then each property. */
function schemaCases(name: string): Case[] {
  const s = schemaOf(name);
  if (s.oneOf) return oneOfCases(name);
  const start = minimal(name);
  const required = new Set(s.required ?? []);
  return [
    { title: `${name}: the minimal instance (required properties only) is valid`, schema: name, inputs: [start], expected: [] },
    { title: `${name}: an undocumented key → unknown_field`, schema: name, inputs: [{ ...start, [UNDOCUMENTED]: 'x' }], expected: [`unknown_field@${UNDOCUMENTED}`] },
    { title: `${name}: not an object → invalid_type`, schema: name, inputs: ['x', [start], 5], expected: ['invalid_type@'] },
    { title: `${name}: null → null`, schema: name, inputs: [null], expected: ['null@'] },
    ...Object.entries(s.properties ?? {}).flatMap(([property, p]) => propertyCases(name, property, p, required.has(property))),
  ];
}

/**
 * Properties deep inside an account, reached through lists and oneOfs, whose cases run through
 * EnergyAccount to prove that paths compose: each problem comes back at the full dotted path.
 */
const DEEP: { path: (string | number)[]; branches?: Branches }[] = [
  { path: ['supply_addresses', 0, 'meter_points', 0, 'meters', 0, 'registers', 0, 'number_of_digits'] },
  { path: ['supply_addresses', 0, 'meter_points', 1, 'meters', 0, 'registers', 1, 'tpr'] },
  { path: ['supply_addresses', 0, 'meter_points', 0, 'supply_start_date'] },
  { path: ['supply_addresses', 1, 'meter_points', 0, 'meters', 0, 'gas_number_of_digits'], branches: { MeterPoint: 'GAS' } },
  { path: ['supply_addresses', 0, 'meter_points', 0, 'shipper_mpid'], branches: { MeterPoint: 'GAS' } },
  { path: ['customers', 0, 'email'] },
  { path: ['customers', 1, 'contact_emails'] },
  { path: ['ledgers', 0, 'current_statement_transactions', 0, 'amount'] },
  { path: ['current_statement_transactions', 0, 'reason'] },
  { path: ['business', 'company_name'] },
  { path: ['payment_preferences', 0, 'ledger_identifier'] },
  { path: ['account_billing_options', 'period_length'] },
];

function deepCases(): Case[] {
  return DEEP.flatMap(({ path, branches = {} }) => {
    const dotted = path.join('.');
    const start = minimal('EnergyAccount', branches);
    const found = place('EnergyAccount', structuredClone(start), path, () => undefined, branches);
    const required = schemaOf(found.schema).required?.includes(found.property) ?? false;
    const at = `${found.schema}.${found.property}`;
    const absent: ValueCase = required ? { label: 'left out', values: [ABSENT], errors: [['required', '']] } : ok('left out', ABSENT);
    return merged([absent, ...valueCases(found.contract, at, branches)]).map((c) => ({
      title: `EnergyAccount › ${dotted} (${at}): ${c.label}`,
      schema: 'EnergyAccount',
      inputs: c.values.map((v) => {
        const input = structuredClone(start);
        place('EnergyAccount', input, path, (holder, property) => {
          if (v === ABSENT) delete holder[property];
          else holder[property] = v;
        }, branches);
        return input;
      }),
      expected: c.errors.map(([code, below]) => `${code}@${attr(dotted, below)}`).sort(),
    }));
  });
}

/** [title, case] rows: vitest shortens a `$title` taken from an object, but prints a `%s` in full. */
const titled = (cases: readonly Case[]): [string, Case][] => cases.map((c) => [c.title, c]);

const names = reachable(ROOTS);
const bySchema = names.map((name) => [name, schemaCases(name)] as const);
const deep = deepCases();

describe('the contract structure, schema by schema (no service rules attached)', () => {
  it('covers every schema and property the five request bodies reach, each with a rejected value', () => {
    const properties = names.flatMap((name) => Object.keys(schemaOf(name).properties ?? {}).map((p) => `${name}.${p}`));
    // The counts test/contract/generated.test.ts pins for EnergyAccount, plus the other four bodies.
    expect({ schemas: names.length, properties: properties.length }).toEqual({ schemas: 106, properties: 689 });
    const rejecting = new Set(bySchema.flatMap(([, cases]) => cases.filter((c) => c.expected.length > 0).map((c) => c.title.slice(0, c.title.indexOf(':')))));
    // Only an optional property without a type takes every input, so only those have no rejecting case.
    const open = names.flatMap((name) => {
      const s = schemaOf(name);
      return Object.entries(s.properties ?? {}).filter(([p, c]) => !c.ref && c.type === undefined && !s.required?.includes(p)).map(([p]) => `${name}.${p}`);
    });
    expect(properties.filter((p) => !rejecting.has(p))).toEqual(open);
  });

  describe.each(bySchema)('%s', (_name, cases) => {
    it.each(titled(cases))('%s', (_title, { schema, inputs, expected }) => {
      for (const input of inputs) expect(problems(schema, input), JSON.stringify(input).slice(0, 300)).toEqual(expected);
    });
  });
});

describe('problems deep inside an account come back at their full path', () => {
  it.each(titled(deep))('%s', (_title, { schema, inputs, expected }) => {
    for (const input of inputs) expect(problems(schema, input), JSON.stringify(input).slice(0, 300)).toEqual(expected);
  });
});
