import {
  DEPLOYMENT_ENUMS,
  REFERENCE_ENUMS,
  readContract,
  withExampleExtensions,
  type Contract,
  type ContractProperty,
  type ContractSchema,
} from '../../src/contract/generate.js';

import { seededReferenceData } from '../../src/imports/reference/reference.service.js';

// Builds, from the contract alone, the smallest instances its schemas accept. The constraint suite
// starts every case from one of these, so that the only problem in the input is the one it plants.

/** The contract as the generated schemas see it: the document plus what its own examples send. */
export const contract: Contract = withExampleExtensions(readContract());

/** The request bodies the constraint suite covers (ScheduleAccountCreation is not one of them). */
export const ROOTS = ['EnergyAccount', 'Transactions', 'AccountNote', 'HistoricalStatements', 'LegacyPaymentInstruction'] as const;

/** A branch choice for oneOf schemas met on the way, by schema name: `{ MeterPoint: 'GAS' }`. */
export type Branches = Readonly<Record<string, string>>;

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export function schemaOf(name: string): ContractSchema {
  const s = contract.schemas[name];
  if (!s) throw new Error(`no schema ${name} in the contract`);
  return s;
}

/** Every schema reachable from `roots`, roots included, sorted by name. */
export function reachable(roots: readonly string[]): string[] {
  const seen = new Set(roots);
  const todo = [...roots];
  while (todo.length > 0) {
    const s = schemaOf(todo.pop() as string);
    const refs = s.oneOf ?? Object.values(s.properties ?? {}).flatMap((p) => [p.ref, p.items?.ref]);
    for (const r of refs) {
      if (!r || seen.has(r)) continue;
      seen.add(r);
      todo.push(r);
    }
  }
  return [...seen].sort();
}

export function isNullable(p: ContractProperty): boolean {
  return p.nullable === true || (p.enum?.includes(null) ?? false);
}

/**
 * The values an enumerated property accepts, or undefined when it is free text: not enumerated, or
 * one of the deployment lists (suppliers, campaigns) the generator turns into plain strings.
 */
export function choicesOf(p: ContractProperty, at: string): string[] | undefined {
  if (!p.enum || at in DEPLOYMENT_ENUMS) return undefined;
  // A reference list (decisions §6) accepts what the deployment holds: here, the seed's values in use.
  const kind = REFERENCE_ENUMS[at];
  if (kind !== undefined) return [...seeded.values(kind)];
  return p.enum.filter((v): v is string => v !== null);
}

const seeded = seededReferenceData();

/** `at` names a deployment list: text up to 255 characters, whatever the document enumerates. */
export function isDeploymentList(p: ContractProperty, at: string): boolean {
  return p.enum !== undefined && at in DEPLOYMENT_ENUMS;
}

const DECIMAL_PATTERN = /^\^-\?\\d\{0,(\d+)\}\(\?:\\\.\\d\{0,(\d+)\}\)\?\$$/;

/** The integer and fraction digits a decimal's pattern `^-?\d{0,I}(?:\.\d{0,F})?$` allows. */
export function decimalDigits(p: ContractProperty): { integer: number; fraction: number } {
  const m = DECIMAL_PATTERN.exec(p.pattern ?? '');
  if (!m) throw new Error(`decimal pattern not understood: ${String(p.pattern)}`);
  return { integer: Number(m[1]), fraction: Number(m[2]) };
}

/** A short decimal within the limits: `1.25`, or fewer digits where the pattern allows fewer. */
export function sampleDecimal(p: ContractProperty): string {
  const { integer, fraction } = decimalDigits(p);
  return `${integer > 0 ? '1' : '0'}${fraction > 0 ? `.${'25'.slice(0, fraction)}` : ''}`;
}

/** A text of the smallest length that is not blank and within the bounds. */
export function sampleText(p: ContractProperty): string {
  const length = Math.min(Math.max(p.minLength ?? 1, 1), p.maxLength ?? Number.POSITIVE_INFINITY);
  return 'x'.repeat(length);
}

export const SAMPLE = {
  date: '2024-01-31',
  datetime: '2024-01-31T12:00:00Z',
  time: '07:30',
  email: 'someone@example.com',
  text: 'x',
} as const;

/** A valid value for one property (or list item); `at` is its place, `Schema.property`. */
export function sample(p: ContractProperty, at: string, branches: Branches = {}): Json {
  if (p.ref) return minimal(p.ref, branches);
  const choices = choicesOf(p, at);
  if (choices) {
    const first = choices[0];
    if (first === undefined) throw new Error(`${at}: an enumeration without values`);
    return first;
  }
  switch (p.type) {
    case 'array': {
      if (!p.items) throw new Error(`${at}: a list without items`);
      const item = p.items;
      return Array.from({ length: p.minItems ?? 0 }, () => sample(item, `${at}[]`, branches));
    }
    case 'string':
      switch (p.format) {
        case 'date':
          return SAMPLE.date;
        case 'date-time':
          return SAMPLE.datetime;
        case 'time':
          return SAMPLE.time;
        case 'email':
          return SAMPLE.email;
        case 'decimal':
          return sampleDecimal(p);
        default:
          return sampleText(p);
      }
    case 'integer':
      return Math.min(Math.max(p.minimum ?? 1, 1), p.maximum ?? Number.POSITIVE_INFINITY);
    case 'boolean':
      return true;
    case 'object':
      return {};
    case undefined:
      return SAMPLE.text;
    default:
      throw new Error(`${at}: unknown type ${p.type}`);
  }
}

