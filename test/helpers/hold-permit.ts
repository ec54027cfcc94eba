// Run as a child process: takes one processing permit, says "held", and waits to be killed.
// Used to prove that a holder that dies (SIGKILL) cannot keep its permit past the lease TTL.
import { Redis } from 'ioredis';
import { createLogger } from '../../src/log.js';
import { createProcessPermits } from '../../src/queue/semaphore.js';

const redis = new Redis(process.env.REDIS_URL!, { maxRetriesPerRequest: null });
const permits = createProcessPermits(redis, {
  prefix: process.env.REDIS_PREFIX!,
  limit: Number(process.env.PROCESS_CONCURRENCY_LIMIT),
  ttlMs: Number(process.env.PROCESS_PERMIT_TTL_MS),
  log: createLogger('silent'),
});
const permit = await permits.tryAcquire();
process.stdout.write(permit ? 'held\n' : 'busy\n');
setInterval(() => undefined, 60_000);
