import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { sql } from 'kysely';
import { batchedLookup } from '../db/batched.js';
import type { Executor } from '../db/database.js';

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
}

export class ApiKeyNameTaken extends Error {
  override readonly name = 'ApiKeyNameTaken';
}

export async function createApiKey(db: Executor, name: string): Promise<IssuedApiKey> {
  const keyId = randomBytes(9).toString('base64url').replace(/[-_]/g, 'x').slice(0, 12);
  const secret = randomBytes(32).toString('base64url');
  try {
    const row = await db
      .insertInto('api_keys')
      .values({ name, key_id: keyId, secret_hash: sha256(secret) })
      .returning('id')
      .executeTakeFirstOrThrow();
    return { id: row.id, name, key: `dik_${keyId}_${secret}` };
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
 * isApiKeyActive for the request path: the same answer, read fresh for every request, but the
 * requests in flight together share one query.
 */
export function createApiKeyActivity(db: Executor): (id: string) => Promise<boolean> {
  const revokedAt = batchedLookup<string, Date | null>(async (ids) => {
    // = ANY(array): one statement text however many keys share the query (see createDb's prepared statements).
    const rows = await db.selectFrom('api_keys').select(['id', 'revoked_at']).where(sql<boolean>`id = any(${[...ids]}::bigint[])`).execute();
    return new Map(rows.map((r) => [r.id, r.revoked_at]));
  });
  return async (id) => KEY_ID.test(id) && (await revokedAt(id)) === null;
}

/** True while the key exists and is not revoked: checked on every authenticated request. */
export async function isApiKeyActive(db: Executor, id: string): Promise<boolean> {
  if (!KEY_ID.test(id)) return false;
  const row = await db.selectFrom('api_keys').select('revoked_at').where('id', '=', id).executeTakeFirst();
  return row !== undefined && row.revoked_at === null;
}
