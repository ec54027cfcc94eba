import { GetObjectCommand, HeadBucketCommand, HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { DocumentsConfig } from '../config.js';

type S3Config = Extract<DocumentsConfig, { kind: 's3' }>;

/**
 * The SDK's defaults are no connection or request timeout and three attempts, so an unreachable
 * endpoint would hold a supplier's request (and an account lock) for minutes. These make it fail
 * in seconds; the budget is generous for the small ranged reads the imports make.
 */
const CONNECTION_TIMEOUT_MS = 3_000;
const REQUEST_TIMEOUT_MS = 15_000;
const MAX_ATTEMPTS = 2;

// Not `implements DocumentStore`: importing the interface would make a module cycle with the
// factory; createDocumentStore checks the shape instead.
export class S3DocumentStore {
  readonly kind = 's3' as const;
  readonly #client: S3Client;
  readonly #bucket: string;
  #bucketConfirmed = false;

  constructor(config: S3Config) {
    this.#bucket = config.bucket;
    this.#client = new S3Client({
      region: config.region,
      forcePathStyle: config.forcePathStyle,
      ...(config.endpoint !== undefined ? { endpoint: config.endpoint } : {}),
      // Unset: the SDK's default chain (environment, instance or task role).
      ...(config.credentials !== undefined ? { credentials: config.credentials } : {}),
      maxAttempts: MAX_ATTEMPTS,
      requestHandler: {
        connectionTimeout: CONNECTION_TIMEOUT_MS,
        requestTimeout: REQUEST_TIMEOUT_MS,
        // Without it a breached requestTimeout is only logged as a warning.
        throwOnRequestTimeout: true,
      },
      // The flexible checksums newer SDKs add by default are refused or mishandled by several
      // S3-protocol servers (s3rver, older MinIO) that S3_ENDPOINT exists for.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  }

  /**
   * On AWS, a missing key answers 404 only when the caller may list the bucket (s3:ListBucket);
   * without it the answer is 403, which throws here rather than being guessed to mean "missing".
   */
  async head(key: string): Promise<{ size: number } | null> {
    try {
      const out = await this.#client.send(new HeadObjectCommand({ Bucket: this.#bucket, Key: key }));
      if (out.ContentLength === undefined) throw new Error(`HeadObject for ${JSON.stringify(key)} returned no Content-Length`);
      return { size: out.ContentLength };
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
      // A HEAD answer has no body, so a missing bucket looks like a missing key.
      await this.#assertBucketExists();
      return null;
    }
  }

  async readStart(key: string, bytes: number): Promise<Buffer | null> {
    assertByteCount(bytes);
    try {
      const out = await this.#client.send(new GetObjectCommand({ Bucket: this.#bucket, Key: key, Range: `bytes=0-${bytes - 1}` }));
      // Some S3-protocol servers (s3rver) answer a range on an empty object with 206 and a body
      // that never arrives; the total in Content-Range is enough to know there are no bytes.
      if (totalSize(out.ContentRange) === 0) {
        discard(out.Body);
        return Buffer.alloc(0);
      }
      return await readAtMost(out.Body, bytes);
    } catch (err) {
      const status = statusOf(err);
      // S3 answers a range on an empty object with 416 InvalidRange: it exists, with no bytes.
      if (status === 416) return Buffer.alloc(0);
      if (status !== 404 || nameOf(err) === 'NoSuchBucket') throw err;
      if (nameOf(err) !== 'NoSuchKey') await this.#assertBucketExists();
      return null;
    }
  }

  async put(key: string, body: Buffer | string): Promise<void> {
    await this.#client.send(new PutObjectCommand({ Bucket: this.#bucket, Key: key, Body: body }));
  }

  close(): void {
    this.#client.destroy();
  }

  /**
   * Keeps a wrong bucket name or endpoint from reporting every document as missing. Checked once
   * per store after the first 404. HeadBucket needs s3:ListBucket; a 403 is taken as "exists"
   * since a role without it could not have got the 404 that led here.
   */
  async #assertBucketExists(): Promise<void> {
    if (this.#bucketConfirmed) return;
    try {
      await this.#client.send(new HeadBucketCommand({ Bucket: this.#bucket }));
    } catch (err) {
      if (statusOf(err) === 404) throw new Error(`document bucket ${JSON.stringify(this.#bucket)} does not exist`, { cause: err });
      if (statusOf(err) !== 403) throw err;
    }
    this.#bucketConfirmed = true;
  }
}

/** Reads at most `bytes` and drops the rest, in case a server ignores Range and sends everything. */
async function readAtMost(body: unknown, bytes: number): Promise<Buffer> {
  if (body === undefined || body === null) return Buffer.alloc(0);
  if (typeof (body as Partial<AsyncIterable<unknown>>)[Symbol.asyncIterator] !== 'function') {
    throw new Error('GetObject returned a body that is not a stream');
  }
  const chunks: Buffer[] = [];
  let total = 0;
  // Leaving the loop early destroys the stream, so the unread rest is never downloaded.
  for await (const chunk of body as AsyncIterable<Uint8Array | string>) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    chunks.push(buf);
    total += buf.length;
    if (total >= bytes) break;
  }
  return Buffer.concat(chunks).subarray(0, bytes);
}

/** The object's total size from a `bytes 0-3/1234` Content-Range, when the server says. */
function totalSize(contentRange: string | undefined): number | undefined {
  const match = contentRange === undefined ? null : /\/(\d+)\s*$/.exec(contentRange);
  return match?.[1] === undefined ? undefined : Number(match[1]);
}

function discard(body: unknown): void {
  const destroy = (body as { destroy?: unknown } | null | undefined)?.destroy;
  if (typeof destroy === 'function') destroy.call(body);
}

function statusOf(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
}

function nameOf(err: unknown): string | undefined {
  return (err as { name?: string } | null)?.name;
}

function assertByteCount(bytes: number): void {
  if (!Number.isSafeInteger(bytes) || bytes < 1) throw new RangeError(`readStart needs a whole number of bytes of at least 1, got ${bytes}`);
}
