/**
 * Development-time tool: writes src/contract/schemas.generated.ts from data-import.contract.json.
 *
 *   npm run contract:generate
 *
 * The output is plain structure (objects, lists, types, enumerations, bounds, nullability, required
 * sets, discriminated unions) written in the builders of builders.ts; every property, object and list
 * passes through a hook named by its place in the document (`EnergyCustomer.mobile`), which is where
 * this service's rules attach. test/contract/generated.test.ts fails when the committed file and the
 * contract disagree.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { projectRoot } from '../project-root.js';

export interface ContractProperty {
  ref?: string;
  type?: string;
  format?: string;
  enum?: (string | null)[];
  maxLength?: number;
  minLength?: number;
  pattern?: string;
  nullable?: boolean;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  items?: ContractProperty;
  rules?: { codes: string[] }[];
}

export interface ContractSchema {
  type?: string;
  required?: string[];
  properties?: Record<string, ContractProperty>;
  oneOf?: string[];
  discriminator?: { property: string; mapping: Record<string, string> };
  rules?: { codes: string[] }[];
}

export interface Contract {
  roots: string[];
  schemas: Record<string, ContractSchema>;
  source: { repository: string; path: string; commit: string | null; sha256: string };
}

export const CONTRACT_FILE = resolve(projectRoot, 'src/contract/data-import.contract.json');
export const GENERATED_FILE = resolve(projectRoot, 'src/contract/schemas.generated.ts');

export function readContract(): Contract {
  return JSON.parse(readFileSync(CONTRACT_FILE, 'utf8')) as Contract;
}

/** The names of the schemas reachable from `root`, itself included. */
export function reachableSchemas(contract: Contract, root: string): Set<string> {
  const seen = new Set([root]);
  const todo = [root];
  while (todo.length > 0) {
    const s = contract.schemas[todo.pop() as string];
    const refs = s?.oneOf ?? Object.values(s?.properties ?? {}).flatMap((p) => [p.ref, p.items?.ref]);
    for (const r of refs) {
      if (!r || seen.has(r)) continue;
      seen.add(r);
      todo.push(r);
    }
  }
  return seen;
}

/** A TypeScript identifier for a schema name (`Gbr-gas.payment-methodCharacteristic` has dots and dashes). */
export function identifier(name: string): string {
  return name.replace(/[^A-Za-z0-9_]/g, '_');
}

const DECIMAL_PATTERN = /^\^-\?\\d\{0,(\d+)\}\(\?:\\\.\\d\{0,(\d+)\}\)\?\$$/;

function limits(entries: [string, number | undefined][]): string {
  const set = entries.filter(([, v]) => v !== undefined);
  return set.length === 0 ? '' : `{ ${set.map(([k, v]) => `${k}: ${String(v)}`).join(', ')} }`;
}

/**
 * Enumerations of the document that list one deployment's data rather than the interface's: EDF's
 * own import suppliers and marketing campaigns. Here they are plain strings; this service checks
 * suppliers against its own (`import_supplier_not_found`), and the published example account itself
 * sends a supplier and a campaign outside EDF's lists. docs/decisions.md lists them.
 */
export const DEPLOYMENT_ENUMS: Record<string, string> = {
  'AccountNote.import_supplier': 'suppliers',
  'EnergyAccount.import_supplier': 'suppliers',
  'HistoricalStatements.import_supplier': 'suppliers',
  'LegacyPaymentInstruction.import_supplier': 'suppliers',
  'Transactions.import_supplier': 'suppliers',
  'AccountCampaign.campaign_name': 'campaigns',
  'AccountCampaign.slug': 'campaigns',
  // Payment vendors are the deployment's configured vendors (each needs an address and credentials).
  'LegacyPaymentInstruction.vendor': 'payment vendors',
  'PaymentInstruction.vendor': 'payment vendors',
};

/**
 * Enumerations that are each deployment's reference data (decisions §6): transaction reasons and
 * payment types per transaction type, payment-instruction types and vendors. The published lists are
 * written out as PUBLISHED_REFERENCE_VALUES, the seed of the service's reference tables.
 */
