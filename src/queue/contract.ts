import type { JobsOptions } from 'bullmq';

/**
 * The one place that names the queues, what their jobs carry and how they are retried:
 * producers and workers share these types, so they cannot disagree.
 */
export const STAGES = ['validate', 'stage', 'process', 'extras'] as const;
export type Stage = (typeof STAGES)[number];

/** Jobs carry identifiers only: the bundle lives in PostgreSQL (batch_items), so Redis stays small. */
export interface StageJobData {
  batchId: string;
  line: number;
  /** The item's retry round: part of the job id, so a retried item gets a fresh job. */
  round: number;
}

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

/** The stage after `stage` in a normal (not dry-run) batch, or null after the last. */
export const nextStage = (stage: Stage): Stage | null => STAGES[STAGES.indexOf(stage) + 1] ?? null;

/** Deterministic: enqueueing the same stage of the same item in the same round twice is harmless. */
export const stageJobId = (stage: Stage, d: StageJobData): string => `${d.batchId}.${d.line}.${stage}.${d.round}`;
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
