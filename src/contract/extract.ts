/**
 * Development-time tool: reads the published data-import OpenAPI document and writes the facts this
 * service's request schemas are generated from (src/contract/data-import.contract.json), plus the
 * document's example request payloads (test/fixtures/published/).
 *
 * Only interface facts are kept: names, types, formats, enumerations, lengths, patterns, bounds,
 * nullability, required sets, discriminators and the error codes each `x-validators` rule can raise.
 * The document's prose (descriptions, rule names, enum labels) is left behind on purpose.
 *
 *   npm run contract:extract -- /path/to/edf-energy-kraken-data-import-openapi.yml [commit]
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse, type ScalarTag, type Tags } from 'yaml';
import { projectRoot } from '../project-root.js';

/** The request schemas this service accepts, and so generates validation for. */
export const CONTRACT_ROOTS = [
  'EnergyAccount',
  'Transactions',
  'AccountNote',
  'HistoricalStatements',
  'LegacyPaymentInstruction',
  'ScheduleAccountCreation',
] as const;

const KEPT = ['type', 'format', 'enum', 'maxLength', 'minLength', 'pattern', 'nullable', 'minimum', 'maximum', 'minItems', 'maxItems', 'default', 'deprecated'] as const;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function refName(ref: unknown): string {
  if (typeof ref !== 'string' || !ref.startsWith('#/components/schemas/')) throw new Error(`Unsupported $ref ${String(ref)}`);
  return ref.slice('#/components/schemas/'.length);
}

function rulesOf(node: Obj): { codes: string[] }[] | undefined {
  const validators = node['x-validators'];
  if (!Array.isArray(validators) || validators.length === 0) return undefined;
  return validators.map((v) => {
    if (!isObj(v) || !Array.isArray(v.possible_errors)) throw new Error('x-validators entry without possible_errors');
    return { codes: v.possible_errors.map(String) };
  });
}

/** One property (or array item) reduced to its facts. */
function property(node: Obj): Obj {
  const out: Obj = {};
  if (typeof node.$ref === 'string') out.ref = refName(node.$ref);
  if (Array.isArray(node.allOf)) {
    const only = node.allOf[0];
    if (node.allOf.length !== 1 || !isObj(only) || typeof only.$ref !== 'string') throw new Error('allOf other than a single $ref');
    out.ref = refName(only.$ref);
  }
  for (const key of KEPT) if (key in node) out[key] = node[key];
  if (isObj(node.items)) out.items = property(node.items);
  const rules = rulesOf(node);
  if (rules) out.rules = rules;
  return out;
}

function schema(node: Obj): Obj {
  const out: Obj = {};
  if (Array.isArray(node.oneOf)) {
    const disc = node.discriminator;
    if (!isObj(disc) || !isObj(disc.mapping)) throw new Error('oneOf without a discriminator mapping');
    out.oneOf = node.oneOf.map((o) => (isObj(o) ? refName(o.$ref) : ''));
    out.discriminator = {
      property: disc.propertyName,
      // YAML reads the key `null` as an empty key; it means "absent or null".
      mapping: Object.fromEntries(Object.entries(disc.mapping).map(([k, v]) => [k === '' ? 'null' : k, refName(v)])),
    };
  } else {
    out.type = node.type ?? 'object';
    out.required = Array.isArray(node.required) ? [...node.required].map(String).sort() : [];
    const props = isObj(node.properties) ? node.properties : {};
    out.properties = Object.fromEntries(Object.keys(props).sort().map((k) => [k, property(props[k] as Obj)]));
  }
  const rules = rulesOf(node);
  if (rules) out.rules = rules;
  return out;
}

function referenced(node: unknown, into: Set<string>): void {
  if (Array.isArray(node)) node.forEach((n) => referenced(n, into));
  else if (isObj(node)) {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref') into.add(refName(v));
      else referenced(v, into);
    }
  }
}

