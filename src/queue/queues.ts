import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { DEFAULT_JOB_OPTIONS, QUEUE_NAMES, emailJobId, stageJobId, type EmailJobData, type QueueName, type QueuePayloads, type Stage, type StageJobData } from './contract.js';

export type Queues = { readonly [K in QueueName]: Queue<QueuePayloads[K]> };

/** One BullMQ queue per stage (plus e-mails), all under the deployment's Redis prefix. */
export function createQueues(redis: Redis, prefix: string): Queues {
  const make = <K extends QueueName>(name: K) =>
    new Queue<QueuePayloads[K]>(name, { connection: redis, prefix, defaultJobOptions: DEFAULT_JOB_OPTIONS });
  return Object.fromEntries(QUEUE_NAMES.map((n) => [n, make(n)])) as unknown as Queues;
}

export async function closeQueues(queues: Queues): Promise<void> {
  await Promise.allSettled(Object.values(queues).map((q: Queue) => q.close()));
}

/** Enqueues stage jobs; deterministic ids make a repeat a no-op. */
export async function enqueueStage(queues: Queues, stage: Stage, items: readonly StageJobData[]): Promise<void> {
  if (items.length === 0) return;
  const queue = queues[stage] as Queue<StageJobData>;
  await queue.addBulk(items.map((data) => ({ name: stage, data, opts: { jobId: stageJobId(stage, data) } })));
}

export async function enqueueWelcomeEmail(queues: Queues, data: EmailJobData): Promise<void> {
  await (queues.emails as Queue<EmailJobData>).add('welcome', data, { jobId: emailJobId(data) });
}
