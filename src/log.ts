import { pino, type Logger } from 'pino';

/** Paths pino blanks out wherever they appear in a log line: no credential is ever written. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'authorization',
  'token',
  'refreshToken',
  'apiKey',
  'APIKey',
  '*.token',
  '*.refreshToken',
  '*.APIKey',
  '*.apiKey',
  'api_key',
];

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({ level, redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, destination);
}
export type { Logger };
