import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setSupplierDefaultTeam } from '../../src/imports/suppliers/supplier.service.js';
import { createApiKey } from '../../src/auth/api-keys.js';
import { accountPayload } from '../helpers/fixtures.js';
import { createExtrasHarness, S, TEAM, URLS, VENDOR, type ExtrasHarness } from '../http/extras/setup.js';

/**
 * An API key created with `--supplier` reaches only those suppliers. For every other supplier,
 * every data-import and batch route answers exactly what it answers for a supplier that does not
 * exist (same status, code, errors and attrs; the detail names what the client sent), so a
 * scoped key can neither read nor write another supplier's data, nor learn that it exists.
 */
const OTHER = 'OTHER_CO';
const GHOST = 'NO_SUCH_CO';

let h: ExtrasHarness;
let scoped: { authorization: string };
let otherBatch: string;

async function tokenFor(key: string): Promise<{ authorization: string }> {
  const res = await h.ctx.app.inject({
    method: 'POST',
    url: '/v1/graphql/',
    payload: { query: 'mutation($i: ObtainJSONWebTokenInput!) { obtainKrakenToken(input: $i) { token } }', variables: { i: { APIKey: key } } },
  });
  return { authorization: `Token ${(res.json() as { data: { obtainKrakenToken: { token: string } } }).data.obtainKrakenToken.token}` };
}

const ndjson = (supplier: string, ext: string) => `${JSON.stringify({ account: accountPayload(supplier, ext) })}\n`;

beforeAll(async () => {
  h = await createExtrasHarness();
  await h.ctx.createSupplier(OTHER);
  await h.importAccount('MINE-1');
  await h.importAccount('THEIRS-1', {}, OTHER);
  await h.stageAccount('THEIRS-2', {}, OTHER);
  scoped = await tokenFor((await createApiKey(h.ctx.deps.db, 'scoped-to-main', [S])).key);
  const upload = await h.ctx.app.inject({
    method: 'POST',
    url: `/v1/data-import/batches/?import_supplier=${OTHER}&operations_team_name=${encodeURIComponent(TEAM)}`,
    headers: { ...h.auth, 'content-type': 'application/x-ndjson' },
    payload: ndjson(OTHER, 'THEIRS-B1'),
  });
  expect(upload.statusCode).toBe(202);
  otherBatch = (upload.json() as { batch_id: string }).batch_id;
  // A scheduled (v2) import of OTHER_CO's, so its status route is aimed at something real.
  await setSupplierDefaultTeam(h.ctx.deps.db, OTHER, TEAM);
  const scheduled = await h.ctx.app.inject({
    method: 'POST',
    url: '/v2/data-import/accounts/',
    headers: h.auth,
    payload: { payload: accountPayload(OTHER, 'THEIRS-V2'), task_params: {} },
  });
  expect(scheduled.statusCode, scheduled.body).toBe(201);
});

afterAll(async () => h?.close());

interface Call {
  method: 'GET' | 'POST';
  url: string;
  payload?: unknown;
  headers?: Record<string, string>;
}

