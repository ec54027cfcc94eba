import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { batchedLookup } from '../db/batched.js';
import type { Database, Executor } from '../db/database.js';
import type { SupplierScope } from './supplier-scope.js';

/**
 * API keys look like `dik_<key_id>_<secret>`. key_id is a public lookup handle; only a SHA-256 of the
 * secret is stored (the secret is 256 random bits, so a fast hash is enough), compared in constant time.
 */
const KEY_PATTERN = /^dik_([A-Za-z0-9]{12})_([A-Za-z0-9_-]{43})$/;

const sha256 = (s: string): Buffer => createHash('sha256').update(s).digest();

export interface IssuedApiKey {
  id: string;
  name: string;
  /** The whole key: shown once, never stored. */
  key: string;
  /** The supplier codes it is scoped to; empty: every supplier. */
  suppliers: string[];
}

export class ApiKeyNameTaken extends Error {
  override readonly name = 'ApiKeyNameTaken';
}

export class UnknownScopeSupplier extends Error {
  override readonly name = 'UnknownScopeSupplier';
}

/**
 * Issues a key. With `suppliers` (codes), the key reaches only those suppliers; without, every
 * supplier. An unknown code refuses the whole key: nothing is stored.
 */
export async function createApiKey(db: Kysely<Database>, name: string, suppliers: readonly string[] = []): Promise<IssuedApiKey> {
  const keyId = randomBytes(9).toString('base64url').replace(/[-_]/g, 'x').slice(0, 12);
  const secret = randomBytes(32).toString('base64url');
  const codes = [...new Set(suppliers)];
  try {
    return await db.transaction().execute(async (trx) => {
      const found = codes.length === 0 ? [] : await trx.selectFrom('import_suppliers').select(['id', 'code']).where('code', 'in', codes).execute();
      const missing = codes.filter((c) => !found.some((f) => f.code === c));
      if (missing.length > 0) throw new UnknownScopeSupplier(`no import supplier ${missing.map((c) => `'${c}'`).join(', ')}`);
      const row = await trx.insertInto('api_keys').values({ name, key_id: keyId, secret_hash: sha256(secret) }).returning('id').executeTakeFirstOrThrow();
      if (found.length > 0) await trx.insertInto('api_key_suppliers').values(found.map((f) => ({ api_key_id: row.id, import_supplier_id: f.id }))).execute();
      return { id: row.id, name, key: `dik_${keyId}_${secret}`, suppliers: found.map((f) => f.code).sort() };
    });
  } catch (err) {
    const e = err as { code?: string; constraint?: string };
    if (e.code === '23505' && e.constraint === 'api_keys_active_name') throw new ApiKeyNameTaken(`an active API key named '${name}' already exists`, { cause: err });
    throw err;
  }
}

/** Revokes the active key of that name; false when there is none. Tokens issued for it stop working at once. */
export async function revokeApiKey(db: Executor, name: string, at: Date): Promise<boolean> {
  const res = await db
    .updateTable('api_keys')
    .set({ revoked_at: at })
    .where('name', '=', name)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** The id of the active key the presented string is, or null (unknown, wrong secret, revoked, malformed). */
export async function verifyApiKey(db: Executor, presented: string): Promise<string | null> {
  const m = KEY_PATTERN.exec(presented);
  if (!m) return null;
  const row = await db
    .selectFrom('api_keys')
    .select(['id', 'secret_hash', 'revoked_at'])
    .where('key_id', '=', m[1]!)
    .executeTakeFirst();
  if (!row) return null;
  const ok = timingSafeEqual(row.secret_hash, sha256(m[2]!));
  return ok && row.revoked_at === null ? row.id : null;
}

const KEY_ID = /^\d{1,18}$/;

/**
 * isApiKeyActive for the request path, with the key's supplier scope: read fresh for every request
 * (a revocation is seen by the next request), but the requests in flight together share one query.
 * Resolves to the scope of an active key, undefined for a revoked or unknown one.
 */
export function createApiKeyScopes(db: Executor): (id: string) => Promise<SupplierScope | undefined> {
  const lookup = batchedLookup<string, { revoked_at: Date | null; suppliers: string[] | null }>(async (ids) => {
    // = ANY(array): one statement text however many keys share the query (see createDb's prepared statements).
    const rows = await db
      .selectFrom('api_keys as k')
      .leftJoin('api_key_suppliers as ks', 'ks.api_key_id', 'k.id')
      .leftJoin('import_suppliers as s', 's.id', 'ks.import_supplier_id')
      .select(['k.id', 'k.revoked_at', sql<string[] | null>`array_agg(s.code) FILTER (WHERE s.code IS NOT NULL)`.as('suppliers')])
      .where(sql<boolean>`k.id = any(${[...ids]}::bigint[])`)
      .groupBy('k.id')
      .execute();
    return new Map(rows.map((r) => [r.id, { revoked_at: r.revoked_at, suppliers: r.suppliers }]));
  });
  return async (id) => {
    if (!KEY_ID.test(id)) return undefined;
    const key = await lookup(id);
    if (key === undefined || key.revoked_at !== null) return undefined;
    return key.suppliers === null ? null : new Set(key.suppliers);
  };
}

/** True while the key exists and is not revoked: checked on every authenticated request. */
export async function isApiKeyActive(db: Executor, id: string): Promise<boolean> {
  if (!KEY_ID.test(id)) return false;
  const row = await db.selectFrom('api_keys').select('revoked_at').where('id', '=', id).executeTakeFirst();
  return row !== undefined && row.revoked_at === null;
}
