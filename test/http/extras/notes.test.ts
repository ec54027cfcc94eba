import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createExtrasHarness, expectEnvelope, pairs, S, URLS, type ExtrasHarness } from './setup.js';

let h: ExtrasHarness;

beforeAll(async () => {
  h = await createExtrasHarness();
  await h.putDocument('letters/welcome.txt', 'Welcome aboard');
  await h.putDocument('letters/final.pdf', '%PDF-1.7\n...');
});
afterAll(async () => h?.close());

interface NoteResult {
  created_at: string;
  body: string | null;
  status: 'NOTE_CREATION_SUCCESS' | 'NOTE_ALREADY_EXISTS';
}

const postNotes = async (ext: string, notes: unknown[]) => h.post(URLS.notes, { import_supplier: S, external_account_number: ext, notes });
const statuses = (res: { json(): unknown }) => (res.json() as NoteResult[]).map((r) => r.status);

async function noteRows(ext: string) {
  const accountId = await h.accountId(ext);
  return h.ctx.deps.db
    .selectFrom('account_notes')
    .select(['body', 'document_paths', 'created_at', 'is_pinned', 'unpin_at', 'origin'])
    .where('account_id', '=', accountId)
    .orderBy('id')
    .execute();
}

describe('notes: creation and dedupe', () => {
  beforeAll(async () => {
    await h.importAccount('N-ORDER');
    await h.importAccount('N-DEDUPE');
    await h.importAccount('N-REPEAT');
  });

  it('answers 201 with one entry per note, in input order, created_at defaulting to now', async () => {
    const first = await postNotes('N-ORDER', [{ body: 'Alpha' }, { body: 'Bravo', created_at: '2025-02-01T09:30:00Z' }]);
    expect(first.statusCode, first.body).toBe(201);
    expect(first.json()).toEqual([
      { created_at: '2026-06-15T12:00:00Z', body: 'Alpha', status: 'NOTE_CREATION_SUCCESS' },
      { created_at: '2025-02-01T09:30:00Z', body: 'Bravo', status: 'NOTE_CREATION_SUCCESS' },
    ]);

    const second = await postNotes('N-ORDER', [{ body: 'Charlie' }, { body: 'Alpha' }, { body: 'Delta' }, { body: 'Bravo', created_at: '2025-02-01T09:30:00Z' }]);
    expect(second.statusCode, second.body).toBe(201);
    const body = second.json() as NoteResult[];
    expect(body.map((r) => [r.body, r.status])).toEqual([
      ['Charlie', 'NOTE_CREATION_SUCCESS'],
      ['Alpha', 'NOTE_ALREADY_EXISTS'],
      ['Delta', 'NOTE_CREATION_SUCCESS'],
      ['Bravo', 'NOTE_ALREADY_EXISTS'],
    ]);
    for (const r of body) expect(r.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/);

    const rows = await noteRows('N-ORDER');
    expect(rows.map((r) => r.body)).toEqual(['Alpha', 'Bravo', 'Charlie', 'Delta']);
    expect(rows.map((r) => r.created_at.toISOString())).toEqual([
      '2026-06-15T12:00:00.000Z',
      '2025-02-01T09:30:00.000Z',
      '2026-06-15T12:00:00.000Z',
      '2026-06-15T12:00:00.000Z',
    ]);
    expect(rows.every((r) => r.origin === 'IMPORTED' && r.is_pinned === false && r.unpin_at === null)).toBe(true);
  });

  it('dedupes by body alone when no created_at is given, by body and created_at when one is', async () => {
    expect(statuses(await postNotes('N-DEDUPE', [{ body: 'Same text', created_at: '2025-01-01T10:00:00Z' }]))).toEqual(['NOTE_CREATION_SUCCESS']);
    const res = await postNotes('N-DEDUPE', [
      // Same body and the same instant (written with an offset): the same note.
      { body: 'Same text', created_at: '2025-01-01T11:00:00+01:00' },
      // Same body, another created_at: a different note.
      { body: 'Same text', created_at: '2025-03-01T10:00:00Z' },
      // Same body, no created_at: the account already has a note with this body.
      { body: 'Same text' },
      // A body differing only in case is another body.
      { body: 'same text' },
    ]);
    expect(res.statusCode, res.body).toBe(201);
    expect(statuses(res)).toEqual(['NOTE_ALREADY_EXISTS', 'NOTE_CREATION_SUCCESS', 'NOTE_ALREADY_EXISTS', 'NOTE_CREATION_SUCCESS']);
    const rows = await noteRows('N-DEDUPE');
    expect(rows.map((r) => [r.body, r.created_at.toISOString()])).toEqual([
      ['Same text', '2025-01-01T10:00:00.000Z'],
      ['Same text', '2025-03-01T10:00:00.000Z'],
      ['same text', '2026-06-15T12:00:00.000Z'],
    ]);
  });

  it('treats a repeat inside one request like a repeat of an earlier request', async () => {
    const res = await postNotes('N-REPEAT', [
      { body: 'Twice' },
      { body: 'Twice' },
      { body: 'Dated twice', created_at: '2024-05-05T05:05:05Z' },
      { body: 'Dated twice', created_at: '2024-05-05T05:05:05Z' },
      { body: 'Dated twice', created_at: '2024-06-06T06:06:06Z' },
    ]);
    expect(res.statusCode, res.body).toBe(201);
    expect(statuses(res)).toEqual(['NOTE_CREATION_SUCCESS', 'NOTE_ALREADY_EXISTS', 'NOTE_CREATION_SUCCESS', 'NOTE_ALREADY_EXISTS', 'NOTE_CREATION_SUCCESS']);
    const rows = await noteRows('N-REPEAT');
    expect(rows.map((r) => r.body)).toEqual(['Twice', 'Dated twice', 'Dated twice']);
  });
  it('reports created_at in the interface form, in UTC, whatever offset it was given with', async () => {
    const res = await postNotes('N-ORDER', [{ body: 'Offset note', created_at: '2025-07-01T09:00:00+02:00' }]);
    expect(res.json()).toEqual([{ created_at: '2025-07-01T07:00:00Z', body: 'Offset note', status: 'NOTE_CREATION_SUCCESS' }]);
  });

  it('reads a bare created_at date as midnight UTC, as the published examples send it (decisions §1)', async () => {
    const res = await postNotes('N-ORDER', [{ body: 'Bare date', created_at: '2025-01-01' }]);
    expect(res.json()).toEqual([{ created_at: '2025-01-01T00:00:00Z', body: 'Bare date', status: 'NOTE_CREATION_SUCCESS' }]);
  });

  it.each([['2025-01-01T10:00:00'], ['2025-02-30'], ['2025-02-30T10:00:00Z'], ['not a date']])(
    'refuses created_at %j with invalid_datetime at notes.N.created_at',
    async (created_at) => {
      const res = await postNotes('N-ORDER', [{ body: 'ok' }, { body: 'dated', created_at }]);
      expect(pairs(expectEnvelope(res, 400, 'invalid_request'))).toEqual(['invalid_datetime@notes.1.created_at']);
    },
  );
});

