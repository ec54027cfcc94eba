import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from '../log.js';
import type { StageQueue } from '../ports.js';
import { isRedisUnavailable, REDIS_REQUEST_TIMEOUT_MS, redisUnavailable } from '../redis.js';
import { within } from '../timeout.js';
import {
  DEFAULT_JOB_OPTIONS,
  EVENTS_MAX_LEN,
  QUEUE_NAMES,
  REGISTRATION_JOB_OPTIONS,
  emailJobId,
  registrationJobId,
  stageJobId,
  webhookJobId,
  webhookJobOptions,
  type EmailJobData,
  type QueueName,
  type QueuePayloads,
  type RegistrationJobData,
  type Stage,
  type StageJobData,
  type WebhookJobData,
} from './contract.js';

export type Queues = { readonly [K in QueueName]: Queue<QueuePayloads[K]> };

/**
 * One BullMQ queue per stage (plus e-mails), all under the deployment's Redis prefix. A queue
 * re-emits its connection's errors as its own 'error' event, which would crash the process on any
 * Redis blip without a listener: they are logged, and ioredis reconnects by itself.
 */
export function createQueues(redis: Redis, prefix: string, log: Logger): Queues {
  const make = <K extends QueueName>(name: K) => {
    const queue = new Queue<QueuePayloads[K]>(name, { connection: redis, prefix, defaultJobOptions: DEFAULT_JOB_OPTIONS, streams: { events: { maxLen: EVENTS_MAX_LEN } } });
    // Connection losses are logged once by the connection itself (src/redis.ts); anything else here.
    queue.on('error', (err) => {
      if (!isRedisUnavailable(err)) log.warn({ err, queue: name }, 'queue error');
    });
    return queue;
  };
  return Object.fromEntries(QUEUE_NAMES.map((n) => [n, make(n)])) as unknown as Queues;
}

/**
 * Closes the queues. A queue still initialising (its first INFO in flight) must finish first: closing
 * drops its error forwarding, and the INFO failing when the shared connection then quits would be an
 * unhandled 'error' event (a BullMQ quirk with shared connections). The wait is bounded.
 */
export async function closeQueues(queues: Queues, initWaitMs = 2_000): Promise<void> {
  const all = Object.values(queues) as Queue[];
  await within(initWaitMs, Promise.allSettled(all.map((q) => q.waitUntilReady())));
  // Bounded too: a queue whose Redis never became reachable may never finish closing.
  await within(initWaitMs, Promise.allSettled(all.map((q) => q.close())));
}

/**
 * Resolves when the queues' Redis answers within 2 s, and throws 503 `service_unavailable`
 * otherwise: an upload asks before it stores anything, so it never leaves a batch nothing can run.
 */
export async function assertQueuesReachable(queues: Queues): Promise<void> {
  const ok = await within(REDIS_REQUEST_TIMEOUT_MS, queues.validate.client.then((c) => (c as unknown as { ping(): Promise<string> }).ping()));
  if (!ok) throw redisUnavailable();
}

/** Enqueues stage jobs; deterministic ids make a repeat a no-op. */
export async function enqueueStage(queues: Queues, stage: Stage, items: readonly StageJobData[]): Promise<void> {
  if (items.length === 0) return;
  const queue = queues[stage] as Queue<StageJobData>;
  await queue.addBulk(items.map((data) => ({ name: stage, data, opts: { jobId: stageJobId(stage, data) } })));
}

/**
 * Enqueues the stage jobs of `items` that have no job in Redis, and answers how many jobs it really
 * created. BullMQ's add of a job id that exists already creates nothing and does not say so, so the
 * jobs are looked up first (one pipelined EXISTS each) and only missing ones are added; each add is
 * then confirmed by the timestamp its job was stored with, so a job another reconciler created at the
 * same moment is counted by that reconciler only.
 */
