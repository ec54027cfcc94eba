import { z } from 'zod';
import { errorEnvelopeSchema } from './envelope.js';
import type { RouteDef } from './route.js';

type JsonSchema = Record<string, unknown>;

/**
 * Builds the OpenAPI 3.1 document from the same route definitions and zod schemas the service
 * runs on, so suppliers can generate clients that cannot drift from the server.
 */
export function buildOpenApi(routes: readonly RouteDef[], version: string): Record<string, unknown> {
  const components: Record<string, JsonSchema> = {};
  /**
   * zod puts schemas that carry an id into `$defs` behind a `$ref`; those move to
   * components/schemas. Where a request (input) shape differs from the response (output) shape
   * of the same id, the input one is stored as `<id>Input`.
   */
  const toSchema = (schema: z.ZodType, io: 'input' | 'output'): JsonSchema => {
    const json = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;
    delete json.$schema;
    const defs = (json.$defs ?? {}) as Record<string, JsonSchema>;
    delete json.$defs;
    const names = new Map<string, string>();
    for (const [name, def] of Object.entries(defs)) {
      const clash = components[name] !== undefined && JSON.stringify(components[name]) !== JSON.stringify(def);
      names.set(name, clash && io === 'input' ? `${name}Input` : name);
    }
    const rewrite = (v: JsonSchema): JsonSchema =>
      JSON.parse(JSON.stringify(v).replace(/"#\/\$defs\/([^"]+)"/g, (_m, n: string) => `"#/components/schemas/${names.get(n) ?? n}"`)) as JsonSchema;
    for (const [name, def] of Object.entries(defs)) {
      const clean = rewrite(def);
      delete clean.id;
      components[names.get(name)!] = clean;
    }
    return rewrite(json);
  };
  const envelopeRef = toSchema(errorEnvelopeSchema, 'output');

  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const path = r.url.replace(/:([A-Za-z_]+)/g, '{$1}');
    const parameters: unknown[] = [];
    for (const [where, schema] of [['path', r.params], ['query', r.query]] as const) {
      if (!schema) continue;
      const shape = (schema as z.ZodObject).shape as Record<string, z.ZodType> | undefined;
      for (const [name, s] of Object.entries(shape ?? {})) {
        parameters.push({ name, in: where, required: where === 'path' || !s.safeParse(undefined).success, schema: toSchema(s, 'input') });
      }
    }
    const responses: Record<string, unknown> = {};
    for (const [status, spec] of Object.entries(r.responses)) {
      const isError = Number(status) >= 400;
      const schema = spec.oneOf
        ? { oneOf: spec.oneOf.map((s) => toSchema(s, 'output')) }
        : spec.schema
          ? toSchema(spec.schema, 'output')
          : isError
            ? envelopeRef
            : undefined;
      const alternatives = Object.entries(spec.alternatives ?? {}).map(([type, description]) => [type, { schema: { type: 'string', description } }] as const);
      responses[status] = {
        description: spec.description,
        ...(spec.headers ? { headers: Object.fromEntries(Object.entries(spec.headers).map(([h, d]) => [h, { description: d, schema: { type: 'string' } }])) } : {}),
        ...(schema ? { content: { 'application/json': { schema }, ...Object.fromEntries(alternatives) } } : {}),
      };
    }
    const body = r.body
      ? { required: true, content: { 'application/json': { schema: toSchema(r.body, 'input') } } }
      : r.streamBody
        ? {
            required: true,
            description: r.streamBody.description,
            content: {
              // OpenAPI 3.1 has no schema for a stream of items (3.2's itemSchema): the item's schema is named beside it.
              [r.streamBody.mediaType]: { schema: { type: 'string', description: r.streamBody.description }, 'x-item-schema': toSchema(r.streamBody.itemSchema, 'input') },
            },
          }
        : undefined;
    paths[path] ??= {};
    paths[path][r.method.toLowerCase()] = {
      operationId: r.operationId,
      summary: r.summary,
      tags: r.tags,
      ...(r.auth === 'token' ? { security: [{ token: [] }] } : { security: [] }),
      ...(parameters.length ? { parameters } : {}),
      ...(body ? { requestBody: body } : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Account migration data-import service',
      version,
      description: 'Tokens come from the GraphQL mutation ObtainToken at /v1/graphql/ (see docs/decisions.md).',
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [{ url: '/', description: 'This service, wherever it is deployed' }],
    paths,
    components: {
      schemas: components,
      securitySchemes: { token: { type: 'apiKey', in: 'header', name: 'Authorization', description: 'Token <access token>' } },
    },
  };
}
