import { randomUUID } from 'node:crypto';
import { constants } from 'node:fs';
import { mkdir, open, realpath, rename, rm, writeFile, type FileHandle } from 'node:fs/promises';
import path from 'node:path';

/**
 * Never follow a symbolic link in the last component, and never wait on a FIFO or a device whose
 * other end is not there: such an open returns at once, and fstat then says it is no document.
 */
const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

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
    const handle = await this.#openDocument(key);
    if (handle === null) return null;
    try {
      return { size: (await handle.stat()).size };
    } finally {
      await handle.close();
    }
  }

  async readStart(key: string, bytes: number): Promise<Buffer | null> {
    assertByteCount(bytes);
    const handle = await this.#openDocument(key);
    if (handle === null) return null;
    try {
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

  /**
   * The document's open handle, or null when there is none: missing, a folder (a key prefix in
   * object-storage terms), a FIFO, a socket or a device, or a path through a symbolic link. A link
   * could lead out of the supplier's root, into another supplier's documents or anywhere on the
   * machine, so no link below the documents folder is followed (the folder itself may be one).
   */
  async #openDocument(key: string): Promise<FileHandle | null> {
    const file = this.#file(key);
    let real: string;
    let root: string;
    let handle: FileHandle;
    try {
      [real, root] = await Promise.all([realpath(file), realpath(this.#dir)]);
      if (real !== path.join(root, ...key.split('/'))) return null;
      handle = await open(real, READ_FLAGS);
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
    try {
      if ((await handle.stat()).isFile()) return handle;
    } catch (err) {
      await handle.close();
      throw err;
    }
    await handle.close();
    return null;
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
  // ENOTDIR: a parent in the key is a file, so the document cannot exist. ELOOP: the key's last
  // component is a symbolic link (O_NOFOLLOW), or links loop: no document either way.
  return code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP';
}

function assertByteCount(bytes: number): void {
  if (!Number.isSafeInteger(bytes) || bytes < 1) throw new RangeError(`readStart needs a whole number of bytes of at least 1, got ${bytes}`);
}
