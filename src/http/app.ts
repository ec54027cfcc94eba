import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance } from 'fastify';
import { TokenService } from '../auth/tokens.js';
import type { Deps } from '../deps.js';
import { AppError } from '../errors.js';
import { createServices } from '../imports/services.js';
import { registerGraphql } from '../graphql/obtain-token.js';
import { createTokenAuthenticator } from './auth.js';
import { parseJsonExact } from './json.js';
import { buildOpenApi } from './openapi.js';
import type { RouteDef } from './route.js';
import { accountRoutes } from './routes/accounts.js';
import { extrasRoutes } from './routes/extras.js';
import { systemRoutes } from './routes/system.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The API key the request's token was issued for; set by the token hook. */
    apiKeyId: string;
  }
}

/** decisions §7: JSON bodies up to 10 MiB. */
export const JSON_BODY_LIMIT = 10 * 1024 * 1024;

/** PostgreSQL errors that mean "the database is unreachable right now", not "the request is wrong". */
const UNAVAILABLE_PG_CODES = new Set(['57P01', '57P02', '57P03', '08000', '08001', '08003', '08006', '53300']);
const UNAVAILABLE_NET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND']);

export interface BuiltApp {
  app: FastifyInstance;
  /** Every REST route the app serves, as declared (tests walk it so no route escapes authentication). */
  routes: readonly RouteDef[];
}

/** Builds the HTTP application without listening: tests use app.inject(), server.ts listens. */
export async function buildApp(deps: Deps): Promise<BuiltApp> {
  const app = Fastify({
    loggerInstance: deps.log as FastifyBaseLogger,
    bodyLimit: JSON_BODY_LIMIT,
    routerOptions: { ignoreTrailingSlash: true },
  });

  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    try {
      done(null, parseJsonExact(body as string));
    } catch (err) {
      done(new AppError(400, 'invalid_json', `The request body is not valid JSON: ${(err as Error).message}`), undefined);
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
  await registerGraphql(app, deps.db, tokens);

  const services = createServices(deps);
  const routes: RouteDef[] = [...systemRoutes(deps), ...accountRoutes(services.accounts), ...extrasRoutes(services)];
  for (const r of routes) {
    app.route({
      method: r.method,
      url: r.url,
      ...(r.auth === 'token'
        ? {
            onRequest: async (req) => {
              req.apiKeyId = await authenticate(req);
            },
          }
        : {}),
      handler: r.handler,
    });
  }
  const openapi = buildOpenApi(routes, '1.0.0');
  app.get('/openapi.json', async () => openapi);

  return { app, routes };
}

/** Everything thrown ends as the envelope: our AppErrors as they are, Fastify's by their status, the rest 500/503. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const e = err as FastifyError & { code?: string };
  if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || e.statusCode === 413) {
    return new AppError(413, 'payload_too_large', `The request body is larger than ${JSON_BODY_LIMIT} bytes.`);
  }
  if (e.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || e.statusCode === 415) {
    return new AppError(415, 'unsupported_media_type', 'Unsupported Content-Type; send application/json.');
  }
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return new AppError(e.statusCode, 'invalid_request', e.message);
  }
  if (typeof e.code === 'string' && (UNAVAILABLE_PG_CODES.has(e.code) || UNAVAILABLE_NET_CODES.has(e.code))) {
    return new AppError(503, 'service_unavailable', 'A backing service is unreachable; retry shortly.', [], {}, { 'Retry-After': '5' }, { cause: err });
  }
  if (e.message?.includes('Connection terminated') || e.message?.includes('timeout exceeded when trying to connect')) {
    return new AppError(503, 'service_unavailable', 'A backing service is unreachable; retry shortly.', [], {}, { 'Retry-After': '5' }, { cause: err });
  }
  return new AppError(500, 'internal_error', 'An unexpected error occurred.', [], {}, {}, { cause: err });
}
