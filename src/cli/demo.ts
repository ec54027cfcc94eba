#!/usr/bin/env node
/**
 * `npm run demo`: a sample migration end to end on a fresh clone. Migrates the database, sets up
 * a demo supplier, team and API key, starts the service in-process on a free loopback port with a
 * sandbox payment vendor, then drives a few generated accounts through the REST interface exactly
 * as a supplier's script would (token → validate → stage → process → notes → transactions →
 * statements → payment instruction → status). Exits 0 when every account migrated.
 */
import { randomBytes } from 'node:crypto';
import { createApiKey, revokeApiKey } from '../auth/api-keys.js';
import { utcDate } from '../clock.js';
import { generateCohort } from '../cohort/generate.js';
import { loadConfig } from '../config.js';
import { ensureDatabase, migrate } from '../db/migrator.js';
import { createDeps } from '../deps.js';
import { resolveDocumentKey } from '../documents/document-store.js';
import { buildApp } from '../http/app.js';
import { createLogger } from '../log.js';
import { findSupplierByCode } from '../imports/suppliers/supplier.repository.js';
import { createSupplier } from '../imports/suppliers/supplier.service.js';
import { findTeamByName } from '../imports/teams/team.repository.js';
import { createTeam } from '../imports/teams/team.service.js';
import { startSandboxVendor } from '../vendors/sandbox-vendor.js';

const SUPPLIER = 'DEMO';
const TEAM = 'Demo Migrations';
const ACCOUNTS = Number(process.env.DEMO_ACCOUNTS ?? 5);

async function main(): Promise<number> {
  const vendor = await startSandboxVendor();
  const config = loadConfig({
    ...process.env,
    PAYMENT_VENDORS: JSON.stringify({ sandbox: { base_url: vendor.baseUrl, api_key: vendor.apiKey } }),
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
  });
  await ensureDatabase(config.databaseUrl);
  const { applied } = await migrate(config.databaseUrl);
  console.log(`database ready (${applied.length} migration(s) applied)`);

  const deps = createDeps(config, { log: createLogger(config.logLevel) });
  const { app } = await buildApp(deps);
  try {
    if (!(await findSupplierByCode(deps.db, SUPPLIER))) await createSupplier(deps.db, { code: SUPPLIER, name: 'Demo Energy', documentsRoot: 'demo' });
    if (!(await findTeamByName(deps.db, TEAM))) await createTeam(deps.db, TEAM);
    await revokeApiKey(deps.db, 'demo', new Date());
    const key = await createApiKey(deps.db, 'demo');
    const base = await app.listen({ host: '127.0.0.1', port: 0 });
    console.log(`service listening on ${base}; sandbox payment vendor on ${vendor.baseUrl}`);

    const call = async (method: 'GET' | 'POST', path: string, body?: unknown, token?: string) => {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Token ${token}` } : {}) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const tokenRes = await call('POST', '/v1/graphql/', {
      query: 'mutation ObtainToken($input: ObtainJSONWebTokenInput!) { obtainKrakenToken(input: $input) { token } }',
      variables: { input: { APIKey: key.key } },
    });
    const token = ((tokenRes.body.data as { obtainKrakenToken: { token: string } }).obtainKrakenToken).token;

    const prefix = `DEMO-${new Date().toISOString().replace(/\D/g, '').slice(0, 14)}-${randomBytes(2).toString('hex')}`;
    const cohort = generateCohort({ count: ACCOUNTS, supplier: SUPPLIER, prefix, seed: Date.now() % 100_000, vendor: 'sandbox', today: utcDate(new Date()) });
    let migrated = 0;
    for (const { bundle, documents } of cohort) {
      for (const d of documents) {
        const resolved = resolveDocumentKey('demo', d.path);
        if (resolved.ok) await deps.documents.put(resolved.key, d.body);
      }
      const ext = String(bundle.account.external_account_number);
      const pair = { import_supplier: SUPPLIER, external_account_number: ext };
      const steps: Array<[string, () => Promise<{ status: number; body: Record<string, unknown> }>, number[]]> = [
        ['validate', () => call('POST', '/v1/data-import/validate-account/', bundle.account, token), [200]],
        ['stage', () => call('POST', '/v1/data-import/account-import-process/create-or-update/', bundle.account, token), [201]],
        ['process', () => call('POST', '/v1/data-import/account-import-process/process/', { external_account_number: ext, import_supplier_code: SUPPLIER, operations_team_name: TEAM }, token), [201]],
        ['notes', () => call('POST', '/v1/data-import/notes/create/', { ...pair, notes: bundle.notes }, token), [201]],
        ['transactions', () => call('POST', '/v1/data-import/transactions/create/', { ...pair, transactions: bundle.transactions }, token), [201]],
        ['statements', () => call('POST', '/v1/data-import/historical-statements/create/', { ...pair, statements: bundle.statements }, token), [201]],
        ['payment instruction', () => call('POST', '/v1/data-import/payment-instruction/create/', { ...pair, ...bundle.payment_instruction }, token), [201]],
        ['status', () => call('GET', `/v1/data-import/account-transfer-status/${SUPPLIER}/${encodeURIComponent(ext)}/`, undefined, token), [200]],
      ];
      let failed: string | null = null;
      let number = '';
      for (const [name, run, ok] of steps) {
        const res = await run();
        if (!ok.includes(res.status)) {
          failed = `${name} answered ${res.status}: ${JSON.stringify(res.body)}`;
          break;
        }
        if (name === 'process') number = String(res.body.service_account_number);
      }
      if (failed) console.log(`✗ ${ext}: ${failed}`);
      else {
        migrated++;
        console.log(`✓ ${ext} → ${number} (3 notes, 10 transactions, 2 statements, 1 payment instruction)`);
      }
    }
    console.log(`\n${migrated} of ${ACCOUNTS} accounts migrated with their history.`);
    console.log(`Try it yourself: key for ${SUPPLIER}: ${key.key}`);
    return migrated === ACCOUNTS ? 0 : 1;
  } finally {
    await app.close();
    await deps.close();
    await vendor.close();
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(`demo failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
  },
);
