import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { accountPayload } from '../helpers/fixtures.js';
import { pollUntil } from '../helpers/poll.js';

/**
 * Issue 10 item 8, slow and abandoned requests, over real HTTP on loopback: a body sent one byte a
 * second is cut (408 in the envelope); an upload whose client goes silent or away is stopped and
 * leaves no batch, item or job behind; an upload over BATCH_MAX_BYTES answers 413 and keeps nothing.
 * The limits are short here (seconds) so the tests are quick; the defaults are in README.md.
 */

const S = 'SLOW_CO';
const TEAM = 'Slow Team';
const BODY_TIMEOUT_S = 2;
const BODY_IDLE_TIMEOUT_S = 2;
const REQUEST_TIMEOUT_S = 6;
const MAX_BYTES = 4 * 1024 * 1024;
const UPLOAD_URL = `/v1/data-import/batches/?import_supplier=${S}&operations_team_name=${encodeURIComponent(TEAM)}`;

let ctx: TestContext;
let auth: { authorization: string };
let port: number;

beforeAll(async () => {
  ctx = await createTestContext({
    env: {
      BODY_TIMEOUT_S: String(BODY_TIMEOUT_S),
      BODY_IDLE_TIMEOUT_S: String(BODY_IDLE_TIMEOUT_S),
      REQUEST_TIMEOUT_S: String(REQUEST_TIMEOUT_S),
      BATCH_MAX_BYTES: String(MAX_BYTES),
    },
  });
  await ctx.createSupplier(S);
  await ctx.createTeam(TEAM);
  auth = await ctx.authHeaders();
  const url = await ctx.app.listen({ host: '127.0.0.1', port: 0 });
  port = Number(new URL(url).port);
});

afterAll(async () => ctx?.close());

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** An HTTP/1.1 client on a bare socket: the test decides every byte and when; it records the answer and when the server closed. */
class RawClient {
  received = Buffer.alloc(0);
  closedAt: number | undefined;
  private constructor(readonly socket: Socket) {
    socket.on('data', (d: Buffer) => (this.received = Buffer.concat([this.received, d])));
    socket.on('error', () => undefined); // a reset after the server closed is expected
    socket.on('close', () => (this.closedAt = Date.now()));
  }

  static async open(): Promise<RawClient> {
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    return new RawClient(socket);
  }

  /** Writes, then waits for the socket to take more (a real client's backpressure). */
  async write(data: string | Buffer): Promise<void> {
    if (this.socket.destroyed) return;
    if (!this.socket.write(data)) await new Promise<void>((resolve) => this.socket.once('drain', resolve).once('close', resolve));
  }

  /** One piece of a chunked body. */
  chunk(data: string | Buffer): Promise<void> {
    const buf = Buffer.isBuffer(data) ? data : Buffer.from(data);
    return this.write(Buffer.concat([Buffer.from(`${buf.length.toString(16)}\r\n`), buf, Buffer.from('\r\n')]));
  }

  /** Sends `bytes` one at a time, `everyMs` apart, until told to stop or the server closes. */
  trickle(bytes: Buffer, everyMs: number): { stop: () => void } {
    let i = 0;
    const timer = setInterval(() => {
      if (this.socket.destroyed || i >= bytes.length) clearInterval(timer);
      else this.socket.write(bytes.subarray(i, ++i));
    }, everyMs);
    return { stop: () => clearInterval(timer) };
  }

  /** The server's first answer, once it is all there. */
  response(): RawResponse | null {
    const end = this.received.indexOf('\r\n\r\n');
    if (end === -1) return null;
    const [statusLine = '', ...lines] = this.received.subarray(0, end).toString('latin1').split('\r\n');
    const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).trim().toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
    const length = Number(headers['content-length'] ?? 0);
    const body = this.received.subarray(end + 4);
    if (body.length < length) return null;
    return { status: Number(statusLine.split(' ')[1]), headers, body: body.subarray(0, length).toString('utf8') };
  }

  async closedWithin(timeoutMs: number, what: string): Promise<number> {
    return pollUntil(async () => this.closedAt, { timeoutMs, intervalMs: 20, what });
  }

  async answerWithin(timeoutMs: number, what: string): Promise<RawResponse> {
    return pollUntil(async () => this.response(), { timeoutMs, intervalMs: 20, what });
  }
}