/**
 * The mapping entries of a oneOf a payload can actually select: a key the branch declares as a
 * property, or the key "null" (the discriminator left out). A key the branch does not declare can
 * select it only by sending a field the branch then refuses as undocumented.
 */
export function selectableBranches(name: string): [key: string, branch: string][] {
  const s = schemaOf(name);
  if (!s.discriminator) throw new Error(`${name} is not a oneOf`);
  const property = s.discriminator.property;
  return Object.entries(s.discriminator.mapping).filter(([key, branch]) => key === 'null' || property in (schemaOf(branch).properties ?? {}));
}

/** The object schema a oneOf instance is parsed with, by the value of its discriminator. */
export function branchOf(name: string, instance: JsonObject): string {
  const s = schemaOf(name);
  if (!s.discriminator) return name;
  const raw = instance[s.discriminator.property];
  const branch = s.discriminator.mapping[raw === undefined || raw === null ? 'null' : String(raw)];
  if (!branch) throw new Error(`${name}: no branch for ${String(raw)}`);
  return branch;
}

/** A oneOf instance of the branch selected by `key` (the discriminator omitted for "null"). */
export function minimalBranch(name: string, key: string, branches: Branches = {}): JsonObject {
  const s = schemaOf(name);
  const branch = s.discriminator?.mapping[key];
  if (!s.discriminator || !branch) throw new Error(`${name}: no branch ${key}`);
  const out = minimal(branch, branches);
  if (key === 'null') delete out[s.discriminator.property];
  else out[s.discriminator.property] = key;
  return out;
}

/**
 * The smallest valid instance of a schema: its required properties only, each a valid sample. A
 * oneOf takes the branch `branches` names for it, else the first one a payload can select.
 */
export function minimal(name: string, branches: Branches = {}): JsonObject {
  const s = schemaOf(name);
  if (s.oneOf) {
    const key = branches[name] ?? selectableBranches(name)[0]?.[0];
    if (key === undefined) throw new Error(`${name}: no selectable branch`);
    return minimalBranch(name, key, branches);
  }
  const out: JsonObject = {};
  for (const prop of s.required ?? []) {
    const p = s.properties?.[prop];
    if (!p) throw new Error(`${name}: required ${prop} is not a property`);
    out[prop] = sample(p, `${name}.${prop}`, branches);
  }
  return out;
}

/** Where `place` ended: the object schema holding the property, and the property. */
export interface Placed {
  schema: string;
  property: string;
  contract: ContractProperty;
}

/**
 * Walks `path` (property names, and list indexes after list properties) from an instance of `name`,
 * filling in whatever lies on the way with valid samples, and returns the last property's place.
 * `set` then receives the object holding that property, to change it as a case requires.
 */
export function place(name: string, instance: JsonObject, path: readonly (string | number)[], set: (holder: JsonObject, property: string) => void, branches: Branches = {}): Placed {
  let schema = name;
  let holder = instance;
  for (let i = 0; i < path.length; i++) {
    const branch = branchOf(schema, holder);
    const property = path[i];
    if (typeof property !== 'string') throw new Error(`${path.join('.')}: expected a property at ${String(i)}`);
    const p = schemaOf(branch).properties?.[property];
    if (!p) throw new Error(`${path.join('.')}: ${branch} has no property ${property}`);
    const at = `${branch}.${property}`;
    if (i === path.length - 1) {
      set(holder, property);
      return { schema: branch, property, contract: p };
    }
    if (holder[property] === undefined || holder[property] === null) holder[property] = p.type === 'array' ? [] : sample(p, at, branches);
    let next = holder[property];
    let target = p.ref;
    if (p.type === 'array') {
      const index = path[++i];
      if (typeof index !== 'number' || !Array.isArray(next) || !p.items) throw new Error(`${path.join('.')}: expected a list index after ${property}`);
      while (next.length <= index) next.push(sample(p.items, `${at}[]`, branches));
      next = next[index] as Json;
      target = p.items.ref;
    }
    if (!target || typeof next !== 'object' || next === null || Array.isArray(next)) throw new Error(`${path.join('.')}: ${property} does not lead to an object`);
    schema = target;
    holder = next;
  }
  throw new Error('place: an empty path');
}
