import { Readable } from 'node:stream';
import { stringify } from 'csv-stringify';
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { AppError, badRequest } from '../../errors.js';
import { bundleSchema, itemsQuerySchema, retryBodySchema, uploadQuerySchema } from '../../imports/batches/batch.schemas.js';
import { UUID, type BatchService, type ItemView } from '../../imports/batches/batch.service.js';
import { parseOrThrow } from '../../imports/shared/validation.js';
import type { RouteDef } from '../route.js';

const MAX_PAGE_SIZE = 1000;
const idParams = z.object({ batch_id: z.string().uuid() });
const stageCounts = z.object({ waiting: z.number(), active: z.number(), delayed: z.number(), completed: z.number(), failed: z.number() });
const summarySchema = z
  .object({
    batch_id: z.string(),
    import_supplier: z.string(),
    operations_team_name: z.string(),
    dry_run: z.boolean(),
    state: z.enum(['UPLOADING', 'RUNNING', 'COMPLETED', 'COMPLETED_WITH_ERRORS', 'CANCELLED']),
    total_items: z.number(),
    succeeded: z.number(),
    failed: z.number(),
    cancelled: z.number(),
    created_at: z.string(),
    finished_at: z.string().nullable(),
  })
  .meta({ id: 'BatchSummary' });
const statusSchema = summarySchema.extend({ stages: z.object({ validate: stageCounts, stage: stageCounts, process: stageCounts, extras: stageCounts }) }).meta({ id: 'BatchStatus' });
const itemSchema = z
  .object({
    line: z.number(),
    external_account_number: z.string().nullable(),
    stage: z.enum(['parse', 'validate', 'stage', 'process', 'extras']),
    state: z.enum(['waiting', 'active', 'delayed', 'succeeded', 'failed', 'cancelled']),
    attempts: z.number(),
    service_account_number: z.string().nullable(),
    error: z.unknown().describe('The envelope the REST endpoint for that stage would have answered, or null.'),
  })
  .meta({ id: 'BatchItem' });

const MAX_DIFFERENCES = 10_000;
const DIFFERENCE_COLUMNS = ['line', 'external_account_number', 'service_account_number', 'kind', 'identifier', 'problem', 'file', 'database'] as const;
const countSum = z.object({ count: z.number(), amount: z.string().describe('An exact decimal sum.') });
const fileDb = z.object({ file: z.number(), database: z.number() });
const reconciliationSchema = z
  .object({
    batch_id: z.string(),
    import_supplier: z.string(),
    state: z.string(),
    balanced: z.boolean(),
    totals: z.object({
      items_succeeded: z.number(),
      accounts: fileDb,
      notes: fileDb,
      statements: fileDb.extend({ gross_amount: z.object({ file: z.string(), database: z.string() }) }),
      payment_instructions: fileDb,
      transactions: z.array(z.object({ type: z.string(), file: countSum, database: countSum })),
    }),
    differences: z.array(
      z.object({
        line: z.number(),
        external_account_number: z.string().nullable(),
        service_account_number: z.string().nullable(),
        kind: z.enum(['account', 'note', 'transaction', 'statement', 'payment_instruction']),
        identifier: z.string(),
        problem: z.enum(['missing', 'type_differs', 'amount_differs', 'gross_amount_differs']),
        file: z.string().nullable(),
        database: z.string().nullable(),
      }),
    ),
    differences_total: z.number(),
  })
  .meta({ id: 'BatchReconciliation' });

const pageSizeOf = (raw: string | undefined, fallback: number): number => {
  const n = raw === undefined ? fallback : Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > MAX_PAGE_SIZE) throw badRequest('invalid_request', `page_size must be between 1 and ${MAX_PAGE_SIZE}.`, 'page_size');
  return n;
};
const pathOf = (req: FastifyRequest) => req.url.split('?')[0]!;

