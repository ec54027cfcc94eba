import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDocumentStore } from '../../src/documents/document-store.js';
import { createExtrasHarness, DOCS_ROOT, expectEnvelope, pairs, URLS, type ExtrasHarness } from '../http/extras/setup.js';

/**
 * The local document store serves what a supplier names by path, from the operator's folder. A
 * path must never reach a file outside the supplier's own root through a symbolic link, never
 * hang the request on a FIFO or a device, and a name too long for the file system is the
 * supplier's mistake (400), not a server failure.
 */
let h: ExtrasHarness;
let outside: string;

beforeAll(async () => {
  h = await createExtrasHarness();
  await h.importAccount('D-1');
  outside = await mkdtemp(path.join(os.tmpdir(), 'di-outside-'));
  await writeFile(path.join(outside, 'secret.txt'), 'not a supplier document');
  const supplierRoot = path.join(h.docsDir, ...DOCS_ROOT.split('/'));
  await mkdir(path.join(supplierRoot, 'letters'), { recursive: true });
  await writeFile(path.join(supplierRoot, 'letters', 'real.txt'), 'a real letter');
  // A link to a file outside, a link to a folder outside, and a link into another supplier's root.
  await symlink(path.join(outside, 'secret.txt'), path.join(supplierRoot, 'letters', 'link.txt'));
  await symlink(outside, path.join(supplierRoot, 'escape'));
  await mkdir(path.join(h.docsDir, 'suppliers', 'other-co'), { recursive: true });
  await writeFile(path.join(h.docsDir, 'suppliers', 'other-co', 'theirs.txt'), "another supplier's letter");
  await symlink(path.join(h.docsDir, 'suppliers', 'other-co'), path.join(supplierRoot, 'neighbour'));
  // A FIFO nobody writes to: opening it for reading the ordinary way waits forever.
  execFileSync('mkfifo', [path.join(supplierRoot, 'letters', 'pipe.txt')]);
});

afterAll(async () => {
  await h?.close();
  if (outside) await rm(outside, { recursive: true, force: true });
});

const postNote = (documentPath: string) =>
  h.post(URLS.notes, { import_supplier: 'EXTRAS_CO', external_account_number: 'D-1', notes: [{ body: 'see letter', document_paths: [{ document_path: documentPath }] }] });

describe('local documents: symbolic links, special files and long names', () => {
  it('imports a note whose document is a regular file inside the supplier root', async () => {
    const res = await postNote('letters/real.txt');
    expect(res.statusCode).toBe(201);
  });

  it.each([
    ['a link to a file outside the documents folder', 'letters/link.txt'],
    ['a path through a link to a folder outside', 'escape/secret.txt'],
    ["a path through a link into another supplier's root", 'neighbour/theirs.txt'],
    ['a FIFO (answers at once instead of waiting for a writer)', 'letters/pipe.txt'],
  ])('treats %s as no document: document_not_found, nothing imported', async (_what, documentPath) => {
    const before = await h.ctx.tableCounts();
    const res = await postNote(documentPath);
    const errors = expectEnvelope(res, 400, 'invalid_request');
    expect(pairs(errors)).toEqual(['document_not_found@notes.0.document_paths.0.document_path']);
    expect(await h.ctx.tableCounts()).toEqual(before);
  });

  it('answers a name longer than a file system allows with 400 invalid_document_path, not 500', async () => {
    const before = await h.ctx.tableCounts();
    const res = await postNote(`letters/${'n'.repeat(300)}.txt`);
    const errors = expectEnvelope(res, 400, 'invalid_request');
    expect(pairs(errors)).toEqual(['invalid_document_path@notes.0.document_paths.0.document_path']);
    expect(errors[0]!.detail).toMatch(/longer than 255 bytes/);
    expect(await h.ctx.tableCounts()).toEqual(before);
  });

  it('still serves a documents folder that is itself a link (an operator may mount it anywhere)', async () => {
    const real = await mkdtemp(path.join(os.tmpdir(), 'di-docs-real-'));
    const linked = `${real}-link`;
    try {
      await mkdir(path.join(real, 'a'), { recursive: true });
      await writeFile(path.join(real, 'a', 'b.txt'), 'hello');
      await symlink(real, linked);
      const store = createDocumentStore({ kind: 'local', dir: linked });
      expect(await store.head('a/b.txt')).toEqual({ size: 5 });
      expect((await store.readStart('a/b.txt', 5))?.toString()).toBe('hello');
    } finally {
      await rm(linked, { force: true });
      await rm(real, { recursive: true, force: true });
    }
  });
});