/** One request per route, aimed at a supplier: `target` is OTHER_CO (someone else's) or a code that does not exist. */
const CASES: Array<{ route: string; call: (target: string) => Call }> = [
  { route: 'POST /v1/data-import/validate-account/', call: (t) => ({ method: 'POST', url: '/v1/data-import/validate-account/', payload: accountPayload(t, 'THEIRS-9') }) },
  { route: 'POST /v1/data-import/account-import-process/create-or-update/', call: (t) => ({ method: 'POST', url: '/v1/data-import/account-import-process/create-or-update/', payload: accountPayload(t, 'THEIRS-9') }) },
  {
    route: 'POST /v1/data-import/account-import-process/process/',
    call: (t) => ({ method: 'POST', url: '/v1/data-import/account-import-process/process/', payload: { import_supplier_code: t, external_account_number: 'THEIRS-2', operations_team_name: TEAM } }),
  },
  { route: 'GET /v1/data-import/account-transfer-status/:import_supplier_code/:external_account_number/', call: (t) => ({ method: 'GET', url: `/v1/data-import/account-transfer-status/${t}/THEIRS-1/` }) },
  { route: 'GET /v1/data-import/imported-accounts/:import_supplier_code/:external_account_number/', call: (t) => ({ method: 'GET', url: `/v1/data-import/imported-accounts/${t}/THEIRS-1/` }) },
  { route: 'GET /v1/data-import/all-account-import-processes/:import_supplier_code/', call: (t) => ({ method: 'GET', url: `/v1/data-import/all-account-import-processes/${t}/` }) },
  { route: 'GET /v1/data-import/pending-account-import-processes/:import_supplier_code/', call: (t) => ({ method: 'GET', url: `/v1/data-import/pending-account-import-processes/${t}/` }) },
  { route: 'GET /v1/data-import/imported-account-import-processes/:import_supplier_code/', call: (t) => ({ method: 'GET', url: `/v1/data-import/imported-account-import-processes/${t}/` }) },
  { route: `POST ${URLS.notes}`, call: (t) => ({ method: 'POST', url: URLS.notes, payload: { import_supplier: t, external_account_number: 'THEIRS-1', notes: [{ body: 'hello' }] } }) },
  {
    route: `POST ${URLS.transactions}`,
    call: (t) => ({
      method: 'POST',
      url: URLS.transactions,
      payload: { import_supplier: t, external_account_number: 'THEIRS-1', transactions: [{ transaction_id: 'T-1', transaction_date: '2026-06-01', amount: '10.00', type: 'CHARGE', reason: 'IMPORTED_CHARGE' }] },
    }),
  },
  {
    route: `POST ${URLS.statements}`,
    call: (t) => ({
      method: 'POST',
      url: URLS.statements,
      payload: { import_supplier: t, external_account_number: 'THEIRS-1', statements: [{ bill_period_from_date: '2026-01-01', bill_period_to_date: '2026-01-31', statement_id: 'S-1', statement_path: 'x.pdf' }] },
    }),
  },
  { route: `POST ${URLS.paymentInstruction}`, call: (t) => ({ method: 'POST', url: URLS.paymentInstruction, payload: { import_supplier: t, external_account_number: 'THEIRS-1', vendor: VENDOR, reference: 'DD-1', type: 'DIRECT_DEBIT' } }) },
  {
    route: 'POST /v1/data-import/batches/',
    call: (t) => ({ method: 'POST', url: `/v1/data-import/batches/?import_supplier=${t}&operations_team_name=${encodeURIComponent(TEAM)}`, payload: ndjson(t, 'THEIRS-B9'), headers: { 'content-type': 'application/x-ndjson' } }),
  },
  { route: 'GET /v1/data-import/batches/', call: (t) => ({ method: 'GET', url: `/v1/data-import/batches/?import_supplier=${t}` }) },
  { route: 'POST /v2/data-import/accounts/', call: (t) => ({ method: 'POST', url: '/v2/data-import/accounts/', payload: { payload: accountPayload(t, 'THEIRS-9'), task_params: {} } }) },
  { route: 'POST /v2/data-import/accounts/validate/', call: (t) => ({ method: 'POST', url: '/v2/data-import/accounts/validate/', payload: { payload: accountPayload(t, 'THEIRS-9') } }) },
  {
    route: 'GET /v2/data-import/accounts/:import_supplier_code/:external_identifier/',
    call: (t) => ({ method: 'GET', url: `/v2/data-import/accounts/${t}/THEIRS-V2/` }),
  },
  {
    route: 'POST /v1/data-import/send-registration-flows/:import_supplier_code/:external_account_number/',
    call: (t) => ({ method: 'POST', url: `/v1/data-import/send-registration-flows/${t}/THEIRS-1/` }),
  },
  {
    route: 'GET /v1/data-import/meterpoint-statuses-for-account/:import_supplier_code/:external_account_number/',
    call: (t) => ({ method: 'GET', url: `/v1/data-import/meterpoint-statuses-for-account/${t}/THEIRS-1/` }),
  },
  {
    route: 'POST /v1/data-import/registration-withdrawals/:import_supplier_code/:external_account_number/',
    call: (t) => ({ method: 'POST', url: `/v1/data-import/registration-withdrawals/${t}/THEIRS-1/`, payload: {} }),
  },
];