/** The batch door: cohort uploads and what operators need to watch and fix them. */
export function batchRoutes(batches: BatchService): RouteDef[] {
  return [
    {
      method: 'POST',
      url: '/v1/data-import/batches/',
      operationId: 'upload_batch',
      summary: 'Upload a cohort (NDJSON, one account bundle per line); the pipeline runs it.',
      tags: ['batches'],
      auth: 'token',
      query: uploadQuerySchema,
      streamBody: {
        mediaType: 'application/x-ndjson',
        description: 'One AccountBundle per line (UTF-8, LF or CRLF), streamed: up to BATCH_MAX_LINES lines and BATCH_MAX_BYTES bytes.',
        itemSchema: bundleSchema,
      },
      responses: {
        202: { description: 'Accepted: every line is an item; lines that are not bundles are failed items (stage parse).', schema: z.object({ batch_id: z.string(), total_items: z.number() }) },
        400: { description: 'import_supplier_not_found, operations_team_not_found, invalid_request (query).' },
        401: { description: 'Not authenticated.' },
        408: { description: 'request_timeout: no byte for BODY_IDLE_TIMEOUT_S, or not whole within REQUEST_TIMEOUT_S; nothing is kept.' },
        413: { description: 'More lines than BATCH_MAX_LINES, or more bytes than BATCH_MAX_BYTES; nothing is kept.' },
        415: { description: 'Not application/x-ndjson.' },
      },
      handler: async (req, reply) => {
        const q = parseOrThrow(uploadQuerySchema, req.query ?? {}, 'invalid_request', 'Invalid query parameters.');
        const key = req.headers['idempotency-key'];
        if (key !== undefined && (typeof key !== 'string' || key.length === 0 || key.length > 255)) {
          throw badRequest('invalid_request', 'Idempotency-Key must be 1 to 255 characters.', 'Idempotency-Key');
        }
        if (!(req.body instanceof Readable)) {
          throw new AppError(415, 'unsupported_media_type', 'Send the cohort as application/x-ndjson: one account bundle per line.');
        }
        const length = req.headers['content-length'];
        const declaredBytes = length !== undefined && /^\d+$/.test(length) ? Number(length) : undefined;
        // Once the body is in, inserting its last lines and enqueueing them is the service's own work,
        // minutes for a million lines: the socket's idle timeout must not close the connection meanwhile.
        const noIdleTimeout = () => {
          if (typeof req.raw.socket?.setTimeout === 'function') req.raw.socket.setTimeout(0);
        };
        if (req.raw.readableEnded) noIdleTimeout();
        else req.raw.once('end', noIdleTimeout);
        const result = await batches.upload(req.body, { ...q, idempotencyKey: key, apiKeyId: req.apiKeyId, declaredBytes });
        reply.code(202);
        return { batch_id: result.batch_id, total_items: result.total_items };
      },
    },
    {
      method: 'GET',
      url: '/v1/data-import/batches/',
      operationId: 'list_batches',
      summary: 'A supplier’s batches, newest first.',
      tags: ['batches'],
      auth: 'token',
      query: z.strictObject({ import_supplier: z.string().min(1), page_size: z.string().optional(), cursor: z.string().optional() }),
      responses: { 200: { description: 'One page; Link rel="next" when more follow.', schema: z.array(summarySchema) }, 401: { description: 'Not authenticated.' }, 404: { description: 'import_supplier_not_found' } },
      handler: async (req, reply) => {
        const q = parseOrThrow(z.strictObject({ import_supplier: z.string().min(1), page_size: z.string().optional(), cursor: z.string().optional() }), req.query ?? {}, 'invalid_request', 'Invalid query parameters.');
        const pageSize = pageSizeOf(q.page_size, 100);
        let before: { created_at: Date; id: string } | null = null;
        if (q.cursor !== undefined) {
          const [at, id] = Buffer.from(q.cursor, 'base64url').toString('utf8').split('|');
          const date = new Date(at ?? '');
          if (!id || !UUID.test(id) || Number.isNaN(date.getTime())) throw badRequest('invalid_request', 'The cursor is not one this service issued.', 'cursor');
          before = { created_at: date, id };
        }
        const { batches: page, more } = await batches.list(q.import_supplier, before, pageSize);
        const last = page.at(-1);
        if (more && last) {
          const rows = await batches.mustFind(last.batch_id);
          const cursor = Buffer.from(`${rows.created_at.toISOString()}|${last.batch_id}`).toString('base64url');
          reply.header('Link', `<${pathOf(req)}?import_supplier=${encodeURIComponent(q.import_supplier)}&page_size=${pageSize}&cursor=${cursor}>; rel="next"`);
        }
        return page;
      },
    },
    {
      method: 'GET',
      url: '/v1/data-import/batches/:batch_id/',
      operationId: 'batch_status',
      summary: 'Where a batch stands, per stage (durable in PostgreSQL).',
      tags: ['batches'],
      auth: 'token',
      params: idParams,
      responses: { 200: { description: 'The batch.', schema: statusSchema }, 401: { description: 'Not authenticated.' }, 404: { description: 'batch_not_found' } },
      handler: async (req) => batches.status((req.params as { batch_id: string }).batch_id),
    },
    {
      method: 'GET',
      url: '/v1/data-import/batches/:batch_id/items/',
      operationId: 'batch_items',
      summary: 'A batch’s items (JSON pages, or every matching item as CSV with Accept: text/csv).',
      tags: ['batches'],
      auth: 'token',
      params: idParams,
      query: itemsQuerySchema,
      responses: {
        200: {
          description: 'Items ordered by line; Link rel="next" when more follow. text/csv: line, external_account_number, stage, state, code, attr, detail.',
          schema: z.array(itemSchema),
          alternatives: { 'text/csv': 'Every matching item (Accept: text/csv): line, external_account_number, stage, state, code, attr, detail; one row per item, its errors joined with "; ".' },
        },
        401: { description: 'Not authenticated.' },
        404: { description: 'batch_not_found' },
      },
      handler: async (req, reply) => {
        const id = (req.params as { batch_id: string }).batch_id;
        const q = parseOrThrow(itemsQuerySchema, req.query ?? {}, 'invalid_request', 'Invalid query parameters.');
        if ((req.headers.accept ?? '').includes('text/csv')) {
          await batches.mustFind(id);
          reply.header('content-type', 'text/csv; charset=utf-8');
          reply.header('content-disposition', `attachment; filename="batch-${id}-${q.state ?? 'all'}.csv"`);
          return csvOf(batches, id, q.state);
        }
        const pageSize = pageSizeOf(q.page_size, MAX_PAGE_SIZE);
        const { items, more } = await batches.items(id, q.state, q.cursor === undefined ? 0 : Number(q.cursor), pageSize);
        const last = items.at(-1);
        if (more && last) {
          reply.header('Link', `<${pathOf(req)}?${q.state ? `state=${q.state}&` : ''}page_size=${pageSize}&cursor=${last.line}>; rel="next"`);
        }
        return items;
      },
    },
    {
      method: 'GET',
      url: '/v1/data-import/batches/:batch_id/reconciliation/',
      operationId: 'batch_reconciliation',
      summary: 'What the file carried for the succeeded items against what the database holds: counts, exact decimal sums, every difference by account (JSON, or the differences as CSV with Accept: text/csv).',
      tags: ['batches'],
      auth: 'token',
      params: idParams,
      responses: {
        200: {
          description: `The report; at most ${String(MAX_DIFFERENCES)} differences listed (differences_total counts them all; the CSV has every one). text/csv: ${DIFFERENCE_COLUMNS.join(', ')}.`,
          schema: reconciliationSchema,
          alternatives: { 'text/csv': `Every difference (Accept: text/csv): ${DIFFERENCE_COLUMNS.join(', ')}.` },
        },
        400: { description: 'batch_is_dry_run' },
        401: { description: 'Not authenticated.' },
        404: { description: 'batch_not_found' },
      },
      handler: async (req, reply) => {
        const id = (req.params as { batch_id: string }).batch_id;
        if ((req.headers.accept ?? '').includes('text/csv')) {
          const out = await reconciliationCsv(batches, id);
          reply.header('content-type', 'text/csv; charset=utf-8');
          reply.header('content-disposition', `attachment; filename="batch-${id}-reconciliation.csv"`);
          return out;
        }
        return batches.reconciliation(id, { limit: MAX_DIFFERENCES });
      },
    },
    {
      method: 'POST',
      url: '/v1/data-import/batches/:batch_id/retry/',
      operationId: 'retry_batch',
      summary: 'Re-enqueue failed items from the stage where they failed (optionally only some accounts, or only one error code).',
      tags: ['batches'],
      auth: 'token',
      params: idParams,
      body: retryBodySchema,
      responses: { 200: { description: 'How many items were re-enqueued.', schema: z.object({ requeued: z.number() }) }, 400: { description: 'invalid_request' }, 401: { description: 'Not authenticated.' }, 404: { description: 'batch_not_found' } },
      handler: async (req) => {
        const body = req.body === undefined || req.body === null ? {} : req.body;
        const parsed = parseOrThrow(retryBodySchema, body, 'invalid_request', 'Invalid request.');
        return batches.retry((req.params as { batch_id: string }).batch_id, parsed.external_account_numbers, parsed.code);
      },
    },
    {
      method: 'POST',
      url: '/v1/data-import/batches/:batch_id/cancel/',
      operationId: 'cancel_batch',
      summary: 'Stop a batch: items not yet started are cancelled; what succeeded stays.',
      tags: ['batches'],
      auth: 'token',
      params: idParams,
      responses: { 200: { description: 'The batch after the request.', schema: statusSchema }, 401: { description: 'Not authenticated.' }, 404: { description: 'batch_not_found' } },
      handler: async (req) => batches.cancel((req.params as { batch_id: string }).batch_id),
    },
  ];
}

