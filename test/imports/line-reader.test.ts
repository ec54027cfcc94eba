import { Readable } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readLines, TooManyBytes, type Line } from '../../src/imports/batches/line-reader.js';

async function collect(chunks: Buffer[], maxBytes: number): Promise<Line[]> {
  const out: Line[] = [];
  for await (const line of readLines(Readable.from(chunks), maxBytes)) out.push(line);
  return out;
}

/** What the reader must answer for `lines` joined with their endings, however the bytes are chunked. */
function expected(lines: Array<{ text: string; crlf: boolean }>, maxBytes: number): Line[] {
  return lines.flatMap(({ text }, i): Line[] => {
    if (Buffer.byteLength(text) > maxBytes) return [{ number: i + 1, text: null }];
    return text.trim() === '' ? [] : [{ number: i + 1, text }];
  });
}

/** Cuts `bytes` at the given offsets (sorted, deduplicated, inside the buffer). */
function cut(bytes: Buffer, offsets: number[]): Buffer[] {
  const at = [...new Set(offsets.map((o) => o % (bytes.length + 1)))].sort((a, b) => a - b);
  const parts: Buffer[] = [];
  let from = 0;
  for (const o of [...at, bytes.length]) {
    if (o > from) parts.push(bytes.subarray(from, o));
    from = Math.max(from, o);
  }
  return parts;
}

describe('readLines', () => {
  it('gives every line with its number, however the stream is chunked (lines whole in a chunk or split across many)', async () => {
    const lineArb = fc.record({
      // No CR or LF inside a line; multi-byte characters so that chunk cuts fall inside them too.
      text: fc.string({ unit: fc.constantFrom('a', 'é', '€', '😀', ' ', '{', '"'), maxLength: 40 }),
      crlf: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(lineArb, { maxLength: 20 }),
        fc.array(fc.nat(), { maxLength: 30 }),
        fc.integer({ min: 4, max: 60 }),
        fc.boolean(),
        async (lines, offsets, maxBytes, finalNewline) => {
          const body = lines.map((l, i) => l.text + (i < lines.length - 1 || finalNewline ? (l.crlf ? '\r\n' : '\n') : '')).join('');
          const got = await collect(cut(Buffer.from(body), offsets), maxBytes);
          expect(got).toEqual(expected(lines, maxBytes));
        },
      ),
      { numRuns: 500, seed: 20261122 },
    );
  });

  it('copies a line that spans chunks: a stream that reuses its buffer after handing it over changes no line', async () => {
    const reused = Buffer.alloc(6);
    async function* chunks() {
      for (const part of ['{"a":', '1}\n{"b', '":2}\n']) {
        reused.fill(0x78); // the previous chunk's bytes are gone
        reused.write(part);
        yield reused.subarray(0, Buffer.byteLength(part));
      }
    }
    const lines: Line[] = [];
    // The generator itself, not Readable.from (which would read ahead): each chunk is asked for only when needed.
    for await (const line of readLines(chunks() as unknown as Readable, 100)) lines.push(line);
    expect(lines).toEqual([
      { number: 1, text: '{"a":1}' },
      { number: 2, text: '{"b":2}' },
    ]);
  });

  it('reads a stream of exactly maxTotalBytes, and throws TooManyBytes at the chunk that passes it, before any of its lines', async () => {
    const body = Buffer.from('{"a":1}\n{"b":2}\n{"c":3}\n'); // 24 bytes
    const read = async (maxTotalBytes: number) => {
      const lines: Line[] = [];
      try {
        for await (const line of readLines(Readable.from(cut(body, [8, 16])), 100, maxTotalBytes)) lines.push(line);
        return { lines, error: null };
      } catch (err) {
        return { lines, error: err };
      }
    };
    expect(await read(24)).toEqual({ lines: [{ number: 1, text: '{"a":1}' }, { number: 2, text: '{"b":2}' }, { number: 3, text: '{"c":3}' }], error: null });
    const over = await read(23);
    expect(over.lines.map((l) => l.number)).toEqual([1, 2]);
    expect(over.error).toBeInstanceOf(TooManyBytes);
    expect((over.error as TooManyBytes).maxTotalBytes).toBe(23);
  });
});
