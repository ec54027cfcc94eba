import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { BatchState } from '../db/database.js';
import type { BatchStatus, ItemView, StageCounts } from '../imports/batches/batch.service.js';
import type { ReconciliationReport } from '../imports/batches/reconciliation.js';
import { STAGES, type Stage } from '../queue/contract.js';

/** Something the operator must fix on their side (no API key, a URL that is not one): exit 2. */
export class ApiUsageError extends Error {
  override readonly name = 'ApiUsageError';
}

/** The service refused, failed or could not be reached: one line for the operator, exit 1. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    message: string,
    /** HTTP status, or null when no answer came back. */
    readonly status: number | null,
    /** The envelope's code, when the service sent one. */
    readonly code: string | null,
  ) {
    super(message);
  }

  /** Worth asking again a little later (the service restarting, a proxy hiccup), as opposed to a refusal. */
  get transient(): boolean {
    return this.status === null || this.status >= 500;
  }
}

// The client speaks the server's own shapes: one definition of the stages, their counts and the states.

export const STAGE_NAMES = STAGES;
export type StageName = Stage;
export type { BatchState, BatchStatus, ReconciliationReport, StageCounts };

export interface ErrorEnvelope {
  detail?: string;
  /** The transactions endpoint's 400 has its own shape: code, attr and error_detail at the top, no errors. */
  error_detail?: string;
  code?: string;
  attr?: string | null;
  errors?: Array<{ detail?: string; code?: string; attr?: string | null }>;
}

/** An item as the items endpoint lists it, with the envelope its error holds. */
export type BatchItem = Omit<ItemView, 'error'> & { error: ErrorEnvelope | null };
export type BatchSummary = Omit<BatchStatus, 'stages'>;

export interface UploadParams {
  supplier: string;
  team: string;
  dryRun: boolean;
  /** Register the meter points of the accounts the batch creates. */
  register?: boolean | undefined;
  idempotencyKey?: string | undefined;
  /** Called a few times a second while the file is sent, with bytes read from disk so far. */
  onProgress?: ((sent: number, size: number) => void) | undefined;
}

export interface ApiSettings {
  baseUrl: string;
  apiKey: string;
}

/**
 * Where to talk and with which key: --url, else IMPORT_API_URL, else the HOST and PORT the server
 * would listen on; --api-key, else IMPORT_API_KEY. Checked before any request, so a missing key is
 * a usage error rather than a 401 from the service.
 */