export async function enqueueMissingStage(queues: Queues, stage: Stage, items: readonly StageJobData[]): Promise<number> {
  if (items.length === 0) return 0;
  const queue = queues[stage] as Queue<StageJobData>;
  // The queues are built on an ioredis connection (createQueues); BullMQ types it more narrowly.
  const client = (await queue.client) as unknown as Redis;
  const results = <T>(res: Array<[Error | null, unknown]> | null): T[] =>
    (res ?? []).map(([err, value]) => {
      if (err) throw err;
      return value as T;
    });
  const lookup = client.pipeline();
  for (const d of items) lookup.exists(queue.toKey(stageJobId(stage, d)));
  const exists = results<number>(await lookup.exec());
  const missing = items.filter((_, i) => exists[i] === 0);
  if (missing.length === 0) return 0;
  const added = await queue.addBulk(missing.map((data) => ({ name: stage, data, opts: { jobId: stageJobId(stage, data) } })));
  const confirm = client.pipeline();
  for (const job of added) confirm.hget(queue.toKey(job.id!), 'timestamp');
  const stored = results<string | null>(await confirm.exec());
  // Gone already (a flush right after the add) still counts: this add created it.
  return added.filter((job, i) => stored[i] === null || Number(stored[i]) === job.timestamp).length;
}

/** Enqueues the welcome e-mails of accounts that have committed, in one call. */
export async function enqueueWelcomeEmails(queues: Queues, accountIds: readonly string[]): Promise<void> {
  if (accountIds.length === 0) return;
  const jobs = accountIds.map((accountId) => ({ name: 'welcome', data: { accountId }, opts: { jobId: emailJobId({ accountId }) } }));
  await (queues.emails as Queue<EmailJobData>).addBulk(jobs);
}

/**
 * Enqueues webhook deliveries by id; the job id is the delivery's, so a delivery that has its job
 * already (waiting, active, or delayed for a retry) is left as it is.
 */
export async function enqueueWebhookDeliveries(queues: Queues, deliveryIds: readonly string[], retries: { attempts: number; backoffMs: number }): Promise<void> {
  if (deliveryIds.length === 0) return;
  const opts = webhookJobOptions(retries);
  await (queues.webhooks as Queue<WebhookJobData>).addBulk(
    deliveryIds.map((deliveryId) => ({ name: 'deliver', data: { deliveryId }, opts: { ...opts, jobId: webhookJobId({ deliveryId }) } })),
  );
}

/** Enqueues the deliveries among `deliveryIds` whose job is not in Redis (lost, deleted, never added); answers how many. */
export async function enqueueMissingWebhookDeliveries(queues: Queues, deliveryIds: readonly string[], retries: { attempts: number; backoffMs: number }): Promise<number> {
  if (deliveryIds.length === 0) return 0;
  const queue = queues.webhooks as Queue<WebhookJobData>;
  const client = (await queue.client) as unknown as Redis;
  const lookup = client.pipeline();
  for (const deliveryId of deliveryIds) lookup.exists(queue.toKey(webhookJobId({ deliveryId })));
  const exists = ((await lookup.exec()) ?? []).map(([err, value]) => {
    if (err) throw err;
    return value as number;
  });
  const missing = deliveryIds.filter((_, i) => exists[i] === 0);
  await enqueueWebhookDeliveries(queues, missing, retries);
  return missing.length;
}

/** The pipeline's StageQueue port over these queues. */
export const stageQueueOf = (queues: Queues): StageQueue => ({
  enqueue: (stage, jobs) => enqueueStage(queues, stage, jobs),
  enqueueMissing: (stage, jobs) => enqueueMissingStage(queues, stage, jobs),
  assertReachable: () => assertQueuesReachable(queues),
});

/** Enqueues registration requests and withdrawals, one job per attempt (its id is the attempt's: a repeat is a no-op). */
export async function enqueueRegistrations(queues: Queues, jobs: readonly RegistrationJobData[]): Promise<void> {
  if (jobs.length === 0) return;
  await queues.registration.addBulk(jobs.map((data) => ({ name: data.kind, data, opts: { ...REGISTRATION_JOB_OPTIONS, jobId: registrationJobId(data) } })));
}
