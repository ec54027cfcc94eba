import type { Readable } from 'node:stream';

export interface Line {
  /** 1-based physical line number in the upload. */
  number: number;
  /** The line's text, or null when it was longer than the limit (its bytes were dropped). */
  text: string | null;
}

/** The stream went past the reader's `maxTotalBytes`. */
export class TooManyBytes extends Error {
  override readonly name = 'TooManyBytes';
  constructor(readonly maxTotalBytes: number) {
    super(`more than ${maxTotalBytes} bytes`);
  }
}

/**
 * Splits a byte stream into lines without ever holding more than one line (capped at `maxBytes`)
 * in memory: an oversized line is reported as such and skipped, never buffered. Handles CRLF and a
 * missing final newline; blank lines are skipped but still counted. Throws TooManyBytes as soon as
 * the stream has sent more than `maxTotalBytes` in all, before any line of that chunk is yielded.
 */
export async function* readLines(stream: Readable, maxBytes: number, maxTotalBytes = Number.POSITIVE_INFINITY): AsyncGenerator<Line> {
  const decoder = new TextDecoder('utf-8', { fatal: false });
  let parts: Buffer[] = [];
  let size = 0;
  let overflow = false;
  let number = 0;
  let total = 0;

  /** Ends the line held in `parts`, or `whole`: a line found entirely inside one chunk. */
  const finish = (whole?: Buffer): Line | null => {
    number++;
    if (overflow) {
      overflow = false;
      parts = [];
      size = 0;
      return { number, text: null };
    }
    let buf = whole ?? (parts.length === 1 ? parts[0]! : Buffer.concat(parts, size));
    parts = [];
    size = 0;
    if (buf.length > 0 && buf[buf.length - 1] === 0x0d) buf = buf.subarray(0, buf.length - 1);
    if (buf.length > maxBytes) return { number, text: null };
    const text = decoder.decode(buf);
    return text.trim() === '' ? null : { number, text };
  };

  for await (const chunk of stream as AsyncIterable<Buffer | string>) {
    let buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    total += buf.length;
    if (total > maxTotalBytes) throw new TooManyBytes(maxTotalBytes);
    for (;;) {
      const nl = buf.indexOf(0x0a);
      const piece = nl === -1 ? buf : buf.subarray(0, nl);
      if (nl !== -1 && parts.length === 0 && !overflow) {
        // The common case, a whole line inside this chunk: decoded straight from it, no copy.
        // (Copying every line cost an off-heap allocation per line, most of an upload's RSS growth.)
        const line = finish(piece);
        if (line) yield line;
        buf = buf.subarray(nl + 1);
        continue;
      }
      if (!overflow) {
        // A line's CR (of CRLF) is not part of it, so a line may end exactly at the limit; whether
        // a CR is the line's last byte is known only at its end (it may end a chunk), so one byte
        // more is kept here and the limit itself is checked when the line is complete.
        if (size + piece.length > maxBytes + 1) {
          overflow = true;
          parts = [];
          size = 0;
        } else if (piece.length > 0) {
          // Copy: the stream may reuse its chunk buffers.
          parts.push(Buffer.from(piece));
          size += piece.length;
        }
      }
      if (nl === -1) break;
      const line = finish();
      if (line) yield line;
      buf = buf.subarray(nl + 1);
    }
  }
  if (size > 0 || overflow) {
    const line = finish();
    if (line) yield line;
  }
}
