import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { sql } from 'kysely';
import { recordAudit } from '../audit/audit-log.js';
import type { UpdateObject } from 'kysely';
import type { Database, Db, Executor, OperatorRole } from '../db/database.js';

/**
 * Operator accounts (issue 13; docs/operators.md, "Console"): a name, a role and a scrypt hash.
 * Viewers see the console; operators also act. Passwords never leave this module in clear, and an
 * unknown name costs the same hashing time as a wrong password, so sign-in timing tells nothing.
 */

export const OPERATOR_ROLES = ['viewer', 'operator'] as const satisfies readonly OperatorRole[];
export const isOperatorRole = (s: string): s is OperatorRole => (OPERATOR_ROLES as readonly string[]).includes(s);

/** Lower-case letters, digits, '.', '_' and '-', starting with a letter or digit; at most 63 (the table's CHECK). */
export const OPERATOR_NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/;
export const MIN_PASSWORD_LENGTH = 12;
/** scrypt takes time proportional to its input; a sign-in form must not become a CPU lever. */
export const MAX_PASSWORD_LENGTH = 256;

/**
 * scrypt at one of OWASP's recommended settings (N=2^15, r=8, p=3: 32 MiB, about 0.1–0.2 s here).
 * The parameters are stored with each hash, so raising them later re-hashes nobody.
 */
const PARAMS = { N: 2 ** 15, r: 8, p: 3 } as const;
const KEY_LENGTH = 32;

function scrypt(password: string, salt: Buffer, params: { N: number; r: number; p: number }): Promise<Buffer> {
  const options: ScryptOptions = { ...params, maxmem: 256 * params.N * params.r };
  return new Promise((resolve, reject) => scryptCb(password.normalize('NFC'), salt, KEY_LENGTH, options, (err, key) => (err ? reject(err) : resolve(key))));
}

/** `scrypt$N$r$p$salt$key`, salt and key in base64url. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, PARAMS);
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [kind, n, r, p, salt, key] = stored.split('$');
  if (kind !== 'scrypt' || !salt || !key) return false;
  const expected = Buffer.from(key, 'base64url');
  const actual = await scrypt(password, Buffer.from(salt, 'base64url'), { N: Number(n), r: Number(r), p: Number(p) });
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** Hashed once, lazily: what an unknown name is checked against, so it takes as long as a known one. */
let decoy: Promise<string> | undefined;

export interface Operator {
  id: string;
  name: string;
  role: OperatorRole;
}

export interface OperatorListing extends Operator {
  created_at: Date;
  password_set_at: Date;
  disabled_at: Date | null;
}

export class OperatorProblem extends Error {
  override readonly name = 'OperatorProblem';
}

export function passwordProblem(password: string): string | undefined {
  if (password.length < MIN_PASSWORD_LENGTH) return `a password needs at least ${MIN_PASSWORD_LENGTH} characters`;
  if (password.length > MAX_PASSWORD_LENGTH) return `a password may have at most ${MAX_PASSWORD_LENGTH} characters`;
  return undefined;
}

/** A password to hand to a new operator: 20 characters from 120 random bits, no look-alikes to retype. */
export function generatePassword(): string {
  return randomBytes(15).toString('base64url');
}

export async function createOperator(db: Db, name: string, role: OperatorRole, password: string): Promise<Operator> {
  if (!OPERATOR_NAME.test(name)) throw new OperatorProblem(`operator name '${name}' must be lower-case letters, digits, '.', '_' or '-' (at most 63)`);
  const problem = passwordProblem(password);
  if (problem) throw new OperatorProblem(problem);
  const hash = await hashPassword(password);
  return db.transaction().execute(async (trx) => {
    const row = await trx
      .insertInto('operators')
      .values({ name, role, password_hash: hash })
      .onConflict((oc) => oc.column('name').doNothing())
      .returning(['id', 'name', 'role'])
      .executeTakeFirst();
    if (!row) throw new OperatorProblem(`operator '${name}' exists already`);
    await recordAudit(trx, { action: 'operator.create', targetKind: 'operator', target: name, detail: { role } });
    return row;
  });
}

async function mustUpdate(ex: Executor, name: string, values: UpdateObject<Database, 'operators'>): Promise<void> {
  const res = await ex.updateTable('operators').set(values).where('name', '=', name).executeTakeFirst();
  if (res.numUpdatedRows === 0n) throw new OperatorProblem(`no operator '${name}'`);
}

export async function setOperatorPassword(db: Db, name: string, password: string): Promise<void> {
  const problem = passwordProblem(password);
  if (problem) throw new OperatorProblem(problem);
  const hash = await hashPassword(password);
  await db.transaction().execute(async (trx) => {
    // A new password ends every session signed in with the old one (sessions carry password_set_at).
    await mustUpdate(trx, name, { password_hash: hash, password_set_at: sql`now()` });
    await recordAudit(trx, { action: 'operator.password', targetKind: 'operator', target: name });
  });
}

export async function setOperatorRole(db: Db, name: string, role: OperatorRole): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await mustUpdate(trx, name, { role });
    await recordAudit(trx, { action: 'operator.role', targetKind: 'operator', target: name, detail: { role } });
  });
}

export async function setOperatorDisabled(db: Db, name: string, disabled: boolean): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await mustUpdate(trx, name, { disabled_at: disabled ? sql`now()` : null });
    await recordAudit(trx, { action: disabled ? 'operator.disable' : 'operator.enable', targetKind: 'operator', target: name });
  });
}

export async function listOperators(db: Executor): Promise<OperatorListing[]> {
  return db.selectFrom('operators').select(['id', 'name', 'role', 'created_at', 'password_set_at', 'disabled_at']).orderBy('name').execute();
}

/** The operator these credentials belong to, or undefined (unknown, disabled, or a wrong password: one answer for all). */
export async function authenticateOperator(db: Executor, name: string, password: string): Promise<(Operator & { password_set_at: Date }) | undefined> {
  if (password.length > MAX_PASSWORD_LENGTH || name.length > 63) return undefined;
  const row = await db
    .selectFrom('operators')
    .select(['id', 'name', 'role', 'password_hash', 'password_set_at'])
    .where('name', '=', name)
    .where('disabled_at', 'is', null)
    .executeTakeFirst();
  if (!row) {
    decoy ??= hashPassword(generatePassword());
    await verifyPassword(password, await decoy);
    return undefined;
  }
  if (!(await verifyPassword(password, row.password_hash))) return undefined;
  return { id: row.id, name: row.name, role: row.role, password_set_at: row.password_set_at };
}

/** The operator as they are now, for a session's request: undefined when disabled or their password changed since. */
export async function currentOperator(db: Executor, id: string, passwordSetAt: number): Promise<Operator | undefined> {
  const row = await db
    .selectFrom('operators')
    .select(['id', 'name', 'role', 'password_set_at'])
    .where('id', '=', id)
    .where('disabled_at', 'is', null)
    .executeTakeFirst();
  if (!row || row.password_set_at.getTime() !== passwordSetAt) return undefined;
  return { id: row.id, name: row.name, role: row.role };
}
