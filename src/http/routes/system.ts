import { sql } from 'kysely';
import { z } from 'zod';
import type { Deps } from '../../deps.js';
import { AppError } from '../../errors.js';
import { within } from '../../timeout.js';
import type { RouteDef } from '../route.js';

const READY_TIMEOUT_MS = 1_000;

/** Liveness and readiness for orchestrators; open, and reveal nothing but up or down. */
export function systemRoutes(deps: Pick<Deps, 'db' | 'redis'>): RouteDef[] {
  return [
    {
      method: 'GET',
      url: '/healthz',
      operationId: 'healthz',
      summary: 'The process is alive.',
      tags: ['system'],
      auth: 'none',
      responses: { 200: { description: 'Alive.', schema: z.object({ status: z.literal('ok') }) } },
      handler: async () => ({ status: 'ok' }),
    },
    {
      method: 'GET',
      url: '/readyz',
      operationId: 'readyz',
      summary: 'PostgreSQL and Redis are reachable.',
      tags: ['system'],
      auth: 'none',
      responses: {
        200: { description: 'Ready.', schema: z.object({ status: z.literal('ok'), postgres: z.literal('ok'), redis: z.literal('ok') }) },
        503: { description: 'A dependency is down.' },
      },
      handler: async () => {
        // Bounded: commands on a disconnected Redis client wait for the reconnect, which could be forever.
        const [pgOk, redisOk] = await Promise.all([
          within(READY_TIMEOUT_MS, sql`SELECT 1`.execute(deps.db)),
          deps.redis.status === 'ready' ? within(READY_TIMEOUT_MS, deps.redis.ping()) : Promise.resolve(false),
        ]);
        if (!pgOk || !redisOk) {
          throw new AppError(
            503,
            'service_unavailable',
            `Not ready: ${[!pgOk && 'PostgreSQL', !redisOk && 'Redis'].filter(Boolean).join(' and ')} unreachable.`,
            [],
            {},
            { 'Retry-After': '5' },
          );
        }
        return { status: 'ok', postgres: 'ok', redis: 'ok' };
      },
    },
  ];
}
