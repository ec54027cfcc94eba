import type { LightMyRequestResponse } from 'fastify';
import pg from 'pg';

/**
 * Shared pieces of the security suites (not a test file: vitest only collects *.test.ts).
 */

export interface EnvelopeBody {
  detail: string;
  code: string;
  errors: Array<{ detail: string; code: string; attr: string | null }>;
}

/** A short, printable description of a response for assertion messages. */
export function describeResponse(res: LightMyRequestResponse): string {
  return `${res.statusCode} ${String(res.headers['content-type'] ?? '')} ${res.body.length > 600 ? `${res.body.slice(0, 600)}…` : res.body}`;
}

/**
 * The problems with a response as the interface's error envelope (`detail`, `code`, `errors[]` whose
 * items carry `detail`, `code`, `attr`), or [] when it is one. Extra top-level fields are allowed
 * (already-imported carries two). With `transactionsShape`, the transactions endpoint's own 400
 * (`status: TRANSACTION_IMPORT_ERROR, error_detail, code, attr`) is accepted as well.
 */
export function envelopeProblems(res: LightMyRequestResponse, opts: { transactionsShape?: boolean } = {}): string[] {
  let body: unknown;
  try {
    body = JSON.parse(res.body);
  } catch {
    return [`body is not JSON`];
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return ['body is not a JSON object'];
  const b = body as Record<string, unknown>;
  if (opts.transactionsShape && res.statusCode === 400 && b.status === 'TRANSACTION_IMPORT_ERROR') {
    const problems: string[] = [];
    if (typeof b.error_detail !== 'string') problems.push('error_detail is not a string');
    if (typeof b.code !== 'string') problems.push('code is not a string');
    if (typeof b.attr !== 'string') problems.push('attr is not a string');
    if (!('transaction_data' in b)) problems.push('transaction_data is missing');
    return problems;
  }
  const problems: string[] = [];
  if (typeof b.detail !== 'string') problems.push('detail is not a string');
  if (typeof b.code !== 'string' || b.code === '') problems.push('code is not a non-empty string');
  if (!Array.isArray(b.errors)) problems.push('errors is not an array');
  else {
    b.errors.forEach((e: unknown, i) => {
      const item = e as Record<string, unknown> | null;
      if (item === null || typeof item !== 'object') return problems.push(`errors.${i} is not an object`);
      if (typeof item.detail !== 'string') problems.push(`errors.${i}.detail is not a string`);
      if (typeof item.code !== 'string') problems.push(`errors.${i}.code is not a string`);
      if (!(typeof item.attr === 'string' || item.attr === null)) problems.push(`errors.${i}.attr is not a string or null`);
      return undefined;
    });
  }
  return problems;
}

/**
 * A cheap "did any table change" fingerprint: per table of the public schema, the row count and the
 * highest xmin. Any INSERT, UPDATE or DELETE changes one of the two (an update writes a new row
 * version with a newer xmin; a delete lowers the count), while row locks (FOR NO KEY UPDATE) touch
 * neither. One statement, so it can run after every fuzz case. Not pg_stat_* counters: those are
 * updated asynchronously.
 */
export async function createFingerprinter(pool: pg.Pool): Promise<() => Promise<Record<string, string>>> {
  const { rows } = await pool.query<{ tablename: string }>("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename");
  const parts = rows.map(
    ({ tablename }) =>
      `${pg.escapeLiteral(tablename)}, (SELECT count(*)::text || ':' || coalesce(max(xmin::text::bigint), 0)::text FROM ${pg.escapeIdentifier(tablename)})`,
  );
  const statement = `SELECT json_build_object(${parts.join(', ')}) AS f`;
  // Named: prepared once per connection, so each call skips parsing and planning.
  const name = `fingerprint_${rows.length}_${statement.length}`;
  return async () => (await pool.query<{ f: Record<string, string> }>({ name, text: statement })).rows[0]!.f;
}

/** The tables whose fingerprint differs. */
export function changedTables(before: Record<string, string>, after: Record<string, string>): string[] {
  return Object.keys({ ...before, ...after }).filter((t) => before[t] !== after[t]).map((t) => `${t} ${before[t]} → ${after[t]}`);
}

/**
 * Percent-encodes every UTF-8 byte outside the unreserved set. Unlike encodeURIComponent it never
 * throws: a lone surrogate is encoded as U+FFFD, as Buffer.from does.
 */
export function pctEncode(s: string): string {
  let out = '';
  for (const byte of Buffer.from(s, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-._~]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** Basic credentials as a header. */
export const basicAuth = (user: string, password: string) => ({
  authorization: `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`,
});

/** An ObtainToken mutation with every field. */
export const OBTAIN_TOKEN = /* GraphQL */ `
  mutation ObtainToken($input: ObtainJSONWebTokenInput!) {
    obtainKrakenToken(input: $input) { token payload refreshToken refreshExpiresIn }
  }
`;
