import type { FastifyError } from 'fastify';
import { AppError } from './errors.js';
import { isRedisUnavailable, redisUnavailable } from './redis.js';

/** decisions §7: JSON bodies up to 10 MiB. */
export const JSON_BODY_LIMIT = 10 * 1024 * 1024;

/** PostgreSQL errors that mean "the database is unreachable right now", not "the request is wrong". */
const UNAVAILABLE_PG_CODES = new Set(['57P01', '57P02', '57P03', '08000', '08001', '08003', '08006', '53300']);
const UNAVAILABLE_NET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND']);

/** Everything thrown ends as the envelope: our AppErrors as they are, Fastify's by their status, the rest 500/503. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const e = err as FastifyError & { code?: string };
  if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || e.statusCode === 413) {
    return new AppError(413, 'payload_too_large', `The request body is larger than ${JSON_BODY_LIMIT} bytes.`);
  }
  if (e.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || e.statusCode === 415) {
    return new AppError(415, 'unsupported_media_type', 'Unsupported Content-Type; send application/json (application/x-ndjson for cohort uploads).');
  }
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return new AppError(e.statusCode, 'invalid_request', e.message);
  }
  // Redis away or silent: the request connection fails within 2 s rather than wait (src/redis.ts).
  if (isRedisUnavailable(err)) return redisUnavailable(err);
  // A FATAL or PANIC from PostgreSQL ends the connection (shutdown, connections refused): unavailable.
  const severity = (err as { severity?: string }).severity;
  if (
    (typeof e.code === 'string' && (UNAVAILABLE_PG_CODES.has(e.code) || UNAVAILABLE_NET_CODES.has(e.code))) ||
    severity === 'FATAL' ||
    severity === 'PANIC'
  ) {
    return new AppError(503, 'service_unavailable', 'A backing service is unreachable; retry shortly.', [], {}, { 'Retry-After': '5' }, { cause: err });
  }
  if (e.message?.includes('Connection terminated') || e.message?.includes('timeout exceeded when trying to connect')) {
    return new AppError(503, 'service_unavailable', 'A backing service is unreachable; retry shortly.', [], {}, { 'Retry-After': '5' }, { cause: err });
  }
  return new AppError(500, 'internal_error', 'An unexpected error occurred.', [], {}, {}, { cause: err });
}
