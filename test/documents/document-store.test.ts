import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import S3rver from 's3rver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DocumentsConfig } from '../../src/config.js';
import { createDocumentStore, normaliseDocumentsRoot, resolveDocumentKey, type DocumentStore } from '../../src/documents/document-store.js';

const BUCKET = 'test-bucket';
const tempDirs: string[] = [];
let s3rver: S3rver;
let s3Endpoint: string;

async function tempDir(label: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `di-documents-${label}-`));
  tempDirs.push(dir);
  return dir;
}

function s3Config(overrides: Partial<Extract<DocumentsConfig, { kind: 's3' }>> = {}): DocumentsConfig {
  return {
    kind: 's3',
    bucket: BUCKET,
    endpoint: s3Endpoint,
    region: 'eu-west-2',
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    ...overrides,
  };
}

beforeAll(async () => {
  s3rver = new S3rver({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory: await tempDir('s3rver'),
    configureBuckets: [{ name: BUCKET }],
  });
  const { port } = await s3rver.run();
  s3Endpoint = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  await s3rver?.close();
  await Promise.all(tempDirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

const factories: Array<[DocumentStore['kind'], () => Promise<DocumentStore>]> = [
  ['local', async () => createDocumentStore({ kind: 'local', dir: await tempDir('local') })],
  ['s3', async () => createDocumentStore(s3Config())],
];

describe.each(factories)('%s document store', (kind, make) => {
  let store: DocumentStore;

  beforeAll(async () => {
    store = await make();
  });

  afterAll(() => {
    store?.close();
  });

  it('reports its kind', () => {
    expect(store.kind).toBe(kind);
  });

  it('puts a document and heads its size', async () => {
    await store.put('put-head/a.bin', Buffer.from([1, 2, 3, 4, 5]));
    expect(await store.head('put-head/a.bin')).toEqual({ size: 5 });
  });

  it('measures a string body in UTF-8 bytes', async () => {
    await store.put('put-head/text.txt', 'héllo');
    expect(await store.head('put-head/text.txt')).toEqual({ size: 6 });
  });

  it('replaces a document put twice', async () => {
    await store.put('put-head/twice.txt', 'first version');
    await store.put('put-head/twice.txt', 'second');
    expect(await store.head('put-head/twice.txt')).toEqual({ size: 6 });
    expect((await store.readStart('put-head/twice.txt', 100))?.toString()).toBe('second');
  });

  it('reads exactly the first N bytes', async () => {
    await store.put('read/statement.pdf', '%PDF-1.7\nrest of the document');
    const start = await store.readStart('read/statement.pdf', 4);
    expect(start).toBeInstanceOf(Buffer);
    expect(start?.toString('latin1')).toBe('%PDF');
  });

  it('reads binary bytes unchanged', async () => {
    const body = Buffer.from([0x00, 0xff, 0x25, 0x50, 0x80, 0x0a, 0x0d]);
    await store.put('read/binary.bin', body);
    expect(await store.readStart('read/binary.bin', 6)).toEqual(body.subarray(0, 6));
  });

  it('reads fewer bytes when the document is shorter', async () => {
    await store.put('read/short.txt', 'ab');
    expect((await store.readStart('read/short.txt', 4))?.toString()).toBe('ab');
  });

  it('reads an empty document as no bytes, not as missing', async () => {
    await store.put('read/empty.txt', '');
    expect(await store.head('read/empty.txt')).toEqual({ size: 0 });
    expect(await store.readStart('read/empty.txt', 4)).toEqual(Buffer.alloc(0));
  });

  it('refuses a byte count below one', async () => {
    await store.put('read/count.txt', 'abc');
    await expect(store.readStart('read/count.txt', 0)).rejects.toThrow(RangeError);
    await expect(store.readStart('read/count.txt', 1.5)).rejects.toThrow(RangeError);
  });

  it('answers null for a missing key', async () => {
    expect(await store.head('missing/nothing.pdf')).toBeNull();
    expect(await store.readStart('missing/nothing.pdf', 4)).toBeNull();
  });

  it('answers null for a key that is only a folder of other documents', async () => {
    await store.put('prefix/inner/doc.pdf', '%PDF');
    expect(await store.head('prefix/inner')).toBeNull();
    expect(await store.readStart('prefix/inner', 4)).toBeNull();
  });

  it('answers null for a key below an existing document', async () => {
    await store.put('parent/doc.pdf', '%PDF');
    expect(await store.head('parent/doc.pdf/child.pdf')).toBeNull();
    expect(await store.readStart('parent/doc.pdf/child.pdf', 4)).toBeNull();
  });

  it.each([
    'suppliers/acme/statements/2024/01/statement.pdf',
    'notes/ünïcödé file.pdf',
    'notes/with  two spaces .pdf',
    'notes/日本語/請求書.pdf',
    'notes/emoji 📄.pdf',
    'notes/a+b&c=d (1).pdf',
    'notes/50% off.pdf',
  ])('stores and finds %j', async (key) => {
    await store.put(key, `%PDF ${key}`);
    expect(await store.head(key)).toEqual({ size: Buffer.byteLength(`%PDF ${key}`) });
    expect((await store.readStart(key, 4))?.toString()).toBe('%PDF');
  });

  it('finds a document by the key resolveDocumentKey gives', async () => {
    const resolved = resolveDocumentKey('/suppliers/acme/', 'statements/2024/01.pdf');
    if (!resolved.ok) throw new Error(resolved.reason);
    await store.put('suppliers/acme/statements/2024/01.pdf', '%PDF-1.4');
    expect(await store.head(resolved.key)).toEqual({ size: 8 });
  });
});

describe('local document store', () => {
  it('refuses a key that would leave its folder, even one resolveDocumentKey would never give', async () => {
    const parent = await tempDir('local-escape');
    await writeFile(path.join(parent, 'outside.pdf'), '%PDF');
    const store = createDocumentStore({ kind: 'local', dir: path.join(parent, 'docs') });
    await expect(store.head('../outside.pdf')).rejects.toThrow(/outside the documents folder/);
    await expect(store.readStart('a/../../outside.pdf', 4)).rejects.toThrow(/outside the documents folder/);
    await expect(store.put('../outside.pdf', 'x')).rejects.toThrow(/outside the documents folder/);
    await expect(store.head('')).rejects.toThrow(/outside the documents folder/);
  });

  it('resolves a relative folder against the working directory', async () => {
    const dir = await tempDir('local-relative');
    const store = createDocumentStore({ kind: 'local', dir: path.relative(process.cwd(), dir) });
    await store.put('x/y.pdf', '%PDF');
    expect(await createDocumentStore({ kind: 'local', dir }).head('x/y.pdf')).toEqual({ size: 4 });
    expect(store.kind).toBe('local');
  });
});

describe('s3 document store failures', () => {
  it('rejects, not null, quickly when the endpoint is unreachable', async () => {
    const port = await closedLoopbackPort();
    const store = createDocumentStore(s3Config({ endpoint: `http://127.0.0.1:${port}` }));
    try {
      const started = Date.now();
      await expect(store.head('statements/01.pdf')).rejects.toThrow();
      await expect(store.readStart('statements/01.pdf', 4)).rejects.toThrow();
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      store.close();
    }
  });

  it('rejects, not null, when the bucket does not exist', async () => {
    const store = createDocumentStore(s3Config({ bucket: 'no-such-bucket' }));
    try {
      await expect(store.head('statements/01.pdf')).rejects.toThrow(/"no-such-bucket" does not exist/);
      await expect(store.readStart('statements/01.pdf', 4)).rejects.toMatchObject({ name: 'NoSuchBucket' });
    } finally {
      store.close();
    }
  });
});

/** A path of exactly `bytes` ASCII bytes, of names no longer than a file system allows. */
const long = (bytes: number): string => {
  const names: string[] = [];
  let left = bytes;
  while (left > 0) {
    const n = Math.min(250, left - (names.length ? 1 : 0));
    names.push('x'.repeat(n));
    left -= n + (names.length > 1 ? 1 : 0);
  }
  return names.join('/');
};

describe('resolveDocumentKey', () => {
  it.each([
    ['../x', /'\.\.' segment/],
    ['a/../../x', /'\.\.' segment/],
    ['a/..', /'\.\.' segment/],
    ['..', /'\.\.' segment/],
    // One leading / is the supplier's root (decisions §1); what follows it is checked as usual.
    ['//etc/passwd', /absolute/],
    ['/../etc/passwd', /'\.\.' segment/],
    ['/', /absolute|empty/],
    ['C:\\x', /backslash|absolute/],
    ['C:/x', /absolute/],
    ['\\\\server\\share\\x', /backslash/],
    ['a\\b', /backslash/],
    ['..\\x', /backslash/],
    ['%2e%2e/x', /percent-encoded/],
    ['%2E%2E%2Fx', /percent-encoded/],
    ['a%2fb', /percent-encoded/],
    ['a%5cb', /percent-encoded/],
    ['a%00b', /percent-encoded/],
    ['%252e%252e/x', /percent-encoded/],
    ['a\u0000b', /control character/],
    ['a\nb', /control character/],
    ['a\tb', /control character/],
    ['a\u007fb', /control character/],
    ['a\u0085b', /control character/],
    ['a//b', /empty segment/],
    ['a/', /ends with \//],
    ['./a', /'\.' segment/],
    ['a/.', /'\.' segment/],
    ['a/./b', /'\.' segment/],
    ['', /empty/],
    ['x'.repeat(1025), /longer than 1024/],
    [long(1025), /longer than 1024/],
    ['x'.repeat(256), /longer than 255 bytes/],
    [`a/${'é'.repeat(128)}/b`, /longer than 255 bytes/],
    ['é'.repeat(513), /longer than 1024/],
    ['\uff0e\uff0e/x', /normalise/],
    ['a/\u2025/x', /normalise/],
    ['a\uff0f..\uff0fx', /normalise/],
    ['a\ud800b', /not valid Unicode/],
  ])('refuses %j', (input, reason) => {
    const result = resolveDocumentKey('suppliers/acme', input);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toMatch(reason);
  });

  it.each([
    ['statements/2024/01.pdf', 'suppliers/acme/statements/2024/01.pdf'],
    ['notes/ünïcödé file.pdf', 'suppliers/acme/notes/ünïcödé file.pdf'],
    ['x.pdf', 'suppliers/acme/x.pdf'],
    ['50% off.pdf', 'suppliers/acme/50% off.pdf'],
    ['100%.pdf', 'suppliers/acme/100%.pdf'],
    ['a..b/.hidden/x..pdf', 'suppliers/acme/a..b/.hidden/x..pdf'],
    [long(1000), `suppliers/acme/${long(1000)}`],
    ['x'.repeat(255), `suppliers/acme/${'x'.repeat(255)}`],
    // The published examples' form: a leading / is the supplier's root.
    ['/EXTERNAL-1234/2019-06-01-to-2019-07-01.pdf', 'suppliers/acme/EXTERNAL-1234/2019-06-01-to-2019-07-01.pdf'],
    ['/notes/1234/attachment.jpg', 'suppliers/acme/notes/1234/attachment.jpg'],
  ])('accepts %j', (input, key) => {
    const result = resolveDocumentKey('suppliers/acme', input);
    expect(result).toEqual({ ok: true, key });
    if (result.ok) expect(result.key.startsWith('suppliers/acme/')).toBe(true);
  });

  it.each([
    ['/suppliers/acme/', 'x.pdf', 'suppliers/acme/x.pdf'],
    ['suppliers/acme', 'x.pdf', 'suppliers/acme/x.pdf'],
    ['//suppliers/acme//', 'x.pdf', 'suppliers/acme/x.pdf'],
    ['', 'x.pdf', 'x.pdf'],
    ['/', 'x.pdf', 'x.pdf'],
  ])('normalises root %j', (root, input, key) => {
    expect(resolveDocumentKey(root, input)).toEqual({ ok: true, key });
  });

  it('never gives a key starting with /', () => {
    for (const root of ['', '/', 'r', '/r/']) {
      for (const input of ['x', 'a/b', '/x', '//x']) {
        const result = resolveDocumentKey(root, input);
        if (result.ok) expect(result.key.startsWith('/')).toBe(false);
      }
    }
  });

  it('refuses a path that fits alone but not under the root', () => {
    const result = resolveDocumentKey('suppliers/acme', long(1020));
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toMatch(/too long/);
  });

  it.each(['suppliers/../other', 'a//b', 'a\\b', 'a/./b', 'ro%2e%2eot'])('throws for a misconfigured root %j', (root) => {
    expect(() => resolveDocumentKey(root, 'x.pdf')).toThrow(/documents_root/);
    expect(() => normaliseDocumentsRoot(root)).toThrow(/documents_root/);
  });
});

/** A loopback port nothing listens on: bound, then released. */
async function closedLoopbackPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
  return port;
}
