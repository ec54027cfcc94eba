import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';
import { projectRoot } from '../../src/project-root.js';

/** The published document the generated client is made from (provenance: test/fixtures/published/README.md). */
export const PUBLISHED_DOCUMENT = path.join(projectRoot, 'test/fixtures/published/openapi.yml');

type Schema = Record<string, unknown>;

const isObj = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);
const SCHEMAS = '#/components/schemas/';
const ID = 'published.json';

/**
 * An OpenAPI 3.0 schema as JSON Schema (draft-07, Ajv's default):
 * - `nullable: true` admits null (`type: [t, 'null']`, null added to an `enum`; `anyOf` with null where there is no `type`);
 * - a `discriminator` with a `mapping` picks the one schema its property names, as OpenAPI says, instead
 *   of plain `oneOf` (the five transaction schemas all list every type, so more than one would match);
 * - `$ref`s to components point into the one registered document.
 */
function toJsonSchema(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(toJsonSchema);
  if (!isObj(v)) return v;
  const out: Schema = {};
  for (const [k, x] of Object.entries(v)) {
    if (k === 'example' || k === 'examples') continue;
    if (k === 'properties' && isObj(x)) out[k] = Object.fromEntries(Object.entries(x).map(([p, s]) => [p, toJsonSchema(s)]));
    else if (k === '$ref' && typeof x === 'string' && x.startsWith(SCHEMAS)) out[k] = `${ID}#/$defs/${x.slice(SCHEMAS.length)}`;
    else if (k === 'nullable' || k === 'discriminator' || k.startsWith('x-')) continue;
    else out[k] = toJsonSchema(x);
  }
  const d = v.discriminator;
  if (isObj(d) && typeof d.propertyName === 'string' && isObj(d.mapping) && Array.isArray(v.oneOf)) {
    const prop = d.propertyName;
    const mapping = Object.entries(d.mapping) as Array<[string, string]>;
    delete out.oneOf;
    out.type = 'object';
    out.required = [prop];
    out.properties = { [prop]: { enum: mapping.map(([value]) => value) } };
    out.allOf = mapping.map(([value, ref]) => ({ if: { properties: { [prop]: { const: value } } }, then: { $ref: `${ID}#/$defs/${ref.slice(SCHEMAS.length)}` } }));
  }
  if (v.nullable === true) {
    if (typeof out.type === 'string') out.type = [out.type, 'null'];
    else if (out.type === undefined) return { anyOf: [out, { type: 'null' }] };
    if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...(out.enum as unknown[]), null];
  }
  return out;
}

export interface PublishedDocument {
  /** The document as read (YAML 1.2 core reads every schema of it as PyYAML, its writer, does; only examples differ, see src/contract/extract.ts). */
  raw: Schema;
  /** Ajv's errors for `body` against the response schema of `method path` with `status` (application/json); [] when it conforms. */
  check(method: string, path: string, status: number, body: unknown): ErrorObject[];
}

export function loadPublishedDocument(file = PUBLISHED_DOCUMENT): PublishedDocument {
  const raw = parse(readFileSync(file, 'utf8')) as Schema;
  const components = (raw.components as Schema).schemas as Schema;
  const ajv = new Ajv({ allErrors: true, strict: true, strictRequired: false, strictTypes: false, allowUnionTypes: true });
  // ajv-formats is CommonJS: under NodeNext its default import is module.exports, whose `default` is the plugin.
  addFormats.default(ajv);
  // Money and quantities are decimal strings; their `pattern` bounds the digits.
  ajv.addFormat('decimal', /^-?(?:\d+(?:\.\d*)?|\.\d+)$/);
  ajv.addSchema({ $id: ID, $defs: Object.fromEntries(Object.entries(components).map(([n, s]) => [n, toJsonSchema(s)])) });
  const compiled = new Map<string, ValidateFunction>();
  return {
    raw,
    check(method, p, status, body) {
      const key = `${method.toLowerCase()} ${p} ${status}`;
      let validate = compiled.get(key);
      if (!validate) {
        const op = ((raw.paths as Schema)[p] as Schema | undefined)?.[method.toLowerCase()] as Schema | undefined;
        const response = (op?.responses as Schema | undefined)?.[String(status)] as Schema | undefined;
        const schema = ((response?.content as Schema | undefined)?.['application/json'] as Schema | undefined)?.schema;
        if (!schema) throw new Error(`the published document has no JSON response for ${key}`);
        validate = ajv.compile(toJsonSchema(schema) as Schema);
        compiled.set(key, validate);
      }
      return validate(body) ? [] : [...(validate.errors ?? [])];
    },
  };
}
