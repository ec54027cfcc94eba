import { createHash, timingSafeEqual } from 'node:crypto';
import fastifyBasicAuth from '@fastify/basic-auth';
import fastifyHelmet from '@fastify/helmet';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Deps } from '../deps.js';
import { AppError, type ErrorEnvelope } from '../errors.js';
import { toAppError } from '../app-errors.js';
import type { Metrics } from '../metrics.js';

export const METRICS_PATH = '/metrics';
export const OPERATOR_REALM = 'operators';

export interface OperatorCredentials {
  readonly user: string;
  readonly password: string;
}

const sha256 = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/**
 * Digests have a fixed length, so timingSafeEqual never throws and the time taken reveals neither
 * the length nor the common prefix of the expected value.
 */
const sameSecret = (given: string, expected: Buffer): boolean => timingSafeEqual(sha256(given), expected);

/** Thrown by validate: distinguishes "wrong credentials" from the plugin's "no or malformed header". */
class WrongCredentials extends Error {
  override readonly name = 'WrongCredentials';
}

/**
 * Prometheus /metrics, behind credentials of its own, as a scraper sends them: the scrape token
 * (METRICS_TOKEN, a bearer) or HTTP Basic (OPERATOR_USER / OPERATOR_PASSWORD). People use the console
 * (src/console/), with operator accounts of their own. Everything lives in one encapsulated plugin so
 * the auth, helmet and cache hooks touch nothing else. Without either, every scrape is refused.
 */
export async function registerOperatorRoutes(
  app: FastifyInstance,
  deps: Pick<Deps, 'log' | 'redis' | 'config'>,
  metrics: Metrics,
  credentials?: OperatorCredentials,
): Promise<void> {
  const metricsToken = deps.config.metricsToken === undefined ? undefined : sha256(deps.config.metricsToken);
  if (credentials === undefined) {
    deps.log.warn(
      metricsToken === undefined
        ? 'neither METRICS_TOKEN nor OPERATOR_USER/OPERATOR_PASSWORD is set: /metrics refuses every request'
        : 'OPERATOR_USER/OPERATOR_PASSWORD not set: /metrics answers METRICS_TOKEN only',
    );
  }
  const expected = credentials && { user: sha256(credentials.user), password: sha256(credentials.password) };
  // Wrong credentials per client address, in Redis so the limit holds across every instance (the same
  // limits as ObtainToken). Should Redis be away, each process counts on its own rather than lock
  // operators out of /metrics during the outage.
  const limit = { points: deps.config.loginMaxFailures, duration: deps.config.loginFailureWindowS };
  const failures = new RateLimiterRedis({
    storeClient: deps.redis,
    keyPrefix: `${deps.config.redisPrefix}:operator-failures`,
    ...limit,
    insuranceLimiter: new RateLimiterMemory(limit),
  });

  await app.register(async (scope) => {
    // Before the guard, so refusals carry the security headers too.
    await scope.register(fastifyHelmet, {
      contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
      frameguard: { action: 'deny' },
      referrerPolicy: { policy: 'no-referrer' },
    });

    await scope.register(fastifyBasicAuth, {
      // The guard below sets the challenge itself, with the envelope, on every refusal.
      authenticate: false,
      async validate(user, password) {
        if (expected === undefined) throw new WrongCredentials();
        // Both compared every time (no short-circuit), so timing does not tell which one was wrong.
        const userOk = sameSecret(user, expected.user);
        const passwordOk = sameSecret(password, expected.password);
        if (!(userOk && passwordOk)) throw new WrongCredentials();
      },
    });

    // onRequest: refused before any body is read or any handler runs.
    scope.addHook('onRequest', async (request, reply) => {
      try {
        // With METRICS_TOKEN set, /metrics also takes it (`Authorization: Bearer …`), as Prometheus sends it.
        const bearer = metricsToken === undefined ? null : /^Bearer (\S+)$/i.exec(request.headers.authorization ?? '');
        const err =
          bearer && request.url.split('?')[0] === METRICS_PATH
            ? sameSecret(bearer[1]!, metricsToken!)
              ? undefined
              : new WrongCredentials()
            : await new Promise<Error | undefined>((resolve) => scope.basicAuth(request, reply, (e?: Error) => resolve(e)));
        // The comparison is cheap and synchronous, so the limit is applied to its outcome before anything is
        // answered. A wrong guess takes a point (atomically: of simultaneous guesses, at most the limit get
        // their 401); a right one only checks the address is not blocked, so a dashboard loading its
        // assets in parallel never counts against itself. Once blocked, even the right credentials get 429.
        if (err instanceof WrongCredentials) {
          await failures.consume(request.ip);
        } else if (err === undefined) {
          const seen = await failures.get(request.ip);
          if (seen !== null && seen.consumedPoints >= limit.points) throw seen;
        }
        if (err !== undefined) return refuse(request, reply, err);
      } catch (limited) {
        if (limited instanceof RateLimiterRes) {
          const retryAfterS = Math.max(1, Math.ceil(limited.msBeforeNext / 1000));
          const e = new AppError(429, 'too_many_requests', 'Too many failed operator sign-ins from this address; try again later.', [], {}, { 'Retry-After': String(retryAfterS) });
          return reply.code(e.status).headers(e.headers).send(e.body());
        }
        request.log.error({ err: limited }, 'operator authentication failed unexpectedly');
        const e = toAppError(limited);
        return reply.code(e.status).headers(e.headers).send(e.body());
      }
    });

    scope.addHook('onSend', async (_request, reply, payload) => {
      // Metrics are operational data: keep them out of shared caches.
      if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
      return payload;
    });

    scope.get(METRICS_PATH, async (_request, reply) => {
      const body = await metrics.registry.metrics();
      return reply.type(metrics.registry.contentType).send(body);
    });

  });
}

function refuse(request: FastifyRequest, reply: FastifyReply, err: Error): FastifyReply {
  const failed = err instanceof WrongCredentials;
  if (!failed && (err as { code?: string }).code !== 'FST_BASIC_AUTH_MISSING_OR_BAD_AUTHORIZATION_HEADER') {
    request.log.error({ err }, 'operator authentication failed unexpectedly');
  }
  const body: ErrorEnvelope = failed
    ? { detail: 'The operator credentials are not valid.', code: 'authentication_failed', errors: [] }
    : { detail: 'Operator credentials are required (HTTP Basic).', code: 'not_authenticated', errors: [] };
  return reply
    .code(401)
    // charset: the plugin decodes credentials as UTF-8, and RFC 7617 says to tell clients so.
    .header('www-authenticate', `Basic realm="${OPERATOR_REALM}", charset="UTF-8"`)
    .send(body);
}
