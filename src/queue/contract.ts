import type { JobsOptions } from 'bullmq';
import { STAGES, type StageJobData } from '../pipeline/routing.js';

// The one place that names the queues, what their jobs carry and how they are retried: producers
// and workers share these types, so they cannot disagree. The stages themselves are the pipeline's.
export { STAGES, nextStage, stageJobId, type Stage, type StageJobData } from '../pipeline/routing.js';

export interface EmailJobData {
  accountId: string;
}

export interface QueuePayloads {
  validate: StageJobData;
  stage: StageJobData;
  process: StageJobData;
  extras: StageJobData;
  emails: EmailJobData;
}
export type QueueName = keyof QueuePayloads;
export const QUEUE_NAMES: readonly QueueName[] = [...STAGES, 'emails'];

export const emailJobId = (d: EmailJobData): string => `welcome.${d.accountId}`;

/**
 * Transient failures (database, Redis, vendor) retry with exponential backoff; invalid input fails
 * at once (UnrecoverableError). Finished jobs are trimmed by age and count so Redis stays small;
 * progress that matters is in PostgreSQL.
 */
export const DEFAULT_JOB_OPTIONS: JobsOptions = {
  attempts: 6,
  backoff: { type: 'exponential', delay: 500 },
  removeOnComplete: { age: 3600, count: 10_000 },
  removeOnFail: { age: 7 * 24 * 3600, count: 100_000 },
};

/** How long a process job waits before asking again for a permit, without spending an attempt. */
export const PERMIT_RETRY_DELAY_MS = { min: 100, max: 400 };
