import { sql, type Insertable, type Kysely } from 'kysely';
import { formatInstant, type Clock } from '../../clock.js';
import { chunkRows } from '../../db/chunked.js';
import type { AccountNotesTable, Database } from '../../db/database.js';
import type { DocumentStore } from '../../documents/document-store.js';
import { AppError, item, type ErrorItem } from '../../errors.js';
import { supplierForChecks } from '../shared/account-lookup.js';
import { checkDocument } from '../shared/documents.js';
import { parseIsoDatetime } from '../shared/fields.js';
import { assertSameAccount, runLocked, type AccountPair, type ExtrasContext, type LockedWrite } from '../shared/imported-account.js';
import { issuesToItems, sortByEntry } from '../shared/validation.js';
import { groupBy, type SetInsert, type SetRead, type Writes } from '../shared/write-set.js';
import { notesRequestSchema, type NoteInput } from './note.schemas.js';

export interface NoteResult {
  created_at: string;
  body: string | null;
  status: 'NOTE_CREATION_SUCCESS' | 'NOTE_ALREADY_EXISTS';
}

interface StoredNote {
  body: string | null;
  document_paths: string[];
  created_at: Date;
  external_id: string | null;
}

/** What makes two notes "the same": the body, or for a documents-only note its set of documents. */
const sameness = (body: string | null | undefined, paths: readonly string[]): string =>
  body ? `b:${body}` : `d:${JSON.stringify([...paths].sort())}`;

/** The notes of each account that could be the same as some of the new ones: by body, by external id, or documents-only. */
const existingNotes: SetRead<{ accountId: string; bodies: readonly string[]; externalIds: readonly string[] }, StoredNote[]> = {
  async load(trx, keys) {
    const ids = [...new Set(keys.map((k) => k.accountId))];
    const bodies = [...new Set(keys.flatMap((k) => k.bodies))];
    const externalIds = [...new Set(keys.flatMap((k) => k.externalIds))];
    const rows = await trx
      .selectFrom('account_notes')
      .select(['account_id', 'body', 'document_paths', 'created_at', 'external_id'])
      .where(sql<boolean>`account_id = any(${ids}::bigint[])`)
      .where(sql<boolean>`(body is null or body = any(${bodies}::text[]) or external_id = any(${externalIds}::text[]))`)
      .orderBy('id')
      .execute();
    const byAccount = groupBy(rows, (r) => r.account_id);
    return keys.map((k) => {
      const b = new Set(k.bodies);
      const e = new Set(k.externalIds);
      return (byAccount.get(k.accountId) ?? []).filter((r) => r.body === null || b.has(r.body) || (r.external_id !== null && e.has(r.external_id)));
    });
  },
};

type NoteRow = Insertable<AccountNotesTable>;

/** Notes of every account of a set: one insert (or one per chunk under the parameter limit). */
export const noteRows: SetInsert<NoteRow> = {
  async insert(trx, rows) {
    for (const chunk of chunkRows(rows)) await trx.insertInto('account_notes').values(chunk).execute();
  },
};

export interface NoteServiceDeps {
  db: Kysely<Database>;
  clock: Clock;
  documents: DocumentStore;
}

