import { randomUUID } from 'node:crypto';
import { mkdir, open, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';

// Not `implements DocumentStore`: importing the interface would make a module cycle with the
// factory; createDocumentStore checks the shape instead.
export class LocalDocumentStore {
  readonly kind = 'local' as const;
  readonly #dir: string;
  readonly #prefix: string;

  /** `dir` relative to the process's working folder, as configured. */
  constructor(dir: string) {
    this.#dir = path.resolve(dir);
    this.#prefix = this.#dir.endsWith(path.sep) ? this.#dir : this.#dir + path.sep;
  }

  async head(key: string): Promise<{ size: number } | null> {
    const file = this.#file(key);
    try {
      const info = await stat(file);
      // A folder is a key prefix in object-storage terms, not a document.
      return info.isFile() ? { size: info.size } : null;
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  }

  async readStart(key: string, bytes: number): Promise<Buffer | null> {
    assertByteCount(bytes);
    const file = this.#file(key);
    let handle;
    try {
      handle = await open(file, 'r');
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
    try {
      if (!(await handle.stat()).isFile()) return null;
      const buffer = Buffer.alloc(bytes);
      let filled = 0;
      // read() may return fewer bytes than asked before the end of the file.
      while (filled < bytes) {
        const { bytesRead } = await handle.read(buffer, filled, bytes - filled, filled);
        if (bytesRead === 0) break;
        filled += bytesRead;
      }
      return buffer.subarray(0, filled);
    } finally {
      await handle.close();
    }
  }

  async put(key: string, body: Buffer | string): Promise<void> {
    const file = this.#file(key);
    await mkdir(path.dirname(file), { recursive: true });
    // Write then rename, so a reader never sees half a document (as with S3's atomic PutObject).
    const temp = `${file}.${randomUUID()}.tmp`;
    try {
      await writeFile(temp, body);
      await rename(temp, file);
    } catch (err) {
      await rm(temp, { force: true });
      throw err;
    }
  }

  close(): void {}

  /** Keys are validated upstream; this re-checks so a bug there still cannot reach outside the folder. */
  #file(key: string): string {
    const file = path.resolve(this.#dir, ...key.split('/'));
    if (!file.startsWith(this.#prefix)) {
      throw new Error(`document key ${JSON.stringify(key)} resolves outside the documents folder`);
    }
    return file;
  }
}

function isMissing(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  // ENOTDIR: a parent in the key is a file, so the document cannot exist.
  return code === 'ENOENT' || code === 'ENOTDIR';
}

function assertByteCount(bytes: number): void {
  if (!Number.isSafeInteger(bytes) || bytes < 1) throw new RangeError(`readStart needs a whole number of bytes of at least 1, got ${bytes}`);
}
