import { createConfig, lintFromString } from '@redocly/openapi-core';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';

// /openapi.json (issue 13, part 5): what a supplier generates a client from. It passes Redocly's
// recommended rules, except those the published interface's own paths break, and it says what the
// endpoints really take and answer.

let ctx: TestContext;
// The document is walked by path in every test: typed loosely on purpose, as a client's generator reads it.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
let doc: Record<string, any>;

beforeAll(async () => {
  ctx = await createTestContext();
  const res = await ctx.app.inject({ method: 'GET', url: '/openapi.json' });
  expect(res.statusCode).toBe(200);
  doc = res.json();
});
afterAll(async () => ctx?.close());

describe('/openapi.json', () => {
  it('passes the Redocly linter (recommended rules)', async () => {
    const ref = path.resolve('openapi.json');
    const config = await createConfig(
      {
        extends: ['recommended'],
        rules: {
          // Every path of the published interface ends in a slash (/v1/data-import/batches/): they are the contract.
          'no-path-trailing-slash': 'off',
        },
      },
      {
        ignore: {
          [ref]: {
            // The open probes answer 200 or 503 and nothing else: there is no 4xx to document.
            'operation-4xx-response': new Set(['#/paths/~1healthz/get/responses', '#/paths/~1readyz/get/responses']),
            // Used by the upload's NDJSON body (x-item-schema: OpenAPI 3.1 has no item schema for a stream), which the linter does not follow.
            'no-unused-components': new Set(['#/components/schemas/AccountBundle']),
          },
        },
      },
    );
    const problems = await lintFromString({ source: JSON.stringify(doc), absoluteRef: ref, config });
    const shown = problems.filter((p) => !p.ignored).map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location.map((l) => l.pointer).join(', ')}`);
    expect(shown).toEqual([]);
  });

  it('says how to reach the service and how a client gets a token', () => {
    expect(doc.servers).toEqual([expect.objectContaining({ url: '/' })]);
    expect(doc.components.securitySchemes.token).toMatchObject({ type: 'apiKey', in: 'header', name: 'Authorization' });
  });

  it('describes the cohort upload body: NDJSON, one AccountBundle per line', () => {
    const upload = doc.paths['/v1/data-import/batches/'].post;
    expect(upload.requestBody.required).toBe(true);
    expect(Object.keys(upload.requestBody.content)).toEqual(['application/x-ndjson']);
    const ndjson = upload.requestBody.content['application/x-ndjson'];
    expect(ndjson.schema).toMatchObject({ type: 'string' });
    expect(ndjson['x-item-schema']).toEqual({ $ref: '#/components/schemas/AccountBundle' });
    expect(doc.components.schemas.AccountBundle).toMatchObject({ type: 'object', required: ['account'] });
  });

  it('gives the CSV media types beside JSON where the service answers CSV', () => {
    for (const path of ['/v1/data-import/batches/{batch_id}/items/', '/v1/data-import/batches/{batch_id}/reconciliation/']) {
      const ok = doc.paths[path].get.responses['200'];
      expect(Object.keys(ok.content).sort(), path).toEqual(['application/json', 'text/csv']);
      expect(ok.content['text/csv'].schema, path).toMatchObject({ type: 'string' });
    }
  });

  it('describes the transactions 400 as it really is: the envelope, or the interface\'s transaction shape', () => {
    const bad = doc.paths['/v1/data-import/transactions/create/'].post.responses['400'];
    const oneOf = bad.content['application/json'].schema.oneOf as Array<Record<string, unknown>>;
    expect(oneOf).toHaveLength(2);
    expect(oneOf).toContainEqual({ $ref: '#/components/schemas/ErrorEnvelope' });
    expect(oneOf).toContainEqual({ $ref: '#/components/schemas/TransactionImportError' });
    expect(doc.components.schemas.TransactionImportError).toMatchObject({
      type: 'object',
      required: expect.arrayContaining(['status', 'error_detail', 'transaction_data', 'code', 'attr']),
    });
  });

  it('has the v2 routes', () => {
    expect(doc.paths['/v2/data-import/accounts/'].post.operationId).toBe('v2_schedule_account_creation');
    expect(doc.paths['/v2/data-import/accounts/validate/'].post).toBeDefined();
    expect(doc.paths['/v2/data-import/accounts/{import_supplier_code}/{external_identifier}/'].get).toBeDefined();
  });
});

describe('/docs', () => {
  it('renders the reference page from /openapi.json, with its assets served by the service itself', async () => {
    const page = await ctx.app.inject({ method: 'GET', url: '/docs' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.body).toContain('<div id="swagger-ui">');
    for (const asset of ['/docs/swagger-ui.css', '/docs/swagger-ui-bundle.js', '/docs/init.js']) {
      expect(page.body).toContain(asset);
      const res = await ctx.app.inject({ method: 'GET', url: asset });
      expect(res.statusCode, asset).toBe(200);
    }
    const init = await ctx.app.inject({ method: 'GET', url: '/docs/init.js' });
    expect(init.body).toContain("url: '/openapi.json'");
    // No inline script: the page runs under a CSP that allows only the service's own scripts.
    expect(page.body).not.toMatch(/<script>(?!<\/script>)/);
    expect(page.headers['content-security-policy']).toMatch(/script-src 'self'/);
  });
});