/**
 * Every difference of the batch's reconciliation as CSV, streamed as the report runs: a batch of
 * 100,000 accounts is never held whole. A dry run is refused before the first row, as an envelope
 * rather than a broken CSV. The API and the console send this same stream.
 */
export async function reconciliationCsv(batches: BatchService, id: string): Promise<Readable> {
  if ((await batches.mustFind(id)).dry_run) throw badRequest('batch_is_dry_run', `Batch '${id}' is a dry run: it wrote nothing to reconcile.`);
  const out = stringify({ header: true, columns: [...DIFFERENCE_COLUMNS], cast: { string: neutraliseCell } });
  void (async () => {
    try {
      await batches.reconciliation(id, {
        limit: 0,
        onDifference: async (d) => {
          if (!out.write(d)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
        },
      });
      out.end();
    } catch (err) {
      out.destroy(err instanceof Error ? err : new AppError(500, 'internal_error', String(err)));
    }
  })();
  return out;
}

/** A batch's failed items as CSV (the API's `?state=failed` with Accept: text/csv, and the console's download). */
export const failuresCsv = (batches: BatchService, id: string): Readable => csvOf(batches, id, 'failed');

/** Every matching item as CSV, streamed page by page: one row per item, all its errors joined. */
function csvOf(batches: BatchService, id: string, state: 'failed' | 'succeeded' | 'pending' | undefined): Readable {
  const out = stringify({
    header: true,
    columns: ['line', 'external_account_number', 'stage', 'state', 'code', 'attr', 'detail'],
    cast: { string: neutraliseCell },
  });
  void (async () => {
    let after = 0;
    try {
      for (;;) {
        const { items, more } = await batches.items(id, state, after, MAX_PAGE_SIZE);
        for (const it of items) out.write(csvRow(it));
        if (!more || items.length === 0) break;
        after = items.at(-1)!.line;
      }
      out.end();
    } catch (err) {
      out.destroy(err instanceof Error ? err : new AppError(500, 'internal_error', String(err)));
    }
  })();
  return out;
}

/**
 * A cell a spreadsheet could run as a formula, prefixed with `'` so it shows as text. A spreadsheet
 * runs a cell starting with = + - @, also once it has trimmed leading spaces and invisible characters,
 * and some take the full-width forms (＝ ＋ － ＠) and other compatibility forms for the ASCII ones.
 * So a cell is neutralised when its first character is a space of any kind, an invisible (format) or
 * control character (tab, CR, LF, no-break space, zero-width space, BOM, …), or a character whose
 * compatibility form (NFKC) starts with = + - @. Every other cell is left exactly as it is.
 */
function neutraliseCell(v: string): string {
  const first = v.codePointAt(0);
  if (first === undefined) return v;
  const c = String.fromCodePoint(first);
  return /^[\p{Z}\p{Cf}\p{Cc}]/u.test(c) || /^[=+\-@]/.test(c.normalize('NFKC')) ? `'${v}` : v;
}

function csvRow(it: ItemView): Record<string, unknown> {
  // Envelopes list their problems in `errors`; the transactions 400 shape has code/attr/error_detail at the top.
  const err = it.error as { code?: string; detail?: string; error_detail?: string; attr?: string | null; errors?: Array<{ code: string; attr: string | null; detail: string }> } | null;
  const items = err?.errors?.length ? err.errors : err ? [{ code: err.code ?? '', attr: err.attr ?? null, detail: err.detail ?? err.error_detail ?? '' }] : [];
  return {
    line: it.line,
    external_account_number: it.external_account_number ?? '',
    stage: it.stage,
    state: it.state,
    code: items.map((e) => e.code).join('; '),
    attr: items.map((e) => e.attr ?? '').join('; '),
    detail: items.map((e) => e.detail).join('; '),
  };
}
