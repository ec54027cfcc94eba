import type { Session } from 'fastify';
import type { Redis } from 'ioredis';
import type { SessionStore } from '@fastify/session';
import type { OperatorRole } from '../db/database.js';

declare module 'fastify' {
  interface Session {
    /** Set at sign-in; absent on a session that never signed in. */
    operator?: SignedInOperator;
    /** @fastify/csrf-protection's per-session secret. */
    _csrf?: string;
  }
}

export interface SignedInOperator {
  id: string;
  name: string;
  role: OperatorRole;
  /** ms since the epoch: a password changed since then ends the session. */
  passwordSetAt: number;
  /** ms since the epoch: the session's absolute end is counted from here, however active it stays. */
  signedInAt: number;
}

/**
 * Console sessions in Redis (issue 13), for @fastify/session: one key per session under the
 * deployment's prefix, expiring with the session's idle timeout, so every instance behind a load
 * balancer sees the same sessions and a restart signs nobody out. Only the session id travels in the
 * cookie (a random id from @fastify/session, signed).
 */
export class RedisSessionStore implements SessionStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly idleMs: number,
  ) {}

  private key(id: string): string {
    return `${this.prefix}:console-session:${id}`;
  }

  set(id: string, session: Session, callback: (err?: unknown) => void): void {
    this.redis.set(this.key(id), JSON.stringify(session), 'PX', this.idleMs).then(() => callback(), callback);
  }

  get(id: string, callback: (err: unknown, result?: Session | null) => void): void {
    this.redis.get(this.key(id)).then((raw) => {
      if (raw === null) return callback(null, null);
      try {
        callback(null, JSON.parse(raw) as Session);
      } catch {
        // Not ours (or damaged): as if there were no session.
        callback(null, null);
      }
    }, callback);
  }

  destroy(id: string, callback: (err?: unknown) => void): void {
    this.redis.del(this.key(id)).then(() => callback(), callback);
  }
}
