import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { ServerResponse } from 'node:http';
import fastifyFormbody from '@fastify/formbody';
import fastifyHelmet from '@fastify/helmet';
import fastifyMultipart from '@fastify/multipart';
import fastifyView from '@fastify/view';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { Queue } from 'bullmq';
import { Eta } from 'eta';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { actingAs, listAudit, recordAudit } from '../audit/audit-log.js';
import { EVERY_SUPPLIER, runInScope } from '../auth/supplier-scope.js';
import { formatDatetime } from '../clock.js';
import type { AuditTargetKind, BatchState, SupplierStatus } from '../db/database.js';
import type { Deps } from '../deps.js';
import { AppError } from '../errors.js';
import { toAppError } from '../app-errors.js';
import { failuresCsv, reconciliationCsv } from '../http/routes/batches.js';
import { readAccountTree } from '../imports/accounts/account-tree.repository.js';
import { accountView } from '../imports/accounts/account-view.js';
import { UUID } from '../imports/batches/batch.service.js';
import type { Services } from '../imports/services.js';
import { findSupplierByCode } from '../imports/suppliers/supplier.repository.js';
import { listSuppliers, setSupplierStatus } from '../imports/suppliers/supplier.service.js';
import { STAGES } from '../pipeline/routing.js';
import { projectRoot } from '../project-root.js';
import { listDeliveries, listWebhooks } from '../webhooks/deliveries.repository.js';
import { FAILED_REGISTRATION } from '../registration/registration.repository.js';
import { CONSOLE_PREFIX, createSignIn, registerConsoleAuth, safeNext } from './auth.js';
import { accountItems, BATCH_STATES, batchCountsBySupplier, completionSeries, failureGroups, listBatches, registrationFunnel, searchItems } from './queries.js';

const VIEWS = path.join(projectRoot, 'src/console/views');
const STATIC = path.join(projectRoot, 'src/console/static');
const PAGE = 50;
/** Live progress streams open at once, over every operator: each polls PostgreSQL every STREAM_TICK_MS. */
const MAX_STREAMS = 64;
const STREAM_TICK_MS = 1_000;
/** A stream ends after this long; the browser's EventSource reconnects, through the sign-in check again. */
const STREAM_MAX_MS = 10 * 60_000;

export type ConsoleDeps = Pick<Deps, 'db' | 'redis' | 'config' | 'log' | 'queues' | 'clock'>;

/**
 * The operators' console at /admin/ (issue 13; docs/operators.md, "Console"): server-rendered pages
 * (Eta through @fastify/view) for batches, one batch with live progress, its failures, items and
 * reconciliation, accounts, suppliers and the audit log, with bull-board at /admin/queues, all behind
 * operator sign-in (auth.ts). Every action is a POST behind a confirmation page, carries a CSRF token,
 * runs as the operator (the audit log's actor) and reaches every supplier.
 */