describe('notes: pinning', () => {
  beforeAll(async () => {
    await h.importAccount('N-PIN');
  });

  it('stores is_pinned and unpin_at', async () => {
    const res = await postNotes('N-PIN', [
      { body: 'Pinned until July', created_at: '2026-06-01T08:00:00Z', is_pinned: true, unpin_at: '2026-07-01T00:00:00Z' },
      { body: 'Pinned for good', is_pinned: true },
      { body: 'Explicitly not pinned', is_pinned: false },
      // unpin_at equal to created_at is not earlier than it.
      { body: 'Pinned for an instant', created_at: '2026-06-10T00:00:00Z', is_pinned: true, unpin_at: '2026-06-10T00:00:00Z' },
    ]);
    expect(res.statusCode, res.body).toBe(201);
    expect(statuses(res)).toEqual(Array(4).fill('NOTE_CREATION_SUCCESS'));
    const rows = await noteRows('N-PIN');
    expect(rows.map((r) => [r.body, r.is_pinned, r.unpin_at?.toISOString() ?? null])).toEqual([
      ['Pinned until July', true, '2026-07-01T00:00:00.000Z'],
      ['Pinned for good', true, null],
      ['Explicitly not pinned', false, null],
      ['Pinned for an instant', true, '2026-06-10T00:00:00.000Z'],
    ]);
  });

  it('refuses unpin_at before created_at with note_unpin_at_earlier_than_creation_date at notes.N.unpin_at', async () => {
    const before = await h.ctx.tableCounts();
    const res = await postNotes('N-PIN', [
      { body: 'Fine' },
      { body: 'Backwards', created_at: '2025-05-01T00:00:00Z', is_pinned: true, unpin_at: '2025-04-30T23:59:59Z' },
    ]);
    const errors = expectEnvelope(res, 400, 'invalid_request');
    expect(pairs(errors)).toEqual(['note_unpin_at_earlier_than_creation_date@notes.1.unpin_at']);
    expect(await h.ctx.tableCounts()).toEqual(before);
  });
});

