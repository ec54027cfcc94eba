import { z } from 'zod';
import { compareDatetimes, crossFieldCheck, datetimeString, isRecord } from '../shared/fields.js';
import { accountNumberField, accountPairShape } from '../shared/imported-account.js';

/** decisions §7 */
export const MAX_NOTES_PER_REQUEST = 1000;

export const noteSchema = z
  .strictObject({
    body: z.string().min(1).max(100_000).optional(),
    document_paths: z.array(z.strictObject({ document_path: z.string().min(1).max(1024) })).max(100).optional(),
    created_at: datetimeString.optional(),
    is_pinned: z.boolean().optional(),
    unpin_at: datetimeString.optional(),
    // The supplier's own id of the note: a repeat of it is the same note (decisions §3).
    external_id: z.string().min(1).max(255).optional(),
    is_archived: z.boolean().optional(),
  })
  .check(
    crossFieldCheck((note, ctx) => {
      if (!isRecord(note)) return;
      const hasBody = typeof note.body === 'string' && note.body.length > 0;
      const hasDocs = Array.isArray(note.document_paths) && note.document_paths.length > 0;
      if (!hasBody && !hasDocs && ctx.parsed(['body']) && ctx.parsed(['document_paths'])) {
        ctx.addIssue('note_body_or_document_path_not_found', 'A note needs a body or at least one document path.', []);
      }
      if (note.unpin_at !== undefined && ctx.parsed(['unpin_at']) && note.is_pinned !== true && ctx.parsed(['is_pinned'])) {
        ctx.addIssue('note_unpin_at_without_pin', 'unpin_at is only meaningful on a pinned note (is_pinned true).', ['unpin_at']);
      }
      if (
        typeof note.unpin_at === 'string' &&
        typeof note.created_at === 'string' &&
        ctx.parsed(['unpin_at']) &&
        ctx.parsed(['created_at']) &&
        compareDatetimes(note.unpin_at, note.created_at) < 0
      ) {
        ctx.addIssue('note_unpin_at_earlier_than_creation_date', 'unpin_at must not be earlier than created_at.', ['unpin_at']);
      }
    }),
  )
  .meta({ id: 'Note' });
export type NoteInput = z.output<typeof noteSchema>;

export const notesRequestSchema = z
  .strictObject({ ...accountPairShape, account_number: accountNumberField, notes: z.array(noteSchema).min(1).max(MAX_NOTES_PER_REQUEST) })
  .meta({ id: 'NotesRequest' });

export const noteResultSchema = z
  .object({
    created_at: z.string(),
    body: z.string().nullable(),
    status: z.enum(['NOTE_CREATION_SUCCESS', 'NOTE_ALREADY_EXISTS']),
  })
  .meta({ id: 'NoteResult' });