export async function registerConsole(app: FastifyInstance, deps: ConsoleDeps, services: Services): Promise<void> {
  const assets = {
    'console.css': { type: 'text/css; charset=utf-8', body: readFileSync(path.join(STATIC, 'console.css')) },
    'console.js': { type: 'text/javascript; charset=utf-8', body: readFileSync(path.join(STATIC, 'console.js')) },
  };
  let openStreams = 0;
  const signIn = createSignIn(deps);

  await app.register(
    async (scope) => {
      await registerConsoleAuth(scope, deps);
      scope.setNotFoundHandler((request, reply) => reply.code(404).send({ detail: `No endpoint ${request.method} ${request.url.split('?')[0]}.`, code: 'not_found', errors: [] }));

      // bull-board, in a scope of its own: its page needs inline styles and Google's fonts, the console's do not.
      await scope.register(async (board) => {
        await board.register(fastifyHelmet, { contentSecurityPolicy: { useDefaults: false, directives: DASHBOARD_CSP }, frameguard: { action: 'deny' }, referrerPolicy: { policy: 'no-referrer' } });
        const serverAdapter = new FastifyAdapter();
        serverAdapter.setBasePath(`${CONSOLE_PREFIX}/queues`);
        createBullBoard({
          queues: Object.values(deps.queues).map((q: Queue) => new BullMQAdapter(q)),
          serverAdapter,
          options: { uiConfig: { boardTitle: 'Data import queues' } },
        });
        await board.register(serverAdapter.registerPlugin(), { prefix: '/queues' });
      });

      await scope.register(async (pages) => {
        // Referrer-Policy same-origin, not no-referrer: with no-referrer a browser sends `Origin: null` on the forms' POSTs.
        await pages.register(fastifyHelmet, { contentSecurityPolicy: { useDefaults: false, directives: CONSOLE_CSP }, frameguard: { action: 'deny' }, referrerPolicy: { policy: 'same-origin' } });
        await pages.register(fastifyFormbody, { bodyLimit: 16 * 1024 });
        await pages.register(fastifyMultipart, { limits: { files: 1, fields: 8, fieldSize: 4096, parts: 10, fileSize: deps.config.batchMaxBytes + 1 } });
        await pages.register(fastifyView, { engine: { eta: new Eta({ views: VIEWS, autoEscape: true }) }, root: VIEWS, production: true, defaultContext: { fmt: FORMAT, prefix: CONSOLE_PREFIX } });

        pages.setErrorHandler((err: FastifyError | AppError, request, reply) => {
          const csrf = typeof (err as FastifyError).code === 'string' && (err as FastifyError).code.startsWith('FST_CSRF');
          const e = csrf
            ? new AppError(403, 'csrf_failed', 'This form has expired or did not come from this console: reload the page and try again.')
            : toAppError(err);
          if (e.status >= 500) request.log.error({ err }, 'console request failed');
          if (request.method === 'GET' && !/text\/html/.test(request.headers.accept ?? '')) return reply.code(e.status).headers(e.headers).send(e.body());
          return reply.code(e.status).headers(e.headers).view('error', { title: 'Error', me: request.operator, csrf: '', error: e.body() });
        });

        /** Renders a page for the signed-in operator (with the sign-out form's token). */
        const page = async (request: FastifyRequest, reply: FastifyReply, template: string, data: Record<string, unknown>) =>
          reply.view(template, { me: request.operator, csrf: await reply.generateCsrf(), query: request.query, ...data });
        /** Runs a service call as the operator, for every supplier (the console is not scoped to one). */
        const asOperator = <T>(request: FastifyRequest, fn: () => Promise<T>): Promise<T> =>
          runInScope(EVERY_SUPPLIER, () => actingAs({ kind: 'operator', name: request.operator!.name }, fn));
        const csrf = { preHandler: pages.csrfProtection };

        for (const [name, asset] of Object.entries(assets)) {
          pages.get(`/static/${name}`, { config: { consolePublic: true } }, async (_request, reply) => reply.type(asset.type).header('cache-control', 'no-cache').send(asset.body));
        }

        // --- Sign in and out -------------------------------------------------------------------
        pages.get('/sign-in', { config: { consolePublic: true } }, async (request, reply) =>
          reply.view('sign-in', { title: 'Sign in', me: undefined, next: safeNext((request.query as { next?: unknown }).next), error: undefined }),
        );
        pages.post('/sign-in', { config: { consolePublic: true } }, async (request, reply) => {
          const form = z.object({ name: z.string().max(200).default(''), password: z.string().max(1024).default(''), next: z.string().max(2048).optional() }).safeParse(request.body ?? {});
          const body = form.success ? form.data : { name: '', password: '', next: undefined };
          const next = safeNext(body.next);
          const again = (status: number, error: string) => reply.code(status).view('sign-in', { title: 'Sign in', me: undefined, next, error, name: body.name });
          if (deps.config.nodeEnv === 'production' && request.protocol !== 'https') {
            return again(400, 'The console signs in over HTTPS only (behind a proxy, set TRUST_PROXY so the service sees it).');
          }
          const outcome = await signIn(request, body.name.trim(), body.password);
          if (outcome.kind === 'limited') {
            reply.header('retry-after', String(outcome.retryAfterS));
            return again(429, `Too many failed sign-ins: try again in ${Math.ceil(outcome.retryAfterS / 60)} minute(s).`);
          }
          if (outcome.kind === 'refused') return again(401, 'That name and password do not match an operator.');
          return reply.redirect(next, 303);
        });
        pages.post('/sign-out', { config: { consoleAnyRole: true }, ...csrf }, async (request, reply) => {
          await request.session.destroy();
          return reply.redirect(`${CONSOLE_PREFIX}/sign-in`, 303);
        });

        // --- Batches ---------------------------------------------------------------------------
        const batchListQuery = z.object({
          supplier: z.string().max(100).optional().transform((v) => (v === '' ? undefined : v)),
          state: z.enum(BATCH_STATES as [BatchState, ...BatchState[]]).or(z.literal('')).optional().transform((v) => (v === '' ? undefined : v)),
          before: z.string().regex(/^\d+\.[0-9a-f-]{36}$/).optional(),
        });
        pages.get('/', async (request, reply) => {
          const q = parseQuery(batchListQuery, request.query);
          const [ms, id] = q.before?.split('.') ?? [];
          const rows = await listBatches(deps.db, {
            ...(q.supplier !== undefined ? { supplier: q.supplier } : {}),
            ...(q.state !== undefined ? { state: q.state } : {}),
            ...(ms !== undefined && id !== undefined ? { before: { created_at: new Date(Number(ms)), id } } : {}),
            limit: PAGE + 1,
          });
          const batches = await Promise.all(rows.slice(0, PAGE).map(async (b) => ({ row: b, status: await services.batches.status(b.id) })));
          const last = rows.length > PAGE ? rows[PAGE - 1]! : undefined;
          return page(request, reply, 'batches', {
            title: 'Batches',
            batches: batches.map(({ row, status }) => ({ ...row, status, rate: rate(status.succeeded, row.created_at, row.finished_at ?? deps.clock.now()) })),
            suppliers: (await listSuppliers(deps.db)).map((s) => s.code),
            states: BATCH_STATES,
            filter: q,
            stages: STAGES,
            nextCursor: last ? `${last.created_at.getTime()}.${last.id}` : undefined,
          });
        });

        pages.get('/batches/new', { config: { consoleActs: true } }, async (request, reply) =>
          page(request, reply, 'upload', { title: 'Upload a cohort', suppliers: await listSuppliers(deps.db), teams: await deps.db.selectFrom('operations_teams').select('name').orderBy('name').execute(), error: undefined }),
        );
        pages.post('/batches', async (request, reply) => {
          if (!request.isMultipart()) throw new AppError(415, 'unsupported_media_type', 'Upload the cohort with the form (multipart/form-data).');
          const file = await request.file();
          if (!file) throw new AppError(400, 'invalid_request', 'Choose an NDJSON file to upload.');
          const field = (name: string): string | undefined => {
            const f = file.fields[name];
            const one = Array.isArray(f) ? f[0] : f;
            return one && one.type === 'field' ? String(one.value) : undefined;
          };
          // The token travels in the form, before the file: checked before a byte of the file is stored.
          (request as { body: unknown }).body = { _csrf: field('_csrf') };
          // The check answers a refusal itself (through the error handler: the 403 page) and then never calls back.
          const passed = await new Promise<boolean>((resolve, reject) => {
            pages.csrfProtection(request, reply, (err?: Error) => (err ? reject(err) : resolve(true)));
            if (reply.sent) resolve(false);
          });
          if (!passed) return reply;
          const supplier = field('import_supplier') ?? '';
          const team = field('operations_team_name') ?? '';
          const result = await asOperator(request, () =>
            services.batches.upload(file.file, { import_supplier: supplier, operations_team_name: team, dry_run: field('dry_run') === 'on' }),
          );
          return reply.redirect(`${CONSOLE_PREFIX}/batches/${result.batch_id}`, 303);
        });

        const batchParams = z.object({ id: z.string().regex(UUID) });
        const itemsQuery = z.object({
          search: z.string().max(128).optional(),
          state: z.enum(['failed', 'succeeded', 'pending', 'cancelled', '']).optional(),
          after: z.coerce.number().int().min(0).max(10_000_000).optional(),
        });
        const findBatch = async (request: FastifyRequest) => {
          const parsed = batchParams.safeParse(request.params);
          if (!parsed.success) throw new AppError(404, 'batch_not_found', 'No such batch.');
          return asOperator(request, () => services.batches.mustFind(parsed.data.id));
        };

        pages.get('/batches/:id', async (request, reply) => {
          const batch = await findBatch(request);
          const q = parseQuery(itemsQuery, request.query);
          const status = await services.batches.status(batch.id);
          const groups = await failureGroups(deps.db, batch.id);
          const until = batch.finished_at ?? deps.clock.now();
          const series = await completionSeries(deps.db, batch.id, batch.created_at, until);
          const states = q.state === 'failed' ? ['failed' as const] : q.state === 'succeeded' ? ['succeeded' as const] : q.state === 'cancelled' ? ['cancelled' as const] : q.state === 'pending' ? (['waiting', 'active', 'delayed'] as const) : undefined;
          const items = await searchItems(deps.db, batch.id, { ...(q.search ? { search: q.search } : {}), ...(states ? { states } : {}), afterLine: q.after ?? 0, limit: PAGE + 1 });
          return page(request, reply, 'batch', {
            title: `Batch ${batch.id.slice(0, 8)}`,
            batch,
            status,
            groups,
            chart: chartOf(series, status.total_items),
            rate: rate(status.succeeded, batch.created_at, until),
            stages: STAGES,
            items: items.slice(0, PAGE).map((i) => ({ ...i, problem: firstProblem(i.error) })),
            nextAfter: items.length > PAGE ? items[PAGE - 1]!.line : undefined,
            filter: q,
            deliveries: await listDeliveries(deps.db, { batchId: batch.id, limit: 20 }),
            registration: batch.dry_run ? undefined : { funnel: await registrationFunnel(deps.db, { batchId: batch.id }), base: `${CONSOLE_PREFIX}/batches/${batch.id}`, gateway: services.registration.gatewayConfigured() },
          });
        });

        pages.get('/batches/:id/events', async (request, reply) => {
          const batch = await findBatch(request);
          if (openStreams >= MAX_STREAMS) throw new AppError(503, 'service_unavailable', 'Too many live progress streams are open; reload later.', [], {}, { 'Retry-After': '10' });
          openStreams++;
          reply.hijack();
          const res: ServerResponse = reply.raw;
          res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', connection: 'keep-alive' });
          let closed = false;
          request.raw.on('close', () => (closed = true));
          const started = Date.now();
          try {
            while (!closed && Date.now() - started < STREAM_MAX_MS) {
              const status = await services.batches.status(batch.id);
              const fresh = await services.batches.mustFind(batch.id);
              const until = fresh.finished_at ?? deps.clock.now();
              const series = await completionSeries(deps.db, batch.id, batch.created_at, until);
              const finished = status.state !== 'RUNNING' && status.state !== 'UPLOADING';
              res.write(`event: progress\ndata: ${JSON.stringify({ state: status.state, succeeded: status.succeeded, failed: status.failed, total: status.total_items, stages: status.stages, rate: rate(status.succeeded, batch.created_at, until), chart: chartOf(series, status.total_items), finished })}\n\n`);
              if (finished) break;
              await new Promise((resolve) => setTimeout(resolve, STREAM_TICK_MS));
            }
          } catch (err) {
            request.log.warn({ err }, 'progress stream ended by an error');
          } finally {
            openStreams--;
            res.end();
          }
        });

        pages.get('/batches/:id/failures.csv', async (request, reply) => {
          const batch = await findBatch(request);
          reply.header('content-type', 'text/csv; charset=utf-8').header('content-disposition', `attachment; filename="batch-${batch.id}-failed.csv"`);
          return asOperator(request, async () => failuresCsv(services.batches, batch.id));
        });
        pages.get('/batches/:id/reconciliation', async (request, reply) => {
          const batch = await findBatch(request);
          const report = await asOperator(request, () => services.batches.reconciliation(batch.id, { limit: 500 }));
          return page(request, reply, 'reconciliation', { title: `Reconciliation of ${batch.id.slice(0, 8)}`, batch, report });
        });
        pages.get('/batches/:id/reconciliation.csv', async (request, reply) => {
          const batch = await findBatch(request);
          const csv = await asOperator(request, () => reconciliationCsv(services.batches, batch.id));
          return reply.header('content-type', 'text/csv; charset=utf-8').header('content-disposition', `attachment; filename="batch-${batch.id}-reconciliation.csv"`).send(csv);
        });

        const retryForm = z.object({ code: z.string().max(200).optional().transform((v) => (v === '' ? undefined : v)) });
        pages.get('/batches/:id/retry', { config: { consoleActs: true } }, async (request, reply) => {
          const batch = await findBatch(request);
          const { code } = parseQuery(retryForm, request.query);
          const groups = await failureGroups(deps.db, batch.id);
          const count = groups.filter((g) => code === undefined || g.code === code).reduce((n, g) => n + g.count, 0);
          return page(request, reply, 'confirm', {
            title: 'Retry failed items',
            message: code === undefined ? `Retry all ${FORMAT.n(count)} failed item(s) of batch ${batch.id}?` : `Retry the ${FORMAT.n(count)} failed item(s) with code ${code} of batch ${batch.id}?`,
            note: 'Each runs again from the stage where it failed, in a new round. Fix the data at the source first: an item that fails the same way fails again. Lines that are not JSON cannot be retried.',
            action: `${CONSOLE_PREFIX}/batches/${batch.id}/retry`,
            fields: code === undefined ? {} : { code },
            button: 'Retry',
            back: `${CONSOLE_PREFIX}/batches/${batch.id}`,
          });
        });
        pages.post('/batches/:id/retry', csrf, async (request, reply) => {
          const batch = await findBatch(request);
          const { code } = parseQuery(retryForm, request.body ?? {});
          await asOperator(request, () => services.batches.retry(batch.id, undefined, code));
          return reply.redirect(`${CONSOLE_PREFIX}/batches/${batch.id}`, 303);
        });
        pages.get('/batches/:id/cancel', { config: { consoleActs: true } }, async (request, reply) => {
          const batch = await findBatch(request);
          return page(request, reply, 'confirm', {
            title: 'Cancel the batch',
            message: `Cancel batch ${batch.id}?`,
            note: 'Items not yet started are cancelled; items being worked on finish their step; what succeeded stays.',
            action: `${CONSOLE_PREFIX}/batches/${batch.id}/cancel`,
            fields: {},
            button: 'Cancel the batch',
            back: `${CONSOLE_PREFIX}/batches/${batch.id}`,
          });
        });
        pages.post('/batches/:id/cancel', csrf, async (request, reply) => {
          const batch = await findBatch(request);
          await asOperator(request, () => services.batches.cancel(batch.id));
          return reply.redirect(`${CONSOLE_PREFIX}/batches/${batch.id}`, 303);
        });

        // --- Registration (decisions.md §8): register a batch, re-send what failed ----------------
        const registrationConfirm = (request: FastifyRequest, reply: FastifyReply, what: { title: string; message: string; note: string; action: string; back: string; button: string }) =>
          page(request, reply, 'confirm', { ...what, fields: {} });
        pages.get('/batches/:id/registration/register', { config: { consoleActs: true } }, async (request, reply) => {
          const batch = await findBatch(request);
          return registrationConfirm(request, reply, {
            title: 'Register the batch',
            message: `Register the meter points of every account batch ${batch.id} created?`,
            note: 'Each meter point not yet registered, and each whose registration failed or was withdrawn, gets a new attempt; those under way or on supply are left as they are.',
            action: `${CONSOLE_PREFIX}/batches/${batch.id}/registration/register`,
            back: `${CONSOLE_PREFIX}/batches/${batch.id}`,
            button: 'Register',
          });
        });
        pages.post('/batches/:id/registration/register', csrf, async (request, reply) => {
          const batch = await findBatch(request);
          await asOperator(request, () => services.registration.registerBatch(batch.id));
          return reply.redirect(`${CONSOLE_PREFIX}/batches/${batch.id}`, 303);
        });
        /** The confirmation of a re-send, counting the failed meter points exactly (the funnel's list of them is capped). */
        const resendConfirm = async (request: FastifyRequest, reply: FastifyReply, scope: { batchId: string } | { supplierId: string }, what: string, base: string) => {
          const funnel = await registrationFunnel(deps.db, scope);
          const failed = funnel.statuses.filter((s) => (FAILED_REGISTRATION as readonly string[]).includes(s.status)).reduce((n, s) => n + s.count, 0);
          return registrationConfirm(request, reply, {
            title: 'Re-send failed registrations',
            message: `Re-send the ${FORMAT.n(failed)} failed registration(s) of ${what}?`,
            note: 'Each meter point whose registration was refused, rejected or objected to gets a new attempt (a new request id); fix the cause first (the reason is listed), or it fails again.',
            action: `${base}/registration/resend`,
            back: base,
            button: 'Re-send',
          });
        };
        pages.get('/batches/:id/registration/resend', { config: { consoleActs: true } }, async (request, reply) => {
          const batch = await findBatch(request);
          return resendConfirm(request, reply, { batchId: batch.id }, `batch ${batch.id}`, `${CONSOLE_PREFIX}/batches/${batch.id}`);
        });
        pages.post('/batches/:id/registration/resend', csrf, async (request, reply) => {
          const batch = await findBatch(request);
          await asOperator(request, () => services.registration.resendFailed({ batchId: batch.id }));
          return reply.redirect(`${CONSOLE_PREFIX}/batches/${batch.id}`, 303);
        });
        pages.get('/suppliers/:code/registration/resend', { config: { consoleActs: true } }, async (request, reply) => {
          const s = await mustSupplier(request);
          return resendConfirm(request, reply, { supplierId: s.id }, `supplier ${s.code}`, `${CONSOLE_PREFIX}/suppliers/${encodeURIComponent(s.code)}`);
        });
        pages.post('/suppliers/:code/registration/resend', csrf, async (request, reply) => {
          const s = await mustSupplier(request);
          await asOperator(request, () => services.registration.resendFailed({ supplierCode: s.code }));
          return reply.redirect(`${CONSOLE_PREFIX}/suppliers/${encodeURIComponent(s.code)}`, 303);
        });

        // --- Accounts ----------------------------------------------------------------------------
        const accountQuery = z.object({ supplier: z.string().max(100).optional(), ext: z.string().max(256).optional() });
        pages.get('/accounts', async (request, reply) => {
          const q = parseQuery(accountQuery, request.query);
          if (q.supplier && q.ext) return reply.redirect(`${CONSOLE_PREFIX}/accounts/${encodeURIComponent(q.supplier)}/${encodeURIComponent(q.ext)}`, 303);
          return page(request, reply, 'accounts', { title: 'Accounts', suppliers: (await listSuppliers(deps.db)).map((s) => s.code), filter: q });
        });
        pages.get('/accounts/:supplier/:ext', async (request, reply) => {
          const { supplier: code, ext } = request.params as { supplier: string; ext: string };
          const supplier = await findSupplierByCode(deps.db, code);
          if (!supplier) throw new AppError(404, 'import_supplier_not_found', `Import supplier '${code}' does not exist.`);
          const rows = await readAccountTree(deps.db, supplier.id, ext);
          const items = await accountItems(deps.db, supplier.code, ext);
          if (!rows && items.length === 0) throw new AppError(404, 'account_not_found', `Supplier '${supplier.code}' has no account '${ext}', imported or in a batch.`);
          return page(request, reply, 'account', {
            title: `Account ${ext}`,
            supplier: supplier.code,
            ext,
            view: rows ? accountView(supplier.code, rows) : undefined,
            items: items.map((i) => ({ ...i, problem: firstProblem(i.error) })),
          });
        });

        // --- Suppliers ---------------------------------------------------------------------------
        pages.get('/suppliers', async (request, reply) =>
          page(request, reply, 'suppliers', { title: 'Suppliers', suppliers: await listSuppliers(deps.db), counts: await batchCountsBySupplier(deps.db) }),
        );
        const supplierParams = z.object({ code: z.string().max(100) });
        const statusForm = z.object({ status: z.enum(['ONGOING', 'PAUSED', 'COMPLETE']) });
        const mustSupplier = async (request: FastifyRequest) => {
          const { code } = parseQuery(supplierParams, request.params);
          const s = await findSupplierByCode(deps.db, code);
          if (!s) throw new AppError(404, 'import_supplier_not_found', `Import supplier '${code}' does not exist.`);
          return s;
        };
        pages.get('/suppliers/:code', async (request, reply) => {
          const s = await mustSupplier(request);
          return page(request, reply, 'supplier', {
            title: `Supplier ${s.code}`,
            supplier: s,
            batches: await listBatches(deps.db, { supplier: s.code, limit: 20 }),
            webhooks: await listWebhooks(deps.db, s.id),
            registration: { funnel: await registrationFunnel(deps.db, { supplierId: s.id }), base: `${CONSOLE_PREFIX}/suppliers/${encodeURIComponent(s.code)}`, gateway: services.registration.gatewayConfigured() },
            deliveries: await listDeliveries(deps.db, { supplierId: s.id, limit: 50 }),
            audit: await listAudit(deps.db, { limit: 20, targetKind: 'supplier', target: s.code }),
          });
        });
        pages.get('/suppliers/:code/status', { config: { consoleActs: true } }, async (request, reply) => {
          const s = await mustSupplier(request);
          const { status } = parseQuery(statusForm, request.query);
          return page(request, reply, 'confirm', {
            title: 'Change supplier status',
            message: `Set supplier ${s.code} from ${s.status} to ${status}?`,
            note: STATUS_NOTES[status],
            action: `${CONSOLE_PREFIX}/suppliers/${encodeURIComponent(s.code)}/status`,
            fields: { status },
            button: `Set ${status}`,
            back: `${CONSOLE_PREFIX}/suppliers/${encodeURIComponent(s.code)}`,
          });
        });
        pages.post('/suppliers/:code/status', csrf, async (request, reply) => {
          const s = await mustSupplier(request);
          const { status } = parseQuery(statusForm, request.body ?? {});
          await asOperator(request, () =>
            deps.db.transaction().execute(async (trx) => {
              const changed = await setSupplierStatus(trx, s.code, status);
              await recordAudit(trx, { action: 'supplier.set_status', targetKind: 'supplier', target: changed.code, detail: { status: changed.status, was: s.status } });
            }),
          );
          return reply.redirect(`${CONSOLE_PREFIX}/suppliers/${encodeURIComponent(s.code)}`, 303);
        });

        // --- Audit log -----------------------------------------------------------------------------
        const auditQuery = z.object({
          kind: z.enum(['batch', 'supplier', 'team', 'api_key', 'reference', 'account', 'operator', '']).optional(),
          target: z.string().max(300).optional(),
        });
        pages.get('/audit', async (request, reply) => {
          const q = parseQuery(auditQuery, request.query);
          const kind = q.kind === '' ? undefined : (q.kind as AuditTargetKind | undefined);
          const lines = await listAudit(deps.db, { limit: 200, ...(kind ? { targetKind: kind } : {}), ...(kind && q.target ? { target: q.target } : {}) });
          return page(request, reply, 'audit', { title: 'Audit log', lines, filter: q });
        });
      });
    },
    { prefix: CONSOLE_PREFIX },
  );
}

