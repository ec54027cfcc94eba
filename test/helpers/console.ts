import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { Db } from '../../src/db/database.js';
import { createOperator } from '../../src/console/operators.js';
import type { OperatorRole } from '../../src/db/database.js';

/** A console session as a browser would hold it: its cookie, and a way to read a page's CSRF token. */
export interface ConsoleSession {
  cookie: string;
  get(url: string, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
  /** A form POST (urlencoded) with this session's cookie; `_csrf` from the page at `tokenFrom` unless given. */
  post(url: string, form: Record<string, string>, opts?: { tokenFrom?: string; headers?: Record<string, string> }): Promise<LightMyRequestResponse>;
  /** The CSRF token in a page's forms. */
  token(url?: string): Promise<string>;
}

let counter = 0;

/** Creates an operator with this role and signs them in through the sign-in form. */
export async function operatorSession(app: FastifyInstance, db: Db, role: OperatorRole, name = `${role}-${++counter}`): Promise<ConsoleSession & { name: string; password: string }> {
  const password = `password-of-${name}-0123`;
  await createOperator(db, name, role, password);
  const session = await signIn(app, name, password);
  if (!session) throw new Error(`could not sign ${name} in`);
  return { ...session, name, password };
}

export async function signIn(app: FastifyInstance, name: string, password: string): Promise<ConsoleSession | undefined> {
  const res = await app.inject({ method: 'POST', url: '/admin/sign-in', payload: new URLSearchParams({ name, password }).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  if (res.statusCode !== 303) return undefined;
  return sessionOf(app, cookieOf(res));
}

export function cookieOf(res: LightMyRequestResponse): string {
  const set = res.headers['set-cookie'];
  const first = (Array.isArray(set) ? set : [set]).find((c) => c?.startsWith('di_console='));
  if (!first) throw new Error(`no session cookie in ${JSON.stringify(res.headers)}`);
  return first.split(';')[0]!;
}

export function tokenIn(html: string): string {
  const m = /name="_csrf" value="([^"]+)"/.exec(html);
  if (!m) throw new Error('no CSRF token in the page');
  return m[1]!;
}

export function sessionOf(app: FastifyInstance, cookie: string): ConsoleSession {
  const get = (url: string, headers: Record<string, string> = {}) => app.inject({ method: 'GET', url, headers: { cookie, accept: 'text/html', ...headers } });
  const token = async (url = '/admin/') => tokenIn((await get(url)).body);
  return {
    cookie,
    get,
    token,
    async post(url, form, opts = {}) {
      const body = { _csrf: await token(opts.tokenFrom), ...form };
      return app.inject({ method: 'POST', url, payload: new URLSearchParams(body).toString(), headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', ...opts.headers } });
    },
  };
}
