import { Redis } from 'ioredis';
import pg from 'pg';
import { ConfigError } from './config.js';

/**
 * Start-up checks of the server and worker processes: PostgreSQL and Redis must answer, within a
 * bounded time, before anything listens or takes a job. A failure is one line naming the variable
 * to fix and the host:port tried (never a user's password), and the process exits 1.
 */

/** How long PostgreSQL may take to accept a connection and answer `SELECT 1` at start-up. */
export const STARTUP_DATABASE_TIMEOUT_MS = 5_000;
/** How long Redis may take to accept a connection and answer PING at start-up. */
export const STARTUP_REDIS_TIMEOUT_MS = 2_500;

/** A start-up check failed: its message is the one line to print. */
export class StartupError extends Error {
  override readonly name = 'StartupError';
}

const DEFAULT_PORTS: Record<string, string> = { 'postgres:': '5432', 'postgresql:': '5432', 'redis:': '6379', 'rediss:': '6379' };

/** Host, port and path of a URL, never its user or password: start-up lines end up in logs. */
export function describeUrl(url: string): string {
  try {
    const u = new URL(url);
    const port = u.port || DEFAULT_PORTS[u.protocol] || '';
    return `${u.hostname}${port ? `:${port}` : ''}${u.pathname === '/' ? '' : u.pathname}`;
  } catch {
    return '(unparsable URL)';
  }
}

/** `text` with the URL's password, and any credentials written in a URL, masked. */
export function maskPassword(text: string, url: string): string {
  let out = text.replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]*:)[^\s@/]*@/gi, '$1***@');
  try {
    const { password } = new URL(url);
    for (const p of new Set([password, safeDecode(password)])) if (p) out = out.split(p).join('***');
  } catch {
    // An unparsable URL is named as such by describeUrl; nothing more to mask.
  }
  return out;
}

const safeDecode = (s: string): string => {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
};

/** The message of an error as one line; Node reports a refused name with several addresses as an AggregateError without one. */
function messageOf(err: unknown): string {
  const first = err instanceof AggregateError && err.errors.length > 0 ? (err.errors[0] as unknown) : err;
  const message = first instanceof Error ? first.message || (first as { code?: string }).code || first.name : String(first);
  return message.replace(/\s*\n\s*/g, ' ').trim();
}

/** Settles with `work`, or rejects with `onTimeout()` after `ms`; the timer never keeps the process alive. */
async function deadline<T>(ms: number, work: Promise<T>, onTimeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(onTimeout()), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Resolves when PostgreSQL at `url` accepts a connection and answers `SELECT 1` within `timeoutMs`.
 * With `allowMissingDatabase` (the server creates it before migrating), a server that answers
 * "database does not exist" passes.
 */
export async function checkPostgres(url: string, opts: { allowMissingDatabase?: boolean; timeoutMs?: number } = {}): Promise<void> {
  const timeoutMs = opts.timeoutMs ?? STARTUP_DATABASE_TIMEOUT_MS;
  const where = describeUrl(url);
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
  client.on('error', () => undefined); // a connection lost after the check is of no interest here
  let connected = false;
  try {
    await deadline(
      timeoutMs,
      (async () => {
        await client.connect();
        connected = true;
        await client.query('SELECT 1');
      })(),
      () => new Error(`no answer within ${timeoutMs / 1000} s`),
    );
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === '3D000' && opts.allowMissingDatabase) return;
    const hint = code === '3D000' ? " (run 'importctl db migrate' to create it)" : '';
    // pg's own connect timeout says only "timeout expired".
    const message = /^timeout expired$/i.test(messageOf(err)) ? `no answer within ${timeoutMs / 1000} s` : messageOf(err);
    throw new StartupError(`DATABASE_URL: cannot use PostgreSQL at ${where}: ${maskPassword(message, url)}${hint}`);
  } finally {
    if (connected) await client.end().catch(() => undefined);
  }
}

/**
 * Resolves when Redis at `url` accepts a connection and answers PING within `timeoutMs`, on a
 * connection of its own that never retries and is closed afterwards.
 */
export async function checkRedis(url: string, opts: { timeoutMs?: number } = {}): Promise<void> {
  const timeoutMs = opts.timeoutMs ?? STARTUP_REDIS_TIMEOUT_MS;
  const where = describeUrl(url);
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  // The socket's own error (ECONNREFUSED…) says more than the "Connection is closed" that follows it.
  let socketError: unknown;
  redis.on('error', (err: unknown) => {
    socketError ??= err;
  });
  try {
    await deadline(
      timeoutMs,
      (async () => {
        await redis.connect();
        await redis.ping();
      })(),
      () => new Error(`no answer within ${timeoutMs / 1000} s`),
    );
  } catch (err) {
    throw new StartupError(`REDIS_URL: cannot use Redis at ${where}: ${maskPassword(messageOf(socketError ?? err), url)}`);
  } finally {
    redis.disconnect();
  }
}

/**
 * What a process prints when start-up fails: one line for what an operator can fix (configuration,
 * an unreachable service, a port in use), the error itself otherwise.
 */
export function describeStartupFailure(err: unknown, listen?: { host: string; port: number }): unknown {
  if (err instanceof ConfigError || err instanceof StartupError) return err.message;
  const code = (err as { code?: string } | null)?.code;
  if (listen && (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL')) {
    return `PORT/HOST: cannot listen on ${listen.host}:${listen.port}: ${messageOf(err)}`;
  }
  return err;
}
