import { createHash, hkdfSync } from 'node:crypto';
import fastifyCookie from '@fastify/cookie';
import fastifyCsrfProtection from '@fastify/csrf-protection';
import fastifySession from '@fastify/session';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Deps } from '../deps.js';
import { authenticateOperator, currentOperator, type Operator } from './operators.js';
import { RedisSessionStore } from './session.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The signed-in operator, as they are now (role, not disabled); set by the console's guard. */
    operator: Operator | undefined;
  }
  interface FastifyContextConfig {
    /** The route is public (sign-in, its assets): no session needed. */
    consolePublic?: boolean;
    /** The route shows a form that changes state: operators only (every non-GET route is, unless consoleAnyRole). */
    consoleActs?: boolean;
    /** A non-GET route any signed-in operator may use (sign-out). */
    consoleAnyRole?: boolean;
  }
}

export const CONSOLE_PREFIX = '/admin';
export const SESSION_COOKIE = 'di_console';

type AuthDeps = Pick<Deps, 'db' | 'redis' | 'config' | 'log'>;

/**
 * Sessions, CSRF and the sign-in limits for the console (issue 13; docs/security.md, "Console").
 * Registered on the scope holding every /admin route, bull-board's included.
 *
 * - The cookie holds only a signed random session id: HttpOnly, SameSite=Strict, path /admin, and
 *   Secure in production (where the console signs in over HTTPS only). The session lives in Redis,
 *   ends after CONSOLE_SESSION_IDLE_MINUTES without a request and CONSOLE_SESSION_MAX_HOURS after
 *   sign-in, and is re-issued under a new id at sign-in (no fixation).
 * - Every request re-reads the operator: disabling one, changing their role or their password takes
 *   effect at their next request.
 * - Every state-changing console form carries a CSRF token bound to the session; every non-GET
 *   request must also come from this origin (Origin / Sec-Fetch-Site): bull-board's own calls
 *   cannot carry a token, and the origin check is what stands for it there.
 */
export async function registerConsoleAuth(scope: FastifyInstance, deps: AuthDeps): Promise<void> {
  const production = deps.config.nodeEnv === 'production';
  // The cookie's signing key, derived from TOKEN_SECRET (required in production) rather than one more secret to manage.
  const secret = Buffer.from(hkdfSync('sha256', deps.config.tokenSecret, 'data-import', 'console-session-cookie', 32)).toString('base64url');
  await scope.register(fastifyCookie);
  await scope.register(fastifySession, {
    secret,
    cookieName: SESSION_COOKIE,
    cookie: { path: CONSOLE_PREFIX, httpOnly: true, sameSite: 'strict', secure: production, maxAge: deps.config.consoleSession.idleMs },
    store: new RedisSessionStore(deps.redis, deps.config.redisPrefix, deps.config.consoleSession.idleMs),
    // No session (no Redis key) for a visitor who has not signed in.
    saveUninitialized: false,
    rolling: true,
  });
  await scope.register(fastifyCsrfProtection, { sessionPlugin: '@fastify/session' });
  scope.decorateRequest('operator', undefined);

  scope.addHook('onRequest', async (request, reply) => {
    const config = request.routeOptions.config;
    if (!SAFE_METHODS.has(request.method) && !sameOrigin(request)) {
      return reply.code(403).headers(REFUSAL_HEADERS).send({ detail: 'The request did not come from this console (Origin).', code: 'cross_origin_refused', errors: [] });
    }
    if (config.consolePublic) return;
    const signedIn = request.session.operator;
    const now = Date.now();
    const operator =
      signedIn && now - signedIn.signedInAt < deps.config.consoleSession.maxMs ? await currentOperator(deps.db, signedIn.id, signedIn.passwordSetAt) : undefined;
    if (!operator) {
      if (signedIn) await request.session.destroy();
      return notSignedIn(request, reply);
    }
    request.operator = operator;
    // Every non-GET acts (bull-board's included: a viewer reads the dashboard, never acts on it), and so do the forms leading to one.
    const acts = config.consoleActs ?? (!SAFE_METHODS.has(request.method) && !config.consoleAnyRole);
    if (acts && operator.role !== 'operator') return forbidden(request, reply);
  });
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * A state change must come from a page of this origin. Browsers send Sec-Fetch-Site on every
 * request (same-origin, same-site, cross-site, none); older ones send Origin on POSTs instead (the
 * console's Referrer-Policy, same-origin, keeps it from being "null"). A request with neither (a
 * script, curl) carries no browser's cookies unless given them, and still needs the CSRF token on
 * the console's own forms.
 */
function sameOrigin(request: FastifyRequest): boolean {
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined) return site === 'same-origin' || site === 'none';
  const origin = request.headers.origin;
  return origin === undefined || origin === `${request.protocol}://${request.host}`;
}