/** Batch routes name a batch, not a supplier: OTHER_CO's batch against a batch id that does not exist. */
const BATCH_CASES: Array<{ route: string; call: (batch: string) => Call }> = [
  { route: 'GET /v1/data-import/batches/:batch_id/', call: (b) => ({ method: 'GET', url: `/v1/data-import/batches/${b}/` }) },
  { route: 'GET /v1/data-import/batches/:batch_id/items/', call: (b) => ({ method: 'GET', url: `/v1/data-import/batches/${b}/items/` }) },
  { route: 'GET /v1/data-import/batches/:batch_id/reconciliation/', call: (b) => ({ method: 'GET', url: `/v1/data-import/batches/${b}/reconciliation/` }) },
  { route: 'POST /v1/data-import/batches/:batch_id/retry/', call: (b) => ({ method: 'POST', url: `/v1/data-import/batches/${b}/retry/`, payload: {} }) },
  { route: 'POST /v1/data-import/batches/:batch_id/cancel/', call: (b) => ({ method: 'POST', url: `/v1/data-import/batches/${b}/cancel/`, payload: {} }) },
  { route: 'POST /v1/data-import/batches/:batch_id/registration-flows/', call: (b) => ({ method: 'POST', url: `/v1/data-import/batches/${b}/registration-flows/` }) },
];

const send = (call: Call, auth: { authorization: string }) =>
  h.ctx.app.inject({ method: call.method, url: call.url, headers: { ...auth, ...(call.headers ?? {}) }, ...(call.payload === undefined ? {} : { payload: call.payload as string }) });

/** What a client can see of an error answer, with the code it asked about replaced by a placeholder. */
function visible(res: LightMyRequestResponse, asked: string): unknown {
  const text = res.body.split(asked).join('<asked>');
  return { status: res.statusCode, body: JSON.parse(text) as unknown };
}

describe('API keys scoped to suppliers', () => {
  it('covers every token route of the service', () => {
    const token = h.ctx.built.routes.filter((r) => r.auth === 'token').map((r) => `${r.method} ${r.url}`);
    expect([...CASES, ...BATCH_CASES].map((c) => c.route).sort()).toEqual(token.sort());
  });

  it.each(CASES)("$route: another supplier's data answers as a supplier that does not exist, and nothing is written", async ({ call }) => {
    // The unscoped key reaches OTHER_CO: the request is aimed at something real.
    const before = await h.ctx.tableCounts();
    const asScoped = await send(call(OTHER), scoped);
    const asGhost = await send(call(GHOST), h.auth);
    expect(asScoped.statusCode).toBeGreaterThanOrEqual(400);
    expect(asScoped.statusCode).toBeLessThan(500);
    expect(visible(asScoped, OTHER)).toEqual(visible(asGhost, GHOST));
    expect(await h.ctx.tableCounts()).toEqual(before);
  });

  it.each(BATCH_CASES)("$route: another supplier's batch answers 404 batch_not_found, like a batch that does not exist", async ({ call }) => {
    const ghost = '00000000-0000-4000-8000-000000000000';
    const asScoped = await send(call(otherBatch), scoped);
    expect(asScoped.statusCode).toBe(404);
    expect(visible(asScoped, otherBatch)).toEqual(visible(await send(call(ghost), h.auth), ghost));
  });

  it('still reaches its own supplier, and the unscoped key still reaches every supplier', async () => {
    const own = await send({ method: 'GET', url: `/v1/data-import/account-transfer-status/${S}/MINE-1/` }, scoped);
    expect(own.statusCode).toBe(200);
    const theirs = await send({ method: 'GET', url: `/v1/data-import/account-transfer-status/${OTHER}/THEIRS-1/` }, h.auth);
    expect(theirs.statusCode).toBe(200);
    const batch = await send({ method: 'GET', url: `/v1/data-import/batches/${otherBatch}/` }, h.auth);
    expect(batch.statusCode).toBe(200);
  });

  it('keeps Idempotency-Keys per API key: the same key from another API key is a new batch, never the first one', async () => {
    const upload = (auth: { authorization: string }) =>
      h.ctx.app.inject({
        method: 'POST',
        url: `/v1/data-import/batches/?import_supplier=${S}&operations_team_name=${encodeURIComponent(TEAM)}`,
        headers: { ...auth, 'content-type': 'application/x-ndjson', 'idempotency-key': 'cohort-2026-06' },
        payload: ndjson(S, 'MINE-B1'),
      });
    const first = (await upload(h.auth)).json() as { batch_id: string };
    const again = (await upload(h.auth)).json() as { batch_id: string };
    const other = (await upload(scoped)).json() as { batch_id: string };
    expect(again.batch_id).toBe(first.batch_id);
    expect(other.batch_id).not.toBe(first.batch_id);
    // The scoped key's own batch is its to read.
    expect((await send({ method: 'GET', url: `/v1/data-import/batches/${other.batch_id}/` }, scoped)).statusCode).toBe(200);
  });
});