export function createNoteService(deps: NoteServiceDeps) {
  /**
   * Imports notes in input order. A note is created only when the account has no note with the same
   * body (and the same created_at, when one is given); otherwise it is reported NOTE_ALREADY_EXISTS.
   */
  async function importNotes(input: unknown): Promise<NoteResult[]> {
    const write = await prepareNotes(input);
    return runLocked(deps.db, input as AccountPair, write); // prepare has checked the pair
  }

  /** Everything that can be checked before the account is locked (fields, storage); the writes come back to run under the lock. */
  async function prepareNotes(input: unknown, ctx: ExtrasContext = {}): Promise<LockedWrite<NoteResult[]>> {
    const db = ctx.db ?? deps.db;
    // Field problems and storage problems are reported together: one item per problem.
    const parsed = notesRequestSchema.safeParse(input, { reportInput: true });
    const problems: ErrorItem[] = parsed.success ? [] : issuesToItems(parsed.error.issues);
    const supplier = await supplierForChecks(db, input, problems.length > 0, ctx.supplier);
    // The default created_at is now, to the whole second: the interface's datetime form.
    const now = new Date(Math.floor(deps.clock.now().getTime() / 1000) * 1000);
    const rawNotes = Array.isArray((input as { notes?: unknown } | null)?.notes) ? ((input as { notes: unknown[] }).notes) : [];
    for (const [i, raw] of rawNotes.entries()) {
      const note = raw as { created_at?: unknown; unpin_at?: unknown; document_paths?: unknown } | null;
      const clean = (path: string) => !problems.some((p) => p.attr === path || p.attr?.startsWith(`${path}.`));
      // created_at defaults to now, so an unpin_at in the past is before the note's creation.
      if (note && typeof note.unpin_at === 'string' && note.created_at === undefined && clean(`notes.${i}.unpin_at`)) {
        const unpin = parseIsoDatetime(note.unpin_at);
        if (unpin && unpin < now) {
          problems.push(item('note_unpin_at_earlier_than_creation_date', 'unpin_at must not be earlier than created_at (now).', `notes.${i}.unpin_at`));
        }
      }
      if (!supplier || !note || !Array.isArray(note.document_paths)) continue;
      for (const [j, d] of note.document_paths.entries()) {
        const attr = `notes.${i}.document_paths.${j}.document_path`;
        const path = (d as { document_path?: unknown } | null)?.document_path;
        if (typeof path !== 'string' || !clean(attr)) continue;
        const problem = await checkDocument(deps.documents, supplier.documents_root, path, attr);
        if (problem) problems.push(problem);
      }
    }
    if (problems.length > 0 || !parsed.success) throw new AppError(400, 'invalid_request', 'Invalid request.', sortByEntry(problems, 'notes'));
    const req = parsed.data;
    if (!supplier) throw new AppError(500, 'internal_error', 'Account lookup failed.');

    return (w, account) => {
      assertSameAccount(req.account_number, account);
      return insertNew(w, account.id, req.notes, now);
    };
  }

  async function insertNew(w: Writes, accountId: string, notes: NoteInput[], now: Date): Promise<NoteResult[]> {
    const bodies = [...new Set(notes.flatMap((n) => (n.body ? [n.body] : [])))];
    const externalIds = [...new Set(notes.flatMap((n) => (n.external_id ? [n.external_id] : [])))];
    const existing = await w.read(existingNotes, { accountId, bodies, externalIds });
    const known = new Map<string, StoredNote[]>();
    // A note with the supplier's own id is the same note as any other with that id, whatever its text.
    const byExternalId = new Map<string, StoredNote>();
    const remember = (n: StoredNote) => {
      const key = sameness(n.body, n.document_paths);
      known.set(key, [...(known.get(key) ?? []), n]);
      if (n.external_id) byExternalId.set(n.external_id, n);
    };
    existing.forEach(remember);

    const results: NoteResult[] = [];
    const rows: NoteRow[] = [];
    for (const note of notes) {
      const paths = (note.document_paths ?? []).map((d) => d.document_path);
      const givenAt = note.created_at === undefined ? undefined : parseIsoDatetime(note.created_at)!;
      const candidates = note.external_id ? [] : (known.get(sameness(note.body, paths)) ?? []);
      const match = note.external_id
        ? byExternalId.get(note.external_id)
        : givenAt === undefined
          ? candidates[0]
          : candidates.find((c) => c.created_at.getTime() === givenAt.getTime());
      if (match) {
        results.push({ created_at: formatInstant(match.created_at), body: match.body, status: 'NOTE_ALREADY_EXISTS' });
        continue;
      }
      const stored: StoredNote = { body: note.body ?? null, document_paths: paths, created_at: givenAt ?? now, external_id: note.external_id ?? null };
      remember(stored);
      rows.push({
        account_id: accountId,
        ...stored,
        is_pinned: note.is_pinned ?? false,
        unpin_at: note.unpin_at === undefined ? null : parseIsoDatetime(note.unpin_at)!,
        is_archived: note.is_archived ?? false,
      });
      results.push({ created_at: formatInstant(stored.created_at), body: stored.body, status: 'NOTE_CREATION_SUCCESS' });
    }
    w.insert(noteRows, rows);
    return results;
  }

  /** The request's field problems alone (no storage, no account): what an account's own notes are checked with at validate time. */
  function checkNotes(input: unknown): ErrorItem[] {
    const parsed = notesRequestSchema.safeParse(input, { reportInput: true });
    return parsed.success ? [] : issuesToItems(parsed.error.issues);
  }

  return { importNotes, prepareNotes, checkNotes };
}

export type NoteService = ReturnType<typeof createNoteService>;

