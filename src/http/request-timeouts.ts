import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import type { ConnectionError, FastifyInstance, FastifyReply, FastifyServerOptions } from 'fastify';
import { AppError } from '../errors.js';

/**
 * Slow and abandoned requests (docs/decisions.md, "Batches and the queue pipeline"): how long a
 * request may take to arrive. A cohort upload streams for minutes, so the whole-request limit is
 * long and every other body has a short one of its own; a body that stops arriving is cut either way.
 */
export interface RequestTimeouts {
  /** REQUEST_TIMEOUT_S: a whole request, headers and body; in practice an upload's limit. */
  readonly requestMs: number;
  /** BODY_TIMEOUT_S: the whole body of any request other than an upload, from the request's arrival. */
  readonly bodyMs: number;
  /** BODY_IDLE_TIMEOUT_S: no byte of a body for this long (the service's own delays do not count). */
  readonly bodyIdleMs: number;
}

const mediaType = (raw: IncomingMessage): string => (raw.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();

/**
 * A form upload: @fastify/multipart reads the request itself (request.raw), never the parser's
 * payload, so such a body is watched but not passed through (an unread pass-through would stall it).
 */
const isMultipart = (raw: IncomingMessage): boolean => mediaType(raw) === 'multipart/form-data';

/** A streamed body: the cohort upload (NDJSON, or the console's form) reads it line by line for as long as it lasts. */
const isStreamed = (raw: IncomingMessage): boolean => mediaType(raw) === 'application/x-ndjson' || isMultipart(raw);

/** As Node and Fastify decide it: a request has a body when it says so by its length or its encoding. */
const hasBody = (raw: IncomingMessage): boolean =>
  raw.headers['transfer-encoding'] !== undefined || (raw.headers['content-length'] !== undefined && raw.headers['content-length'] !== '0');

/** The error a body's reader sees when its client closed the connection before the body's end. */
export const clientClosed = (): AppError =>
  new AppError(499, 'client_closed_request', 'The client closed the connection before the end of the request body.');

const timedOut = (detail: string): AppError => new AppError(408, 'request_timeout', detail, [], {}, { Connection: 'close' });

/** Fastify's server options for these limits: Node's own whole-request timeout, the socket's idle timeout, errors in the envelope. */
export function timeoutServerOptions(t: RequestTimeouts): Pick<FastifyServerOptions, 'requestTimeout' | 'connectionTimeout' | 'clientErrorHandler'> {
  return {
    // Node cuts a request still arriving after this (checked every 30 s); the body watch below is first, to the second.
    requestTimeout: t.requestMs,
    // A connection on which nothing moves either way (a client that neither sends nor reads the answer).
    connectionTimeout: 2 * t.bodyIdleMs,
    clientErrorHandler,
  };
}

/**
 * What Node reports before a request reaches Fastify (malformed HTTP, headers too large, its own
 * request timeout): answered in the envelope, unless an answer is already on its way on that socket.
 */
function clientErrorHandler(err: ConnectionError, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, code, detail] =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'request_timeout', 'The request did not arrive in time.']
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'request_header_fields_too_large', 'The request headers are too large.']
        : [400, 'invalid_request', 'The request is not valid HTTP.'];
  const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (socket.writable && !inFlight?.headersSent) {
    const body = JSON.stringify({ detail, code, errors: [] });
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}

/** One request's body, watched from the request's arrival until its last byte. */
interface Watch {
  readonly raw: IncomingMessage;
  readonly socket: Socket;
  readonly reply: FastifyReply;
  readonly startedAt: number;
  /** Milliseconds after `startedAt` by which the whole body must have arrived. */
  deadlineMs: number;
  lastActivity: number;
  lastBytesRead: number;
  /** What the parser and handler read instead of the request itself (set at preParsing), so it can fail alone. */
  body: PassThrough | undefined;
}

/**
 * Watches every body that arrives over a socket (app.inject has none): a body that sends no byte for
 * `bodyIdleMs`, or is not whole `bodyMs` after the request arrived (`requestMs` for an upload), is cut.
 * Its reader then fails with 408 request_timeout, answered in the envelope with Connection: close (an
 * upload removes its half-written batch first); when an answer was already sent, the connection is
 * closed. The body's reader also fails, at once, when the client closes the connection before the end
 * of the body (499 client_closed_request: nobody is left to read it; an upload removes its batch).
 */