const head = (method: string, url: string, headers: Record<string, string>) =>
  `${method} ${url} HTTP/1.1\r\nHost: 127.0.0.1\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;
const uploadHead = (extra: Record<string, string> = { 'Transfer-Encoding': 'chunked' }) =>
  head('POST', UPLOAD_URL, { Authorization: auth.authorization, 'Content-Type': 'application/x-ndjson', ...extra });

const bundleLine = (ext: string) => `${JSON.stringify({ account: accountPayload(S, ext) })}\n`;
/** `n` bundle lines, numbered from `from`. */
const bundleLines = (from: number, n: number, tag: string) => Array.from({ length: n }, (_, i) => bundleLine(`${tag}-${from + i}`)).join('');

const rows = async <T>(sql: string, params: unknown[] = []) => (await ctx.deps.pool.query(sql, params)).rows as T[];
const batchesOfSupplier = async () =>
  rows<{ id: string; state: string; items: string }>(
    `SELECT b.id, b.state, (SELECT count(*) FROM batch_items i WHERE i.batch_id = b.id)::text AS items
       FROM batches b JOIN import_suppliers s ON s.id = b.import_supplier_id WHERE s.code = $1`,
    [S],
  );
const itemsOf = async (batchId: string) => Number((await rows<{ n: string }>('SELECT count(*)::text AS n FROM batch_items WHERE batch_id = $1', [batchId]))[0]!.n);
/** Every job in every queue under this file's Redis prefix (no worker runs here, so only enqueueing changes it). */
async function jobTotal(): Promise<number> {
  let n = 0;
  for (const q of Object.values(ctx.deps.queues)) {
    const counts = await q.getJobCounts();
    n += Object.values(counts).reduce((a, b) => a + b, 0);
  }
  return n;
}
const jobOf = async (batchId: string) => ctx.deps.queues.validate.getJob(`${batchId}.1.validate.0`);

/** Waits until the upload's batch exists with at least `items` items, and returns its id. */
const batchUnderWay = (items: number) =>
  pollUntil(
    async () => {
      const [b] = await batchesOfSupplier();
      return b && b.state === 'UPLOADING' && Number(b.items) >= items ? b.id : null;
    },
    { timeoutMs: 20_000, intervalMs: 20, what: `an uploading batch with ${items} items` },
  );

/** What an abandoned upload must leave: no batch of the supplier, no item, no job. */
async function expectNothingLeft(batchId: string, jobsBefore: number): Promise<void> {
  expect(await batchesOfSupplier()).toEqual([]);
  expect(await itemsOf(batchId)).toBe(0);
  expect(await jobOf(batchId)).toBeUndefined();
  expect(await jobTotal()).toBe(jobsBefore);
}

const expectTimeoutEnvelope = (res: RawResponse) => {
  expect(res.status, res.body).toBe(408);
  expect(res.headers.connection).toBe('close');
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(JSON.parse(res.body)).toEqual({ detail: expect.any(String), code: 'request_timeout', errors: [] });
};

/* ------------------------------------------------------------------------------------------ */

describe(`JSON bodies must arrive within BODY_TIMEOUT_S (${BODY_TIMEOUT_S} s here)`, () => {
  const STAGE_URL = '/v1/data-import/account-import-process/create-or-update/';

  it('a body sent one byte a second is answered 408 request_timeout in the envelope and closed, and nothing is written', async () => {
    const before = await ctx.tableCounts();
    const body = Buffer.from(JSON.stringify(accountPayload(S, 'SLOW-JSON-1')));
    const c = await RawClient.open();
    const started = Date.now();
    await c.write(head('POST', STAGE_URL, { Authorization: auth.authorization, 'Content-Type': 'application/json', 'Content-Length': String(body.length) }));
    const trickle = c.trickle(body, 1000);
    try {
      const closedAt = await c.closedWithin(BODY_TIMEOUT_S * 1000 + 4000, 'the server to close the slow connection');
      expect(closedAt - started).toBeGreaterThanOrEqual(BODY_TIMEOUT_S * 1000);
    } finally {
      trickle.stop();
    }
    expectTimeoutEnvelope(c.response()!);
    expect(await ctx.tableCounts()).toEqual(before);
  });

  it('without a valid token: 401 at once, and the connection is closed when the rest of the body does not follow in time', async () => {
    const body = Buffer.from(JSON.stringify(accountPayload(S, 'SLOW-JSON-2')));
    const c = await RawClient.open();
    const started = Date.now();
    await c.write(head('POST', STAGE_URL, { Authorization: 'Token not-a-token', 'Content-Type': 'application/json', 'Content-Length': String(body.length) }));
    const trickle = c.trickle(body, 1000);
    try {
      const res = await c.answerWithin(BODY_TIMEOUT_S * 1000, 'the 401');
      expect(res.status, res.body).toBe(401);
      const closedAt = await c.closedWithin(BODY_TIMEOUT_S * 1000 + 4000, 'the server to close the slow connection');
      expect(closedAt - started).toBeGreaterThanOrEqual(BODY_TIMEOUT_S * 1000);
    } finally {
      trickle.stop();
    }
  });

  it('a body that arrives in pieces but within the limit is served', async () => {
    const body = Buffer.from(JSON.stringify(accountPayload(S, 'SLOW-JSON-3')));
    const c = await RawClient.open();
    await c.write(head('POST', STAGE_URL, { Authorization: auth.authorization, 'Content-Type': 'application/json', 'Content-Length': String(body.length) }));
    const third = Math.ceil(body.length / 3);
    for (let i = 0; i < 3; i++) {
      await c.write(body.subarray(i * third, (i + 1) * third));
      // Pieces 300 ms apart: a slow client, well within the limit (not a synchronisation).
      if (i < 2) await new Promise((r) => setTimeout(r, 300));
    }
    const res = await c.answerWithin(10_000, 'the answer');
    expect(res.status, res.body).toBe(201);
    c.socket.destroy();
  });

  it('what Node refuses before the service sees it (not HTTP) is answered in the envelope too, and closed', async () => {
    const c = await RawClient.open();
    await c.write('NOT HTTP AT ALL\r\n\r\n');
    const res = await c.answerWithin(5000, 'the 400');
    expect(res.status, res.body).toBe(400);
    expect(JSON.parse(res.body)).toEqual({ detail: expect.any(String), code: 'invalid_request', errors: [] });
    await c.closedWithin(5000, 'the connection to close');
  });
});

/* ------------------------------------------------------------------------------------------ */

describe('uploads: a silent, too slow or departed client leaves nothing behind', () => {
  it(`an upload whose client goes silent half way is cut after BODY_IDLE_TIMEOUT_S (${BODY_IDLE_TIMEOUT_S} s) with 408, and its batch is removed`, async () => {
    const jobsBefore = await jobTotal();
    const c = await RawClient.open();
    await c.write(uploadHead());
    await c.chunk(bundleLines(1, 300, 'IDLE'));
    const silentFrom = Date.now();
    const batchId = await batchUnderWay(250);
    // Not another byte, and the connection stays open.
    const res = await c.answerWithin(BODY_IDLE_TIMEOUT_S * 1000 + 8000, 'the server to give up on the silent upload');
    expect(Date.now() - silentFrom).toBeGreaterThanOrEqual(BODY_IDLE_TIMEOUT_S * 1000 - 100);
    expectTimeoutEnvelope(res);
    await c.closedWithin(5000, 'the connection to close after the 408');
    await expectNothingLeft(batchId, jobsBefore);
  });

  it(`an upload that keeps sending is not held to BODY_TIMEOUT_S: ${BODY_TIMEOUT_S * 1.5} s of a line every 250 ms is accepted`, async () => {
    const c = await RawClient.open();
    await c.write(uploadHead());
    const count = Math.ceil((BODY_TIMEOUT_S * 1500) / 250);
    for (let i = 1; i <= count; i++) {
      await c.chunk(bundleLine(`STEADY-${i}`));
      await new Promise((r) => setTimeout(r, 250)); // the client's pace, not a synchronisation
    }
    await c.write('0\r\n\r\n');
    const res = await c.answerWithin(10_000, 'the 202');
    expect(res.status, res.body).toBe(202);
    expect(JSON.parse(res.body)).toMatchObject({ total_items: count });
    c.socket.destroy();
    // Out of the way of the other tests, which count this supplier's batches.
    await ctx.deps.pool.query('DELETE FROM batches WHERE id = $1', [(JSON.parse(res.body) as { batch_id: string }).batch_id]);
    await ctx.deps.queues.validate.drain(true);
  });

  it(`an upload still arriving after REQUEST_TIMEOUT_S (${REQUEST_TIMEOUT_S} s) is cut with 408 and its batch removed`, async () => {
    const jobsBefore = await jobTotal();
    const c = await RawClient.open();
    const started = Date.now();
    await c.write(uploadHead());
    let i = 0;
    const timer = setInterval(() => {
      if (c.socket.destroyed) clearInterval(timer);
      else void c.chunk(bundleLine(`LONG-${++i}`));
    }, 250);
    try {
      const res = await c.answerWithin(REQUEST_TIMEOUT_S * 1000 + 8000, 'the server to cut the long upload');
      expect(Date.now() - started).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_S * 1000);
      expectTimeoutEnvelope(res);
    } finally {
      clearInterval(timer);
    }
    await c.closedWithin(5000, 'the connection to close after the 408');
    // Its batch existed (a line every 250 ms), and is gone with its items.
    expect(i).toBeGreaterThan(4 * REQUEST_TIMEOUT_S - 4);
    await pollUntil(async () => (await batchesOfSupplier()).length === 0, { timeoutMs: 5000, what: 'the cut batch to be removed' });
    expect(await rows('SELECT 1 FROM batch_items i JOIN batches b ON b.id = i.batch_id JOIN import_suppliers s ON s.id = b.import_supplier_id WHERE s.code = $1', [S])).toEqual([]);
    expect(await jobTotal()).toBe(jobsBefore);
  });

  for (const how of ['closes (FIN)', 'resets (RST)'] as const) {
    it(`an upload whose client ${how} the connection half way stops inserting at once and leaves no batch, item or job`, async () => {
      const jobsBefore = await jobTotal();
      const c = await RawClient.open();
      await c.write(uploadHead());
      let sent = 0;
      const send = async (n: number) => {
        // 50 lines a chunk: a client streaming a file.
        for (let k = 0; k < n; k += 50) {
          await c.chunk(bundleLines(sent + 1, 50, `GONE-${how.slice(-4, -1)}`));
          sent += 50;
        }
      };
      await send(1500);
      const batchId = await batchUnderWay(1000);
      // More on its way while the service inserts, then the client is gone.
      await send(1000);
      if (how === 'closes (FIN)') c.socket.destroy();
      else c.socket.resetAndDestroy();
      const abortedAt = Date.now();

      let most = 0;
      await pollUntil(
        async () => {
          most = Math.max(most, await itemsOf(batchId));
          return (await batchesOfSupplier()).length === 0;
        },
        { timeoutMs: 15_000, intervalMs: 20, what: 'the abandoned batch to be removed' },
      );
      // Never more items than lines the client sent, and gone within seconds of the client.
      expect(most).toBeLessThanOrEqual(sent);
      expect(Date.now() - abortedAt).toBeLessThan(15_000);
      await expectNothingLeft(batchId, jobsBefore);
      // And nothing more is inserted afterwards (the removal was not followed by a late insert).
      expect(await rows('SELECT 1 FROM batch_items WHERE batch_id = $1', [batchId])).toEqual([]);
    });
  }
});

/* ------------------------------------------------------------------------------------------ */

describe(`BATCH_MAX_BYTES (${MAX_BYTES} here)`, () => {
  /** A line that is not a bundle (a parse failure: stored, never enqueued), of exactly `bytes` bytes with its newline. */
  const padLine = (bytes: number) => {
    const skeleton = JSON.stringify({ account: { external_account_number: 'PAD', padding: '' } });
    return `${skeleton.replace('"padding":""', `"padding":"${'x'.repeat(bytes - 1 - skeleton.length)}"`)}\n`;
  };
  const bodyOf = (bytes: number) => {
    const line = padLine(64 * 1024);
    const whole = Math.floor(bytes / line.length);
    const rest = bytes - whole * line.length;
    return line.repeat(whole) + (rest > 0 ? padLine(Math.max(rest, 64)).slice(0, rest) : '');
  };
  const countsOf = async () => {
    const all = await ctx.tableCounts();
    return { batches: all.batches, batch_items: all.batch_items };
  };

  it('exactly BATCH_MAX_BYTES is accepted', async () => {
    const body = bodyOf(MAX_BYTES);
    expect(Buffer.byteLength(body)).toBe(MAX_BYTES);
    const res = await ctx.app.inject({ method: 'POST', url: UPLOAD_URL, payload: body, headers: { ...auth, 'content-type': 'application/x-ndjson' } });
    expect(res.statusCode, res.body).toBe(202);
    await ctx.deps.pool.query('DELETE FROM batches WHERE id = $1', [(res.json() as { batch_id: string }).batch_id]);
  });

  it('a streamed upload (no Content-Length) that passes it answers 413 payload_too_large in the envelope, to the client still sending, and keeps nothing', async () => {
    const before = await countsOf();
    const line = padLine(16 * 1024);
    const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: UPLOAD_URL, headers: { ...auth, 'content-type': 'application/x-ndjson' } });
      let answered = false;
      let wake: (() => void) | undefined;
      req.on('response', (r) => {
        answered = true;
        wake?.();
        let body = '';
        r.setEncoding('utf8').on('data', (d: string) => (body += d)).on('end', () => resolve({ status: r.statusCode!, body }));
      });
      req.on('error', reject);
      // Keeps sending, past the limit, until the service answers (or twice the limit: then it never did).
      void (async () => {
        for (let sent = 0; !answered && sent < 2 * MAX_BYTES; sent += line.length) {
          if (!req.write(line)) await new Promise<void>((r) => req.once('drain', (wake = r)));
        }
        req.end();
      })();
    });
    expect(res.status, res.body).toBe(413);
    expect(JSON.parse(res.body)).toEqual({ detail: `A cohort upload may have at most ${MAX_BYTES} bytes.`, code: 'payload_too_large', errors: [] });
    expect(await countsOf()).toEqual(before);
    expect(await batchesOfSupplier()).toEqual([]);
  });

  it('a declared Content-Length over it answers 413 before the body is sent, and nothing is stored', async () => {
    const before = await countsOf();
    const c = await RawClient.open();
    await c.write(uploadHead({ 'Content-Length': String(MAX_BYTES + 1) }));
    const res = await c.answerWithin(5000, 'the 413, with no body sent');
    expect(res.status, res.body).toBe(413);
    expect(JSON.parse(res.body)).toMatchObject({ code: 'payload_too_large', errors: [] });
    expect(await countsOf()).toEqual(before);
    c.socket.destroy();
  });

  it('one byte over it, declared (app.inject), answers 413 and keeps nothing', async () => {
    const before = await countsOf();
    const res = await ctx.app.inject({ method: 'POST', url: UPLOAD_URL, payload: bodyOf(MAX_BYTES + 1), headers: { ...auth, 'content-type': 'application/x-ndjson' } });
    expect(res.statusCode, res.body).toBe(413);
    expect(res.json()).toMatchObject({ code: 'payload_too_large', errors: [] });
    expect(await countsOf()).toEqual(before);
  });
});
