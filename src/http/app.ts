import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply } from 'fastify';
import { TokenService } from '../auth/tokens.js';
import type { TrustProxy } from '../config.js';
import type { Deps } from '../deps.js';
import { runInScope, type SupplierScope } from '../auth/supplier-scope.js';
import { AppError } from '../errors.js';
import { JSON_BODY_LIMIT, toAppError } from '../app-errors.js';
import { createServices, type Services } from '../imports/services.js';
import { registerGraphql } from '../graphql/obtain-token.js';
import { createTokenAuthenticator } from './auth.js';
import { parseJsonExact, printable, storable, UnstorableString } from '../json.js';
import { actingAs } from '../audit/audit-log.js';
import { registerDocs } from './docs.js';
import { buildOpenApi } from './openapi.js';
import { installRequestTimeouts, timeoutServerOptions } from './request-timeouts.js';
import { scopeOf, type RouteDef } from './route.js';
import { createMetrics, type Metrics } from '../metrics.js';
import { registerOperatorRoutes } from './operator.js';
import { registerConsole } from '../console/console.js';
import { accountRoutes } from './routes/accounts.js';
import { batchRoutes } from './routes/batches.js';
import { extrasRoutes } from './routes/extras.js';
import { registrationRoutes } from './routes/registration.js';
import { systemRoutes } from './routes/system.js';
import { v2AccountRoutes } from './routes/v2-accounts.js';
import { registerSecurityHeaders, SECURITY_HEADERS } from './security-headers.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The API key the request's token was issued for; set by the token hook. */
    apiKeyId: string;
    /** The suppliers that key reaches (null: every one); set by the token hook, undefined on routes without one. */
    supplierScope: SupplierScope | undefined;
  }
}

export interface BuiltApp {
  app: FastifyInstance;
  /** Every REST route the app serves, as declared (tests walk it so no route escapes authentication). */
  routes: readonly RouteDef[];
  /** The domain core the routes call; the in-process workers use the same instance. */
  services: Services;
  /** This process's metrics; in-process workers report job durations into it. */
  metrics: Metrics;
}

/**
 * TRUST_PROXY as Fastify takes it. Fastify no longer takes a hop count (a number now trusts nothing),
 * so a count N becomes "believe the N nearest hops": right only when nothing but the proxies can reach
 * the service (docs/security.md); otherwise TRUST_PROXY should list the proxies' addresses.
 */
function fastifyTrustProxy(tp: TrustProxy): boolean | string[] | ((address: string, hop: number) => boolean) {
  if (typeof tp === 'number') return (_address, hop) => hop < tp;
  return typeof tp === 'boolean' ? tp : [...tp];
}

/** Builds the HTTP application without listening: tests use app.inject(), server.ts listens. */
export async function buildApp(deps: Deps): Promise<BuiltApp> {
  const app = Fastify({
    loggerInstance: deps.log as FastifyBaseLogger,
    bodyLimit: JSON_BODY_LIMIT,
    // Slow and abandoned requests: Node's whole-request and socket idle timeouts (request-timeouts.ts).
    ...timeoutServerOptions(deps.config.requestTimeouts),
    // request.ip (the sign-in and operator limits' key) is the client behind the proxies TRUST_PROXY names.
    trustProxy: fastifyTrustProxy(deps.config.trustProxy),
    // External account numbers may be 128 characters (percent-encoded, longer still) in a path.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 1024 },
    // Errors Fastify raises before routing (a malformed URL) get the envelope like every other error.
    frameworkErrors: (err, _req, reply) => {
      const mapped = toAppError(err);
      // Fastify runs no hooks for these replies: the security headers are set here too.
      void (reply as FastifyReply).code(mapped.status).headers({ ...SECURITY_HEADERS, ...mapped.headers }).send(mapped.body());
    },
  });
  registerSecurityHeaders(app);

  const metrics = createMetrics(deps);
  metrics.installHttpHook(app);
  // Before every route's own hooks: a body's clock starts when its request arrives, even unauthenticated.
  installRequestTimeouts(app, deps.config.requestTimeouts);

  app.removeContentTypeParser(['application/json', 'text/plain']);
  // Cohort uploads are streamed: the handler reads the raw body line by line, never all at once.
  app.addContentTypeParser('application/x-ndjson', (_req, payload, done) => done(null, payload));
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    try {
      done(null, parseJsonExact(body as string));
    } catch (err) {
      done(
        err instanceof UnstorableString
          ? new AppError(400, 'invalid_characters', `The request body has a string that cannot be stored: ${err.message}.`)
          : new AppError(400, 'invalid_json', `The request body is not valid JSON: ${printable((err as Error).message)}`),
        undefined,
      );
    }
  });
  // Path and query values reach SQL as text too: refuse what PostgreSQL cannot store, before any handler.
  app.addHook('preHandler', async (req) => {
    for (const source of [req.params, req.query] as Array<Record<string, unknown> | undefined>) {
      for (const [key, value] of Object.entries(source ?? {})) {
        if ((typeof value === 'string' && !storable(value)) || !storable(key)) {
          throw new AppError(400, 'invalid_characters', `'${key}' has characters that cannot be stored (NUL or an unpaired surrogate).`);
        }
      }
    }
  });

  app.setErrorHandler((err: FastifyError | AppError, req, reply) => {
    const mapped = toAppError(err);
    if (mapped.status >= 500) req.log.error({ err }, 'request failed');
    return reply.code(mapped.status).headers(mapped.headers).send(mapped.body());
  });
  app.setNotFoundHandler((req, reply) =>
    reply.code(404).send({ detail: `No endpoint ${req.method} ${req.url.split('?')[0]}.`, code: 'not_found', errors: [] }),
  );

  const tokens = new TokenService(deps.config.tokenSecret, () => deps.clock.now());
  const authenticate = createTokenAuthenticator(deps.db, tokens);
  app.decorateRequest('apiKeyId', '');
  app.decorateRequest('supplierScope', undefined);
  await registerGraphql(app, deps.db, tokens, {
    redis: deps.redis,
    prefix: deps.config.redisPrefix,
    maxFailures: deps.config.loginMaxFailures,
    windowS: deps.config.loginFailureWindowS,
  }, { introspection: deps.config.nodeEnv !== 'production' });

  const services = createServices(deps);
  const routes: RouteDef[] = [
    ...systemRoutes(deps),
    ...accountRoutes(services.accounts),
    ...v2AccountRoutes(services.accountImports, () => deps.clock.now()),
    ...extrasRoutes(services),
    ...batchRoutes(services.batches),
    ...registrationRoutes(services.registration),
  ];
  for (const r of routes) {
    app.route({
      method: r.method,
      url: r.url,
      ...(r.auth === 'token'
        ? {
            onRequest: async (req) => {
              const principal = await authenticate(req);
              req.apiKeyId = principal.apiKeyId;
              req.supplierScope = principal.scope;
            },
          }
        : {}),
      // Everything a token route's handler does runs in its key's supplier scope (auth/supplier-scope.ts).
      // …and acts as its key (the audit log's actor).
      handler: r.auth === 'token' ? (req, reply) => runInScope(scopeOf(req), () => actingAs({ kind: 'api_key', name: req.apiKeyId }, () => r.handler(req, reply))) : r.handler,
    });
  }
  const openapi = buildOpenApi(routes, '1.0.0');
  app.get('/openapi.json', async () => openapi);
  registerDocs(app);
  await registerOperatorRoutes(app, deps, metrics, deps.config.operator);
  await registerConsole(app, deps, services);

  return { app, routes, services, metrics };
}