export const REFERENCE_ENUMS: Record<string, string> = {
  'EnergyCharge.reason': 'CHARGE_REASON',
  'EnergyCredit.reason': 'CREDIT_REASON',
  'EnergyPayment.reason': 'PAYMENT_REASON',
  'EnergyRepayment.reason': 'REPAYMENT_REASON',
  'EnergyPayment.payment_type': 'PAYMENT_PAYMENT_TYPE',
  'EnergyRepayment.payment_type': 'REPAYMENT_PAYMENT_TYPE',
  'PaymentInstruction.type': 'PAYMENT_INSTRUCTION_TYPE',
  'LegacyPaymentInstruction.type': 'PAYMENT_INSTRUCTION_TYPE',
};

/** The most entries any list of a request may hold where the document gives no maximum (`too_many_items`). */
export const MAX_LIST_ITEMS = 5000;

function base(p: ContractProperty, at: string): string {
  if (p.ref) return identifier(p.ref);
  if (p.enum && at in DEPLOYMENT_ENUMS) return `b.text(${limits([['maxLength', p.maxLength ?? 255]])})`;
  if (p.enum && at in REFERENCE_ENUMS) return `h.reference(${JSON.stringify(REFERENCE_ENUMS[at])})`;
  if (p.enum) return `b.choice(${JSON.stringify(p.enum.filter((v) => v !== null))})`;
  switch (p.type) {
    case 'array': {
      if (!p.items) throw new Error(`${at}: array without items`);
      const item = `h.field(${JSON.stringify(`${at}[]`)}, ${base(p.items, `${at}[]`)})`;
      // Every list is bounded: the document sets no maximum, and an unbounded one would let a single
      // request carry work (and positions) past what one account can hold (decisions §7's spirit).
      const l = limits([['minItems', p.minItems], ['maxItems', p.maxItems ?? MAX_LIST_ITEMS]]);
      return `b.array(${item}${l ? `, ${l}` : ''})`;
    }
    case 'string':
      switch (p.format) {
        case 'date':
          return 'b.date()';
        case 'date-time':
          return 'b.datetime()';
        case 'time':
          return 'b.time()';
        case 'email':
          return `b.emailAddress(${limits([['maxLength', p.maxLength]])})`;
        case 'decimal': {
          const m = DECIMAL_PATTERN.exec(p.pattern ?? '');
          if (!m) throw new Error(`${at}: decimal pattern not understood: ${String(p.pattern)}`);
          return `b.decimal({ integerDigits: ${String(Number(m[1]))}, fractionDigits: ${String(Number(m[2]))} })`;
        }
        case undefined:
          if (p.pattern) throw new Error(`${at}: string pattern not supported: ${p.pattern}`);
          return `b.text(${limits([['maxLength', p.maxLength], ['minLength', p.minLength]])})`;
        default:
          throw new Error(`${at}: unknown string format ${p.format}`);
      }
    case 'integer':
      return `b.integer(${limits([['minimum', p.minimum], ['maximum', p.maximum]])})`;
    case 'boolean':
      return 'b.boolean()';
    case 'object':
      return 'b.jsonObject()';
    case undefined:
      return 'b.anyValue()';
    default:
      throw new Error(`${at}: unknown type ${p.type}`);
  }
}

function property(name: string, p: ContractProperty, schema: string, required: boolean): string {
  const at = `${schema}.${name}`;
  const hooked = `h.field(${JSON.stringify(at)}, ${base(p, at)})`;
  const nullable = p.nullable === true || (p.enum?.includes(null) ?? false);
  if (required) return nullable ? `b.nullable(${hooked})` : hooked;
  return nullable ? `b.optionalNullable(${hooked})` : `b.optional(${hooked})`;
}

function dependencies(s: ContractSchema): string[] {
  if (s.oneOf) return s.oneOf;
  const out: string[] = [];
  const walk = (p: ContractProperty | undefined): void => {
    if (!p) return;
    if (p.ref) out.push(p.ref);
    walk(p.items);
  };
  Object.values(s.properties ?? {}).forEach(walk);
  return out;
}

/** Schema names, each after everything it refers to (the document has no cycles; one would throw). */
function ordered(contract: Contract): string[] {
  const done = new Set<string>();
  const visiting = new Set<string>();
  const out: string[] = [];
  const visit = (name: string): void => {
    if (done.has(name)) return;
    if (visiting.has(name)) throw new Error(`cycle through ${name}`);
    const s = contract.schemas[name];
    if (!s) throw new Error(`unknown schema ${name}`);
    visiting.add(name);
    dependencies(s).forEach(visit);
    visiting.delete(name);
    done.add(name);
    out.push(name);
  };
  Object.keys(contract.schemas).sort().forEach(visit);
  return out;
}