function wantsHtml(request: FastifyRequest): boolean {
  return request.method === 'GET' && /text\/html/.test(request.headers.accept ?? '');
}

/**
 * The guard answers before the pages' and bull-board's own helmet runs (their scopes are inside this
 * one): its refusals get the strictest headers here, so none can be framed or run anything.
 */
const REFUSAL_HEADERS = { 'content-security-policy': "default-src 'none'; frame-ancestors 'none'", 'x-frame-options': 'DENY', 'referrer-policy': 'same-origin' } as const;

function notSignedIn(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  reply.headers(REFUSAL_HEADERS);
  if (wantsHtml(request)) {
    const next = request.url.startsWith(CONSOLE_PREFIX) ? `?next=${encodeURIComponent(request.url)}` : '';
    return reply.redirect(`${CONSOLE_PREFIX}/sign-in${next}`, 303);
  }
  return reply.code(401).send({ detail: 'Sign in to the console first (/admin/sign-in).', code: 'not_authenticated', errors: [] });
}

function forbidden(request: FastifyRequest, reply: FastifyReply): FastifyReply | Promise<FastifyReply> {
  const error = { detail: 'Viewers can see the console but not act: this needs the operator role.', code: 'permission_denied', errors: [] };
  // A page for a browser (the console's pages can render one; bull-board's cannot), the envelope for anything else.
  if (wantsHtml(request) && typeof reply.view === 'function') return reply.code(403).view('error', { title: 'Not allowed', me: request.operator, csrf: '', error });
  return reply.code(403).headers(REFUSAL_HEADERS).send(error);
}

/** Where to go after signing in: only a path of the console itself, never another site. */
export function safeNext(next: unknown): string {
  // Printable ASCII only: the value becomes a Location header, where a control character or a
  // non-Latin-1 one would make Node throw while answering.
  if (typeof next === 'string' && next.length < 2048 && /^\/admin\/[\x21-\x7e]*$/.test(next) && !next.includes('\\')) return next;
  return `${CONSOLE_PREFIX}/`;
}

export type SignInOutcome = { kind: 'signed_in'; operator: Operator } | { kind: 'refused' } | { kind: 'limited'; retryAfterS: number };

/**
 * The sign-in check, limited per client address and per name (LOGIN_MAX_FAILURES failures within
 * LOGIN_FAILURE_WINDOW_S, in Redis so the limit holds across instances): guessing one operator's
 * password from many addresses, or many operators' from one, stops at the limit. Once blocked, even
 * the right password is refused until the window passes.
 */
export function createSignIn(deps: AuthDeps) {
  const limit = { points: deps.config.loginMaxFailures, duration: deps.config.loginFailureWindowS };
  const limiter = (name: string) =>
    new RateLimiterRedis({ storeClient: deps.redis, keyPrefix: `${deps.config.redisPrefix}:console-sign-in-${name}`, ...limit, insuranceLimiter: new RateLimiterMemory(limit) });
  const byAddress = limiter('address');
  const byName = limiter('name');
  // Names are hashed into the key: the limiter's keys never hold what someone typed.
  const nameKey = (name: string) => createHash('sha256').update(name.toLowerCase()).digest('base64url');

  return async function signIn(request: FastifyRequest, name: string, password: string): Promise<SignInOutcome> {
    const keys: Array<[RateLimiterRedis, string]> = [
      [byAddress, request.ip],
      [byName, nameKey(name)],
    ];
    for (const [l, key] of keys) {
      const seen = await l.get(key);
      if (seen !== null && seen.consumedPoints >= limit.points) return { kind: 'limited', retryAfterS: Math.max(1, Math.ceil(seen.msBeforeNext / 1000)) };
    }
    const operator = await authenticateOperator(deps.db, name, password);
    if (operator) {
      const signedInAt = Date.now();
      await request.session.regenerate();
      request.session.operator = { id: operator.id, name: operator.name, role: operator.role, passwordSetAt: operator.password_set_at.getTime(), signedInAt };
      return { kind: 'signed_in', operator };
    }
    try {
      for (const [l, key] of keys) await l.consume(key);
    } catch (limited) {
      if (limited instanceof RateLimiterRes) return { kind: 'limited', retryAfterS: Math.max(1, Math.ceil(limited.msBeforeNext / 1000)) };
      throw limited;
    }
    return { kind: 'refused' };
  };
}
