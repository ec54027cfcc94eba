import { resolveDocumentKey, type DocumentStore } from '../../documents/document-store.js';
import { item, type ErrorItem } from '../../errors.js';

const PDF_MAGIC = Buffer.from('%PDF');

/**
 * Checks that a payload's document path is safe and the document is in storage (and a PDF when
 * asked): the error item to report at `attr`, or null when it is fine. Storage failures throw.
 */
export async function checkDocument(
  store: DocumentStore,
  root: string,
  path: string,
  attr: string,
  opts: { pdf?: boolean } = {},
): Promise<ErrorItem | null> {
  const resolved = resolveDocumentKey(root, path);
  if (!resolved.ok) return item('invalid_document_path', `Invalid document path: ${resolved.reason}`, attr);
  if (opts.pdf) {
    const start = await store.readStart(resolved.key, PDF_MAGIC.length);
    if (start === null) return item('document_not_found', `Document '${path}' was not found in storage.`, attr);
    if (!start.equals(PDF_MAGIC)) return item('document_not_pdf', `Document '${path}' is not a PDF.`, attr);
    return null;
  }
  const head = await store.head(resolved.key);
  return head === null ? item('document_not_found', `Document '${path}' was not found in storage.`, attr) : null;
}