function closure(schemas: Obj, roots: readonly string[]): string[] {
  const seen = new Set<string>(roots);
  const todo = [...roots];
  while (todo.length > 0) {
    const name = todo.pop() as string;
    const refs = new Set<string>();
    referenced(schemas[name], refs);
    for (const r of refs) {
      if (seen.has(r)) continue;
      seen.add(r);
      todo.push(r);
    }
  }
  return [...seen].sort();
}

/** Sorted keys, two-space indent, trailing newline: stable output for review and diffs. */
function stable(value: unknown): Json {
  if (Array.isArray(value)) return value.map(stable);
  if (isObj(value)) return Object.fromEntries(Object.keys(value).sort().map((k) => [k, stable(value[k])]));
  return value as Json;
}

/**
 * The document was written by PyYAML (the emitter of the Python service that serves it), which quotes
 * a string only where its own YAML 1.1 resolver would read something else. The yaml package's 1.1
 * schema is broader in two places, and would turn `0393` (an SSC) and `07123456789` (a phone number)
 * into numbers and the reading-cycle code `N` into false. This narrows both tags to PyYAML's reading.
 */
const PYYAML_TESTS: Record<string, Record<string, RegExp>> = {
  'tag:yaml.org,2002:int': { '^[-+]?[0-9][0-9_]*$': /^[-+]?(?:0|[1-9][0-9_]*)$/ },
  'tag:yaml.org,2002:bool': {
    '^(?:Y|y|[Yy]es|YES|[Tt]rue|TRUE|[Oo]n|ON)$': /^(?:[Yy]es|YES|[Tt]rue|TRUE|[Oo]n|ON)$/,
    '^(?:N|n|[Nn]o|NO|[Ff]alse|FALSE|[Oo]ff|OFF)$': /^(?:[Nn]o|NO|[Ff]alse|FALSE|[Oo]ff|OFF)$/,
  },
};

function asPyYaml(tags: Tags): Tags {
  return tags.map((tag) => {
    if (typeof tag === 'string' || !(tag.test instanceof RegExp)) return tag;
    const narrower = PYYAML_TESTS[tag.tag]?.[tag.test.source];
    return narrower ? ({ ...tag, test: narrower } as ScalarTag) : tag;
  });
}

const EXAMPLES: Record<string, string> = {
  '/v2/data-import/accounts/': 'account.json',
  '/v1/data-import/transactions/create/': 'transactions.json',
  '/v1/data-import/notes/create/': 'notes.json',
  '/v1/data-import/historical-statements/create/': 'historical-statements.json',
  '/v1/data-import/payment-instruction/create/': 'payment-instruction.json',
};

function main(): void {
  const [file, commit] = process.argv.slice(2);
  if (!file) {
    console.error('usage: npm run contract:extract -- <openapi.yml> [commit]');
    process.exit(2);
  }
  const text = readFileSync(file, 'utf8');
  const doc = parse(text, { version: '1.1', customTags: asPyYaml }) as Obj;
  const schemas = (doc.components as Obj).schemas as Obj;
  const names = closure(schemas, CONTRACT_ROOTS);
  const contract = {
    source: {
      repository: 'api-evangelist/edf-energy',
      path: 'openapi/edf-energy-kraken-data-import-openapi.yml',
      commit: commit ?? null,
      sha256: createHash('sha256').update(text).digest('hex'),
    },
    roots: [...CONTRACT_ROOTS],
    schemas: Object.fromEntries(names.map((n) => [n, schema(schemas[n] as Obj)])),
  };
  const root = projectRoot;
  writeFileSync(resolve(root, 'src/contract/data-import.contract.json'), `${JSON.stringify(stable(contract), null, 2)}\n`);
  const paths = doc.paths as Obj;
  for (const [path, out] of Object.entries(EXAMPLES)) {
    const content = ((((paths[path] as Obj).post as Obj).requestBody as Obj).content as Obj)['application/json'] as Obj;
    const example = ((content.examples as Obj).ExamplePayload as Obj).value;
    writeFileSync(resolve(root, 'test/fixtures/published', out), `${JSON.stringify(example, null, 2)}\n`);
  }
  console.log(`${String(names.length)} schemas written to src/contract/data-import.contract.json`);
}

main();
