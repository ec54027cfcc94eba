import type { DocumentsConfig } from '../config.js';
import { LocalDocumentStore } from './local-store.js';
import { S3DocumentStore } from './s3-store.js';

/**
 * Where supplier documents live. Keys are `/`-separated and must come from resolveDocumentKey:
 * the stores trust them (the local store still refuses to leave its folder).
 */
export interface DocumentStore {
  readonly kind: 'local' | 's3';
  /** Null when there is no such document; any other failure (storage unreachable, denied) throws. */
  head(key: string): Promise<{ size: number } | null>;
  /** The first `bytes` bytes (fewer when the document is shorter), or null when there is no such document. */
  readStart(key: string, bytes: number): Promise<Buffer | null>;
  put(key: string, body: Buffer | string): Promise<void>;
  close(): void;
}

export type DocumentKeyResult = { ok: true; key: string } | { ok: false; reason: string };

/** S3's own limit on a key, in UTF-8 bytes; also applied to a payload path alone. */
export const MAX_DOCUMENT_KEY_BYTES = 1024;
/** The longest file or folder name common file systems allow (ext4, XFS, APFS, NTFS), in bytes. */
export const MAX_DOCUMENT_NAME_BYTES = 255;

/**
 * Validates a payload's document path and joins it under the supplier's root. The only place this
 * happens, so every way out of the root is refused here rather than trusted to each caller.
 *
 * Percent signs: a `%` followed by two hex digits is refused outright. Storage keys are never
 * URL-decoded by us, but a proxy, a console, a sync tool or a later developer might decode them,
 * and then `%2e%2e` is `..` (and `%252e` after two decodings). Listing the dangerous escapes
 * would miss some; no legitimate supplier path needs an escape, while a bare `%` ("50% off.pdf")
 * cannot decode to anything and stays allowed.
 */
export function resolveDocumentKey(root: string, given: string): DocumentKeyResult {
  const normalisedRoot = normaliseDocumentsRoot(root);
  // One leading `/` means the supplier's root, as the published examples write paths (decisions §1);
  // anything after it is checked like any other path, so `//x` or `/../x` still cannot leave the root.
  const path = typeof given === 'string' && given.startsWith('/') && given.length > 1 ? given.slice(1) : given;
  const problem = pathProblem(path);
  if (problem !== null) return { ok: false, reason: problem };
  const key = normalisedRoot === '' ? path : `${normalisedRoot}/${path}`;
  if (Buffer.byteLength(key, 'utf8') > MAX_DOCUMENT_KEY_BYTES) {
    return { ok: false, reason: `the path is too long once placed under the supplier's document root (over ${MAX_DOCUMENT_KEY_BYTES} bytes)` };
  }
  return { ok: true, key };
}

/**
 * The operator-configured root without leading or trailing `/` ('' for none). A root that would
 * itself be refused as a path is a configuration error, not the supplier's: it throws rather than
 * blaming the payload, so it surfaces as a server failure and in the logs.
 */
export function normaliseDocumentsRoot(root: string): string {
  const trimmed = root.replace(/^\/+|\/+$/g, '');
  if (trimmed === '') return '';
  const problem = pathProblem(trimmed);
  if (problem !== null) throw new Error(`invalid import supplier documents_root ${JSON.stringify(root)}: ${problem}`);
  return trimmed;
}

export function createDocumentStore(config: DocumentsConfig): DocumentStore {
  return config.kind === 's3' ? new S3DocumentStore(config) : new LocalDocumentStore(config.dir);
}

// Cc: C0 controls including NUL, DEL and the C1 controls.
const CONTROL = /\p{Cc}/u;
// A lone surrogate has no UTF-8 form: the SDK would send U+FFFD, naming some other object.
const LONE_SURROGATE = /\p{Cs}/u;
const PERCENT_ESCAPE = /%[0-9a-f]{2}/i;
const DRIVE_LETTER = /^[a-z]:/i;

function pathProblem(path: string): string | null {
  if (typeof path !== 'string') return 'the path is not a string';
  if (path === '') return 'the path is empty';
  if (Buffer.byteLength(path, 'utf8') > MAX_DOCUMENT_KEY_BYTES) return `the path is longer than ${MAX_DOCUMENT_KEY_BYTES} bytes`;
  const own = shapeProblem(path);
  if (own !== null) return own;
  // Fullwidth dots and slashes, the one- and two-dot leaders and the like become `.`, `..` and
  // `/` under compatibility normalisation, which some file systems and tools apply.
  const folded = path.normalize('NFKC');
  if (folded !== path && shapeProblem(folded) !== null) return 'the path contains characters that normalise to an unsafe path';
  return null;
}

function shapeProblem(path: string): string | null {
  if (CONTROL.test(path)) return 'the path contains a control character';
  if (LONE_SURROGATE.test(path)) return 'the path is not valid Unicode';
  if (path.includes('\\')) return 'the path contains a backslash';
  if (PERCENT_ESCAPE.test(path)) return 'the path contains a percent-encoded sequence';
  if (path.startsWith('/') || DRIVE_LETTER.test(path)) return 'the path is absolute';
  if (path.endsWith('/')) return 'the path ends with /';
  for (const segment of path.split('/')) {
    if (segment === '') return 'the path contains an empty segment (//)';
    if (segment === '.' || segment === '..') return `the path contains a '${segment}' segment`;
    if (Buffer.byteLength(segment, 'utf8') > MAX_DOCUMENT_NAME_BYTES) return `a file or folder name in the path is longer than ${MAX_DOCUMENT_NAME_BYTES} bytes`;
  }
  return null;
}