export function installRequestTimeouts(app: FastifyInstance, t: RequestTimeouts): void {
  const watches = new Map<IncomingMessage, Watch>();
  const tickMs = Math.max(50, Math.min(1000, Math.floor(Math.min(t.bodyMs, t.bodyIdleMs) / 4)));
  let ticker: NodeJS.Timeout | undefined;

  const cut = (w: Watch, detail: string) => {
    watches.delete(w.raw);
    if (w.body && !w.body.destroyed && !w.reply.sent && !w.reply.raw.headersSent) {
      // The reader fails with the 408 and the error handler answers it; the rest of the body stays unread.
      w.raw.unpipe(w.body);
      w.body.destroy(timedOut(detail));
    } else {
      // Answered already (a 401 while the body still trickles in), or not yet being read: just close.
      w.socket.destroy();
    }
  };

  const tick = () => {
    const now = Date.now();
    for (const w of watches.values()) {
      if (w.raw.complete || w.socket.destroyed) {
        watches.delete(w.raw);
        continue;
      }
      const bytes = w.socket.bytesRead;
      // Bytes waiting for the service (it is busy inserting) are not the client's silence.
      const behind = !w.reply.sent && (w.raw.readableLength > 0 || (w.body !== undefined && (w.body.readableLength > 0 || w.body.writableLength > 0)));
      if (bytes !== w.lastBytesRead || behind) {
        w.lastBytesRead = bytes;
        w.lastActivity = now;
      }
      if (now - w.lastActivity >= t.bodyIdleMs) cut(w, `No byte of the request body arrived for ${t.bodyIdleMs / 1000} s.`);
      else if (now - w.startedAt >= w.deadlineMs) cut(w, `The request body did not arrive within ${w.deadlineMs / 1000} s.`);
    }
    if (watches.size === 0 && ticker) {
      clearInterval(ticker);
      ticker = undefined;
    }
  };

  app.addHook('onRequest', (req, reply, done) => {
    const socket = req.raw.socket;
    if (socket instanceof Socket && hasBody(req.raw)) {
      const now = Date.now();
      const streamed = isStreamed(req.raw);
      watches.set(req.raw, {
        raw: req.raw,
        socket,
        reply,
        startedAt: now,
        deadlineMs: streamed ? t.requestMs : t.bodyMs,
        lastActivity: now,
        lastBytesRead: socket.bytesRead,
        body: undefined,
      });
      req.raw.once('end', () => watches.delete(req.raw));
      if (!ticker) {
        ticker = setInterval(tick, tickMs);
        ticker.unref();
      }
    }
    done();
  });

  app.addHook('preParsing', (req, _reply, payload, done) => {
    const w = watches.get(req.raw);
    if (!w || payload !== req.raw || isMultipart(req.raw)) {
      done(null, payload);
      return;
    }
    const body = new PassThrough();
    // Its reader gets its errors; a body nobody reads any more must not crash the process with one.
    body.on('error', () => undefined);
    // Closed before its end (the client went away): the reader fails now, not after what is buffered.
    req.raw.once('close', () => {
      if (!req.raw.readableEnded) body.destroy(clientClosed());
    });
    // Gone already (cut while its authentication was still being checked): nothing will ever arrive.
    if (req.raw.destroyed && !req.raw.readableEnded) body.destroy(clientClosed());
    req.raw.pipe(body);
    w.body = body;
    done(null, body);
  });

  app.addHook('onResponse', (req, _reply, done) => {
    const w = watches.get(req.raw);
    if (w && !req.raw.complete) {
      // Answered before the body's end (401, 413, 415, …): the rest is read and dropped, as Node does,
      // so the client can read the answer, but it must arrive within the short body limit.
      if (w.body) {
        req.raw.unpipe(w.body);
        w.body.destroy();
      }
      req.raw.resume();
      w.deadlineMs = Math.min(w.deadlineMs, Date.now() - w.startedAt + t.bodyMs);
    }
    done();
  });

  app.addHook('onClose', (_app, done) => {
    if (ticker) clearInterval(ticker);
    ticker = undefined;
    watches.clear();
    done();
  });
}