const STATUS_NOTES: Record<SupplierStatus, string> = {
  ONGOING: 'Its accounts can be migrated again: uploads, retries and the REST endpoints accept them.',
  PAUSED: 'Every migration attempt for it is refused (items fail with the supplier-status error) until it is set ONGOING again.',
  COMPLETE: 'Its migration is over: every further attempt is refused.',
};

function parseQuery<T extends z.ZodType>(schema: T, value: unknown): z.output<T> {
  const parsed = schema.safeParse(value ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new AppError(400, 'invalid_request', `Invalid ${issue?.path.join('.') || 'request'}: ${issue?.message ?? 'not valid'}.`, [
      { detail: issue?.message ?? 'not valid', code: 'invalid', attr: issue?.path.join('.') || null },
    ]);
  }
  return parsed.data;
}

/** Accounts finished per second since the batch started. */
function rate(done: number, from: Date, until: Date): number {
  const s = (until.getTime() - from.getTime()) / 1000;
  return s > 0 ? done / s : 0;
}

/** The first problem of an item's envelope (or of the transactions 400 shape), for a table cell. */
function firstProblem(error: unknown): { code: string; attr: string; detail: string } | undefined {
  if (error === null || typeof error !== 'object') return undefined;
  const e = error as { code?: string; detail?: string; error_detail?: string; attr?: string | null; errors?: Array<{ code: string; attr: string | null; detail: string }> };
  const first = e.errors?.[0];
  return first ? { code: first.code, attr: first.attr ?? '', detail: first.detail } : { code: e.code ?? '', attr: e.attr ?? '', detail: e.detail ?? e.error_detail ?? '' };
}