export function resolveApiSettings(
  opts: { url?: string | undefined; apiKey?: string | undefined },
  env: NodeJS.ProcessEnv,
  server: { host: string; port: number },
): ApiSettings {
  const raw = opts.url ?? (env.IMPORT_API_URL || undefined) ?? `http://${connectableHost(server.host)}:${server.port}`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ApiUsageError(`the service URL '${raw}' is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ApiUsageError(`the service URL '${raw}' is not http or https`);
  if (url.username || url.password) throw new ApiUsageError('the service URL must not carry credentials; pass the API key with --api-key or IMPORT_API_KEY');
  const apiKey = opts.apiKey ?? env.IMPORT_API_KEY ?? '';
  if (apiKey.trim() === '') {
    throw new ApiUsageError("no API key: set IMPORT_API_KEY or pass --api-key (create one with 'importctl api-key create NAME')");
  }
  // No query or fragment, no trailing slash: request paths are appended to it.
  return { baseUrl: `${url.origin}${url.pathname.replace(/\/+$/, '')}`, apiKey: apiKey.trim() };
}

/** A server bound to every interface is reached on loopback; an IPv6 literal needs brackets in a URL. */
function connectableHost(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

const OBTAIN_TOKEN = 'mutation ObtainToken($input: ObtainJSONWebTokenInput!) { obtainKrakenToken(input: $input) { token } }';
/** Long enough for a slow page of 1000 items; short enough that a wedged service does not hang a script. */
const REQUEST_TIMEOUT_MS = 30_000;
const PAGE_SIZE = 1000;

interface SendOptions {
  headers?: Record<string, string>;
  body?: string;
  /** The caller's signal (Ctrl-C); aborting it rejects with an AbortError, not an ApiError. */
  signal?: AbortSignal | undefined;
}

/** The batch API over fetch, authenticated with a token obtained from the API key. */
export class ApiClient {
  readonly baseUrl: string;
  readonly #apiKey: string;
  #token: string | null = null;

  constructor(settings: ApiSettings) {
    this.baseUrl = settings.baseUrl;
    this.#apiKey = settings.apiKey;
  }

  /** Streams an NDJSON file to the upload endpoint; resolves once the service has stored every line. */
  async uploadFile(path: string, params: UploadParams): Promise<{ batch_id: string; total_items: number }> {
    const { size } = await stat(path);
    const query = new URLSearchParams({ import_supplier: params.supplier, operations_team_name: params.team, dry_run: String(params.dryRun), ...(params.register ? { register: 'true' } : {}) });
    const headers: Record<string, string> = { 'content-type': 'application/x-ndjson', accept: 'application/json' };
    if (params.idempotencyKey !== undefined) headers['idempotency-key'] = params.idempotencyKey;
    const url = `${this.baseUrl}/v1/data-import/batches/?${query}`;

    const attempt = async (): Promise<Response> => {
      const token = await this.#obtainToken();
      const file = createReadStream(path);
      // bytesRead is what has left the disk, not the wire, but fetch buffers little: close enough for a bar.
      const ticker = params.onProgress ? setInterval(() => params.onProgress?.(file.bytesRead, size), 200) : undefined;
      try {
        const res = await this.#fetch(url, {
          method: 'POST',
          headers: { ...headers, authorization: `Token ${token}` },
          body: file as unknown as RequestInit['body'],
          // Node's fetch refuses a streamed body without it: the request is sent while the file is read.
          duplex: 'half',
        });
        params.onProgress?.(file.bytesRead, size);
        return res;
      } finally {
        if (ticker) clearInterval(ticker);
        // An early refusal (unknown supplier) leaves the rest of the file unread: release the descriptor.
        file.destroy();
      }
    };

    let res = await attempt();
    // Rejected before the body was read, so a fresh stream of the same file replays it exactly.
    if (await this.#tokenExpired(res)) res = await attempt();
    return this.#json(res);
  }

  status(batchId: string, signal?: AbortSignal): Promise<BatchStatus> {
    return this.#call('GET', `${batchPath(batchId)}`, { signal });
  }

  /** Every failed item, following the Link header page by page. */
  async failures(batchId: string, signal?: AbortSignal): Promise<BatchItem[]> {
    const path = `${batchPath(batchId)}items/`;
    const all: BatchItem[] = [];
    let search: string | null = `?state=failed&page_size=${PAGE_SIZE}`;
    while (search !== null) {
      const res = await this.#authorized('GET', `${path}${search}`, { signal, headers: { accept: 'application/json' } });
      all.push(...(await this.#json<BatchItem[]>(res)));
      search = nextSearch(res.headers.get('link'));
    }
    return all;
  }

  /** The failed items as the service's CSV, as a byte stream so a large batch is never held in memory. */
  failuresCsv(batchId: string): Promise<AsyncIterable<Uint8Array>> {
    return this.#csv(`${batchPath(batchId)}items/?state=failed`);
  }

  /** A supplier's batches, newest first, following the Link header page by page. */
  async list(supplier: string): Promise<BatchSummary[]> {
    const all: BatchSummary[] = [];
    let search: string | null = `?import_supplier=${encodeURIComponent(supplier)}&page_size=${PAGE_SIZE}`;
    while (search !== null) {
      const res = await this.#authorized('GET', `/v1/data-import/batches/${search}`, { headers: { accept: 'application/json' } });
      all.push(...(await this.#json<BatchSummary[]>(res)));
      search = nextSearch(res.headers.get('link'));
    }
    return all;
  }

  /** The batch's reconciliation report (the first 10,000 differences; the CSV has them all). */
  reconciliation(batchId: string): Promise<ReconciliationReport> {
    return this.#call('GET', `${batchPath(batchId)}reconciliation/`, {});
  }

  /** Every difference of the reconciliation as the service's CSV, as a byte stream. */
  reconciliationCsv(batchId: string): Promise<AsyncIterable<Uint8Array>> {
    return this.#csv(`${batchPath(batchId)}reconciliation/`);
  }

  /** A CSV answer as a byte stream, so a large batch is never held in memory. */
  async #csv(path: string): Promise<AsyncIterable<Uint8Array>> {
    const res = await this.#authorized('GET', path, { headers: { accept: 'text/csv' } });
    if (!res.ok) await this.#refuse(res);
    // Node's web stream is async-iterable, which the DOM-shaped type does not declare.
    return (res.body ?? (async function* () {})()) as AsyncIterable<Uint8Array>;
  }

  retry(batchId: string, externalAccountNumbers?: readonly string[], code?: string): Promise<{ requeued: number }> {
    const body = {
      ...(externalAccountNumbers && externalAccountNumbers.length > 0 ? { external_account_numbers: externalAccountNumbers } : {}),
      ...(code !== undefined ? { code } : {}),
    };
    return this.#call('POST', `${batchPath(batchId)}retry/`, { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  }

  /** Marks the meter points of the batch's created accounts for registration. */
  registerBatch(batchId: string): Promise<{ batch_id: string; accounts: number; meter_points_marked: number; meter_points_not_marked: number }> {
    return this.#call('POST', `${batchPath(batchId)}registration-flows/`, {});
  }

  /** Withdraws the current registration of an account's meter points (or one's, by mpxn). */
  withdrawRegistration(supplier: string, ext: string, mpxn?: string): Promise<{ meter_points: Array<{ mpxn: string; status: string; error_detail?: string }> }> {
    const path = `/v1/data-import/registration-withdrawals/${encodeURIComponent(supplier)}/${encodeURIComponent(ext)}/`;
    return this.#call('POST', path, mpxn === undefined ? {} : { body: JSON.stringify({ mpxn }), headers: { 'content-type': 'application/json' } });
  }

  cancel(batchId: string): Promise<BatchStatus> {
    // Fastify refuses an empty body announced as JSON, so the POST carries none and no content type.
    return this.#call('POST', `${batchPath(batchId)}cancel/`, {});
  }

  async #call<T>(method: string, path: string, opts: SendOptions): Promise<T> {
    return this.#json<T>(await this.#authorized(method, path, opts));
  }

  /** One request with the current token, and a second with a new token if the first had expired. */
  async #authorized(method: string, path: string, opts: SendOptions): Promise<Response> {
    const send = async () =>
      this.#fetch(`${this.baseUrl}${path}`, {
        method,
        headers: { accept: 'application/json', ...opts.headers, authorization: `Token ${await this.#obtainToken()}` },
        ...(opts.body !== undefined ? { body: opts.body } : {}),
        signal: opts.signal ? AbortSignal.any([opts.signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]) : AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    const res = await send();
    return (await this.#tokenExpired(res)) ? send() : res;
  }

  /** True (and the token forgotten) when the service said the token expired: a long wait outlives an hour's token. */
  async #tokenExpired(res: Response): Promise<boolean> {
    if (res.status !== 401) return false;
    const body = (await res.clone().json().catch(() => null)) as ErrorEnvelope | null;
    if (body?.code !== 'token_expired') return false;
    await res.body?.cancel();
    this.#token = null;
    return true;
  }

  async #obtainToken(): Promise<string> {
    if (this.#token !== null) return this.#token;
    const res = await this.#fetch(`${this.baseUrl}/v1/graphql/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ query: OBTAIN_TOKEN, variables: { input: { APIKey: this.#apiKey } } }),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const body = await this.#json<{
      data?: { obtainKrakenToken?: { token?: string } | null } | null;
      errors?: Array<{ message?: string; extensions?: { errorDescription?: string } }>;
    }>(res);
    const token = body.data?.obtainKrakenToken?.token;
    if (typeof token !== 'string' || token === '') {
      const first = body.errors?.[0];
      const why = first?.extensions?.errorDescription ?? first?.message ?? 'no token in the answer';
      throw new ApiError(`the service refused the API key: ${why}`, res.status, 'authentication_failed');
    }
    this.#token = token;
    return token;
  }

  /** fetch, with "no answer" turned into one readable line; the caller's own abort passes through. */
  async #fetch(url: string, init: RequestInit): Promise<Response> {
    try {
      return await fetch(url, init);
    } catch (err) {
      const e = err as Error & { cause?: unknown };
      if (e.name === 'TimeoutError') throw new ApiError(`the service at ${this.baseUrl} did not answer within ${REQUEST_TIMEOUT_MS / 1000} s`, null, null);
      if (e.name === 'AbortError') throw err;
      throw new ApiError(`cannot reach the service at ${this.baseUrl}: ${networkReason(e)}`, null, null);
    }
  }

  async #json<T>(res: Response): Promise<T> {
    if (!res.ok) await this.#refuse(res);
    const text = await res.text();
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new ApiError(`the service at ${this.baseUrl} answered ${res.status} with a body that is not JSON`, res.status, null);
    }
  }

  async #refuse(res: Response): Promise<never> {
    const text = await res.text().catch(() => '');
    let envelope: ErrorEnvelope | null = null;
    try {
      envelope = JSON.parse(text) as ErrorEnvelope;
    } catch {
      // Not ours: a proxy's HTML page or an empty body. The status is all there is to say.
    }
    const detail = typeof envelope?.detail === 'string' && envelope.detail !== '' ? envelope.detail : `the service answered ${res.status} ${res.statusText}`.trim();
    throw new ApiError(detail, res.status, typeof envelope?.code === 'string' ? envelope.code : null);
  }
}

/** The id goes into the path, so it is encoded: a typo with a slash must not reach another endpoint. */
const batchPath = (batchId: string): string => `/v1/data-import/batches/${encodeURIComponent(batchId)}/`;

/**
 * The query of the Link rel="next" target, or null. Only the query is kept: the service writes its
 * own path into the link, which lacks any prefix a reverse proxy in front of it adds.
 */
function nextSearch(link: string | null): string | null {
  const m = link ? /<([^>]+)>\s*;\s*rel="?next"?/.exec(link) : null;
  if (!m) return null;
  return new URL(m[1]!, 'http://x').search || null;
}

function networkReason(err: Error & { cause?: unknown }): string {
  let cause = err.cause as (Error & { code?: string; errors?: unknown[] }) | undefined;
  // A name with several addresses fails as an AggregateError whose first error says why.
  if (cause instanceof AggregateError && cause.errors.length > 0) cause = cause.errors[0] as Error & { code?: string };
  return cause?.code ?? cause?.message ?? err.message;
}