/**
 * What the document's own example payloads send beyond its schemas (decisions §1): `ledgers` on the
 * account, each with its statement transactions and balances, and `reference` on charges, credits
 * and supply charges (payments and repayments already have it). Applied to a copy of the contract.
 */
export function withExampleExtensions(contract: Contract): Contract {
  const schemas = structuredClone(contract.schemas);
  const get = (name: string): ContractSchema => {
    const s = schemas[name];
    if (!s?.properties) throw new Error(`example extension: no object schema ${name}`);
    return s;
  };
  const account = get('EnergyAccount').properties ?? {};
  const pick = (names: string[]) => Object.fromEntries(names.map((n) => [n, structuredClone(account[n] as ContractProperty)]));
  const ledger = get('Ledger');
  schemas.ExampleLedger = {
    type: 'object',
    // The example's ledger names no ledger_code: it is the account's main ledger.
    required: [],
    properties: {
      ...structuredClone(ledger.properties),
      ...pick(['current_statement_transactions', 'historical_statement_transactions', 'last_statement_balance', 'last_statement_closing_date', 'last_statement_issue_date']),
      ledger_balance: structuredClone(account.transfer_balance as ContractProperty),
    },
  };
  account.ledgers = { type: 'array', items: { ref: 'ExampleLedger' } };
  for (const name of ['EnergyCharge', 'EnergyCredit', 'EnergySupplyCharge']) {
    const props = get(name).properties ?? {};
    props.reference = structuredClone(get('EnergyPayment').properties?.reference as ContractProperty);
  }
  for (const s of Object.values(schemas)) {
    if (s.properties) s.properties = Object.fromEntries(Object.keys(s.properties).sort().map((k) => [k, s.properties?.[k] as ContractProperty]));
  }
  return { ...contract, schemas };
}

export function generate(contract: Contract): string {
  const lines: string[] = [
    '// Generated by src/contract/generate.ts from src/contract/data-import.contract.json',
    `// (${contract.source.repository}, ${contract.source.path}, sha256 ${contract.source.sha256.slice(0, 12)}).`,
    '// Do not edit: run `npm run contract:generate`.',
    "import * as b from './builders.js';",
    "import type { ContractHooks } from './builders.js';",
    '',
    '/** Every request schema of the published document, with this service\'s rules attached through `h`. */',
    'export function buildContractSchemas(h: ContractHooks) {',
  ];
  const names = ordered(contract);
  for (const name of names) {
    const s = contract.schemas[name] as ContractSchema;
    const id = identifier(name);
    if (s.oneOf && s.discriminator) {
      const entries = Object.entries(s.discriminator.mapping).map(([k, v]) => `${JSON.stringify(k)}: ${identifier(v)}`);
      lines.push(`  const ${id} = h.field(${JSON.stringify(name)}, b.oneOf(${JSON.stringify(s.discriminator.property)}, { ${entries.join(', ')} }));`);
      continue;
    }
    const required = new Set(s.required ?? []);
    lines.push(`  const ${id} = h.object(${JSON.stringify(name)}, {`);
    for (const [prop, p] of Object.entries(s.properties ?? {})) {
      lines.push(`    ${JSON.stringify(prop)}: ${property(prop, p, name, required.has(prop))},`);
    }
    lines.push('  });');
  }
  lines.push(`  return { ${names.map((n) => (identifier(n) === n ? n : `${JSON.stringify(n)}: ${identifier(n)}`)).join(', ')} };`);
  lines.push('}', '', 'export type ContractSchemas = ReturnType<typeof buildContractSchemas>;', '');
  lines.push('/** The published values of the enumerations that are reference data (decisions §6), by kind. */');
  lines.push('export const PUBLISHED_REFERENCE_VALUES = {');
  const seeded = new Set<string>();
  for (const [at, kind] of Object.entries(REFERENCE_ENUMS)) {
    const [schema, prop] = at.split('.') as [string, string];
    const values = contract.schemas[schema]?.properties?.[prop]?.enum;
    if (!values) throw new Error(`${at}: no enumeration to seed ${kind}`);
    if (seeded.has(kind)) continue;
    seeded.add(kind);
    lines.push(`  ${kind}: ${JSON.stringify(values.filter((v) => v !== null))},`);
  }
  lines.push('} as const;', '');
  return lines.join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  writeFileSync(GENERATED_FILE, generate(withExampleExtensions(readContract())));
  console.log(`written ${GENERATED_FILE}`);
}
