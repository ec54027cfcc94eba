import { AsyncLocalStorage } from 'node:async_hooks';
import { sql } from 'kysely';
import type { AuditTargetKind, Executor } from '../db/database.js';

/**
 * The audit log (issue 13; docs/operators.md, "Audit log"): who did what, when, to which batch,
 * supplier, key, reference value or account. Every operational action that changes state records a
 * line: importctl's (as the operating-system user who ran it), the API's batch actions (as the API
 * key's name) and, later, the console's (as the operator). The accounts' own data imports are not
 * lines here: each is in its own tables with its time, and a cohort is one `batch.upload` line.
 */

export interface Actor {
  kind: 'cli' | 'api_key' | 'operator';
  /** The API key's id for 'api_key' (its name is looked up when the line is written); a user or operator name otherwise. */
  name: string;
}

/** Who the current asynchronous work acts for: set once per request (buildApp) and per importctl command. */
const storage = new AsyncLocalStorage<Actor>();

export function actingAs<T>(actor: Actor, fn: () => T): T {
  return storage.run(actor, fn);
}

/** The actor of the current work; none outside a request or a command (the pipeline records nothing). */
export const currentActor = (): Actor | undefined => storage.getStore();

export interface AuditEntry {
  action: string;
  targetKind: AuditTargetKind;
  target: string;
  detail?: Record<string, unknown>;
}

/**
 * Records one line for the current actor, in `db` (the action's own transaction when it has one).
 * Outside a request or a command there is no actor, and nothing is recorded.
 */
export async function recordAudit(db: Executor, entry: AuditEntry, actor: Actor | undefined = currentActor()): Promise<void> {
  if (!actor) return;
  const detail = JSON.stringify(entry.detail ?? {});
  if (actor.kind === 'api_key') {
    // The key's name as it is when the line is written (keys are never renamed; a revoked one keeps its name).
    await sql`
      INSERT INTO audit_log (actor_kind, actor, action, target_kind, target, detail)
      SELECT 'api_key', coalesce((SELECT name FROM api_keys WHERE id = ${actor.name}::bigint), 'key ' || ${actor.name}), ${entry.action}, ${entry.targetKind}, ${entry.target}, ${detail}::jsonb`.execute(db);
    return;
  }
  await db
    .insertInto('audit_log')
    .values({ actor_kind: actor.kind, actor: actor.name, action: entry.action, target_kind: entry.targetKind, target: entry.target, detail })
    .execute();
}

export interface AuditLine {
  at: Date;
  actor_kind: Actor['kind'];
  actor: string;
  action: string;
  target_kind: AuditTargetKind;
  target: string;
  detail: Record<string, unknown>;
}

/** The newest lines first, optionally only those of one target (`batch` and its id, …). */
export async function listAudit(db: Executor, opts: { limit: number; targetKind?: AuditTargetKind; target?: string }): Promise<AuditLine[]> {
  return db
    .selectFrom('audit_log')
    .select(['at', 'actor_kind', 'actor', 'action', 'target_kind', 'target', 'detail'])
    .$if(opts.targetKind !== undefined, (q) => q.where('target_kind', '=', opts.targetKind!))
    .$if(opts.target !== undefined, (q) => q.where('target', '=', opts.target!))
    .orderBy('at', 'desc')
    .orderBy('id', 'desc')
    .limit(opts.limit)
    .execute();
}