const CHART = { width: 600, height: 160 } as const;

/** The SVG polyline of completions over time, scaled to the chart: the page draws it, the stream redraws it. */
function chartOf(series: Array<{ at_s: number; completed: number }>, total: number): { points: string; span_s: number; total: number } {
  const span = Math.max(1, series.at(-1)?.at_s ?? 1);
  const top = Math.max(1, total);
  const points = series.map((p) => `${((p.at_s / span) * CHART.width).toFixed(1)},${(CHART.height - (p.completed / top) * CHART.height).toFixed(1)}`).join(' ');
  return { points, span_s: span, total };
}

const FORMAT = {
  n: (x: number) => x.toLocaleString('en-GB'),
  time: (d: Date | string | null | undefined) => (d ? formatDatetime(typeof d === 'string' ? new Date(d) : d) : ''),
  rate: (x: number) => (x >= 10 ? x.toFixed(0) : x.toFixed(1)),
  pct: (part: number, whole: number) => (whole > 0 ? `${Math.floor((part / whole) * 100)}%` : '0%'),
  json: (v: unknown) => JSON.stringify(v, null, 2),
  chart: CHART,
};

/** The console's own pages: nothing inline, nothing from elsewhere. */
const CONSOLE_CSP = {
  defaultSrc: ["'none'"],
  baseUri: ["'none'"],
  scriptSrc: ["'self'"],
  styleSrc: ["'self'"],
  imgSrc: ["'self'", 'data:'],
  connectSrc: ["'self'"],
  formAction: ["'self'"],
  frameAncestors: ["'none'"],
};

/**
 * What the bull-board UI needs, checked against @bull-board/ui 9.10 (index.ejs and its bundles):
 * - scripts: only same-origin files; the inline `__UI_CONFIG__` block is type application/json, which CSP does not run;
 * - styles: inline `style` attributes and a `<style>` block in index.ejs, `<style>` elements created at run time
 *   (theme overrides, the code editor), and the Google Fonts stylesheet;
 * - fonts from fonts.gstatic.com; data: images; a same-origin web worker (syntax highlighting); XHR to its own API.
 * No upgrade-insecure-requests: operators reaching the service over plain HTTP (port-forward) would get a blank page.
 */
const DASHBOARD_CSP = {
  defaultSrc: ["'self'"],
  baseUri: ["'self'"],
  scriptSrc: ["'self'"],
  scriptSrcAttr: ["'none'"],
  styleSrc: ["'self'", "'unsafe-inline'", 'https://fonts.googleapis.com'],
  fontSrc: ["'self'", 'https://fonts.gstatic.com', 'data:'],
  imgSrc: ["'self'", 'data:'],
  connectSrc: ["'self'"],
  workerSrc: ["'self'"],
  objectSrc: ["'none'"],
  formAction: ["'self'"],
  frameAncestors: ["'none'"],
};
