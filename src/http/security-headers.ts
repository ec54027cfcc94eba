import type { FastifyInstance } from 'fastify';


/** The headers every API response carries (see registerSecurityHeaders). */
export const SECURITY_HEADERS = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' } as const;

/** Instances already given the hook: registering twice is a no-op. */
const registered = new WeakSet<FastifyInstance>();

/**
 * Adds `Cache-Control: no-store` and `X-Content-Type-Options: nosniff` to every response of `app`
 * and of the plugins registered on it afterwards: the data-import and batch routes, ObtainToken
 * (/v1/graphql/), errors, 404s and Fastify's own refusals alike. Responses carry account data and
 * tokens, so no shared cache may keep them, and a browser must never sniff a JSON or CSV body into
 * something it runs.
 *
 * An onSend hook, so it runs whatever answered (handler, error handler, not-found handler, an
 * onRequest refusal). Fastify runs no hook at all for the replies of its `frameworkErrors` option (a
 * malformed URL, a path parameter over maxParamLength): that handler must add SECURITY_HEADERS itself. A Cache-Control the route set itself is kept (the operator dashboard's static
 * files set theirs); nothing in the data-import API sets one. Call it on the root instance, before
 * routes and plugins are registered, so encapsulated plugins inherit it. Idempotent.
 */
/** Whether registerSecurityHeaders has run on `app`. */
export const hasSecurityHeaders = (app: FastifyInstance): boolean => registered.has(app);

export function registerSecurityHeaders(app: FastifyInstance): void {
  if (registered.has(app)) return;
  registered.add(app);
  app.addHook('onSend', async (_request, reply, payload) => {
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', SECURITY_HEADERS['cache-control']);
    reply.header('x-content-type-options', SECURITY_HEADERS['x-content-type-options']);
    return payload;
  });
}