describe('notes: validation', () => {
  beforeAll(async () => {
    await h.importAccount('N-VALID');
  });

  it.each([
    ['an empty note', {}],
    ['a note with only created_at and pinning', { created_at: '2025-01-01T00:00:00Z', is_pinned: true }],
    ['an empty document_paths list', { document_paths: [] }],
  ])('refuses %s with note_body_or_document_path_not_found at notes.N', async (_what, note) => {
    const before = await h.ctx.tableCounts();
    const res = await postNotes('N-VALID', [{ body: 'ok' }, { body: 'also ok' }, note]);
    const errors = expectEnvelope(res, 400, 'invalid_request');
    expect(pairs(errors)).toEqual(['note_body_or_document_path_not_found@notes.2']);
    expect(await h.ctx.tableCounts()).toEqual(before);
  });

  it('refuses a document that is not in storage with document_not_found at its path', async () => {
    const before = await h.ctx.tableCounts();
    const res = await postNotes('N-VALID', [
      { body: 'first' },
      { body: 'with documents', document_paths: [{ document_path: 'letters/welcome.txt' }, { document_path: 'letters/missing.txt' }] },
    ]);
    const errors = expectEnvelope(res, 400, 'invalid_request');
    expect(pairs(errors)).toEqual(['document_not_found@notes.1.document_paths.1.document_path']);
    expect(await h.ctx.tableCounts()).toEqual(before);
  });

  it('refuses a document path outside the supplier root with invalid_document_path', async () => {
    // A file reachable through `..` must still be refused: the path, not the file, is wrong.
    await h.ctx.deps.documents.put('suppliers/outside.txt', 'not the supplier root');
    const before = await h.ctx.tableCounts();
    const res = await postNotes('N-VALID', [
      { document_paths: [{ document_path: '../x' }] },
      // One leading / is the supplier's root (decisions §1); a second one cannot climb out of it.
      { document_paths: [{ document_path: '//etc/passwd' }] },
      { body: 'b', document_paths: [{ document_path: 'letters/welcome.txt' }, { document_path: '../outside.txt' }] },
      { document_paths: [{ document_path: 'letters/../letters/welcome.txt' }] },
    ]);
    const errors = expectEnvelope(res, 400, 'invalid_request');
    expect(pairs(errors).sort()).toEqual(
      [
        'invalid_document_path@notes.0.document_paths.0.document_path',
        'invalid_document_path@notes.1.document_paths.0.document_path',
        'invalid_document_path@notes.2.document_paths.1.document_path',
        'invalid_document_path@notes.3.document_paths.0.document_path',
      ].sort(),
    );
    expect(await h.ctx.tableCounts()).toEqual(before);
  });

  it('creates a note whose documents are all in storage, keeping the paths as given', async () => {
    const res = await postNotes('N-VALID', [
      { document_paths: [{ document_path: 'letters/welcome.txt' }, { document_path: 'letters/final.pdf' }] },
      { body: 'Letter attached', document_paths: [{ document_path: 'letters/welcome.txt' }] },
    ]);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toEqual([
      { created_at: '2026-06-15T12:00:00Z', body: null, status: 'NOTE_CREATION_SUCCESS' },
      { created_at: '2026-06-15T12:00:00Z', body: 'Letter attached', status: 'NOTE_CREATION_SUCCESS' },
    ]);
    const rows = await noteRows('N-VALID');
    expect(rows.map((r) => [r.body, r.document_paths])).toEqual([
      [null, ['letters/welcome.txt', 'letters/final.pdf']],
      ['Letter attached', ['letters/welcome.txt']],
    ]);
  });

  it('reports several problems of the request together, each at its own attr', async () => {
    const before = await h.ctx.tableCounts();
    const res = await postNotes('N-VALID', [
      { body: 'x', created_at: '2025-05-01T00:00:00Z', is_pinned: true, unpin_at: '2025-01-01T00:00:00Z' },
      { body: 'fine' },
      {},
      { body: 'bad date', created_at: 'yesterday' },
      { body: 'bad type', is_pinned: 'yes' },
      { body: 'unknown', colour: 'red' },
    ]);
    const errors = expectEnvelope(res, 400, 'invalid_request');
    expect(pairs(errors).sort()).toEqual(
      [
        'note_unpin_at_earlier_than_creation_date@notes.0.unpin_at',
        'note_body_or_document_path_not_found@notes.2',
        'invalid_datetime@notes.3.created_at',
        'invalid_type@notes.4.is_pinned',
        'unknown_field@notes.5.colour',
      ].sort(),
    );
    expect(await h.ctx.tableCounts()).toEqual(before);
  });

  it('reports several storage problems together', async () => {
    const before = await h.ctx.tableCounts();
    const res = await postNotes('N-VALID', [
      { document_paths: [{ document_path: 'letters/gone-1.txt' }] },
      { body: 'fine', document_paths: [{ document_path: 'letters/welcome.txt' }] },
      { document_paths: [{ document_path: '../x' }, { document_path: 'letters/gone-2.txt' }] },
    ]);
    const errors = expectEnvelope(res, 400, 'invalid_request');
    expect(pairs(errors).sort()).toEqual(
      [
        'document_not_found@notes.0.document_paths.0.document_path',
        'invalid_document_path@notes.2.document_paths.0.document_path',
        'document_not_found@notes.2.document_paths.1.document_path',
      ].sort(),
    );
    expect(await h.ctx.tableCounts()).toEqual(before);
  });

  // decisions §3: "one item per problem". A note without body or documents and a missing document
  // in the same request are two problems; both must be reported, not only the schema one.
  it('reports a field problem and a storage problem of the same request together', async () => {
    const res = await postNotes('N-VALID', [{}, { document_paths: [{ document_path: 'letters/gone-3.txt' }] }]);
    const errors = expectEnvelope(res, 400, 'invalid_request');
    expect(pairs(errors).sort()).toEqual(
      ['note_body_or_document_path_not_found@notes.0', 'document_not_found@notes.1.document_paths.0.document_path'].sort(),
    );
  });

  it('a 400 leaves every table unchanged even when most notes were valid', async () => {
    const before = await h.ctx.tableCounts();
    const notes = [...Array.from({ length: 10 }, (_, i) => ({ body: `valid ${i}` })), { body: 'bad', created_at: '2026-02-30T00:00:00Z' }];
    const res = await postNotes('N-VALID', notes);
    const errors = expectEnvelope(res, 400, 'invalid_request');
    expect(pairs(errors)).toEqual(['invalid_datetime@notes.10.created_at']);
    expect(await h.ctx.tableCounts()).toEqual(before);
    // And none of them counts as existing afterwards.
    const again = await postNotes('N-VALID', [{ body: 'valid 0' }]);
    expect(statuses(again)).toEqual(['NOTE_CREATION_SUCCESS']);
  });

  it('refuses an empty notes array', async () => {
    const res = await postNotes('N-VALID', []);
    const errors = expectEnvelope(res, 400, 'invalid_request');
    expect(pairs(errors)).toEqual(['min_items@notes']);
  });
});

describe('notes: request size limits (decisions §7)', () => {
  it('accepts 1,000 notes in one request and refuses 1,001 with too_many_items', async () => {
    await h.importAccount('N-LIMIT');
    const make = (n: number) => Array.from({ length: n }, (_, i) => ({ body: `Bulk note ${i}` }));
    const before = await h.ctx.tableCounts();
    const over = await postNotes('N-LIMIT', make(1001));
    expect(pairs(expectEnvelope(over, 400, 'invalid_request'))).toEqual(['too_many_items@notes']);
    expect(await h.ctx.tableCounts()).toEqual(before);
    const ok = await postNotes('N-LIMIT', make(1000));
    expect(ok.statusCode, ok.body.slice(0, 500)).toBe(201);
    expect(statuses(ok).every((s) => s === 'NOTE_CREATION_SUCCESS')).toBe(true);
    expect(await noteRows('N-LIMIT')).toHaveLength(1000);
  });
});
