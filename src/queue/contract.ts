import type { JobsOptions } from 'bullmq';
import { STAGES, type StageJobData } from '../pipeline/routing.js';

// The one place that names the queues, what their jobs carry and how they are retried: producers
// and workers share these types, so they cannot disagree. The stages themselves are the pipeline's.
export { STAGES, nextStage, stageJobId, type Stage, type StageJobData } from '../pipeline/routing.js';

export interface EmailJobData {
  accountId: string;
}

/** One webhook delivery (a row of webhook_deliveries: the event and its webhook are read from there). */
export interface WebhookJobData {
  deliveryId: string;
}

/** One attempt's registration request, or its withdrawal (decisions.md §8): the rest is read from the attempt's row. */
export interface RegistrationJobData {
  requestId: string;
  kind: 'request' | 'withdrawal';
}

/** The registration events poller's scheduled run: nothing to carry, the cursor is in PostgreSQL. */
export type RegistrationEventsJobData = Record<string, never>;

export interface QueuePayloads {
  validate: StageJobData;
  stage: StageJobData;
  process: StageJobData;
  extras: StageJobData;
  emails: EmailJobData;
  webhooks: WebhookJobData;
  registration: RegistrationJobData;
  'registration-events': RegistrationEventsJobData;
}
export type QueueName = keyof QueuePayloads;
export const QUEUE_NAMES: readonly QueueName[] = [...STAGES, 'emails', 'webhooks', 'registration', 'registration-events'];

/** An attempt's job: the same id however often it is marked or re-enqueued, so one attempt has one job. */
export const registrationJobId = (d: RegistrationJobData): string => `${d.kind === 'request' ? 'reg' : 'wd'}.${d.requestId}`;

/**
 * A registration job's retries (408, 429, 5xx, timeouts): up to 12 attempts, waiting the gateway's
 * Retry-After when it gives one and an exponential backoff otherwise (the 'gateway' strategy,
 * src/queue/registration.ts). After the last, the meter point stays marked and the job failed, for
 * operators to retry from the dashboard.
 */
export const REGISTRATION_JOB_OPTIONS: JobsOptions = {
  attempts: 12,
  backoff: { type: 'gateway' },
  removeOnComplete: true,
  removeOnFail: { age: 30 * 24 * 3600, count: 100_000 },
};

export const emailJobId = (d: EmailJobData): string => `welcome.${d.accountId}`;
/** The delivery's id (a UUID: BullMQ refuses custom ids that are integers or hold ':'). */
export const webhookJobId = (d: WebhookJobData): string => d.deliveryId;

/**
 * A delivery's retries: exponential backoff from `backoffMs` (WEBHOOK_ATTEMPTS, WEBHOOK_BACKOFF_MS;
 * src/webhooks/settings.ts). What happened is on the delivery row; a failed job stays a week as the
 * other queues' do.
 */
export const webhookJobOptions = (s: { attempts: number; backoffMs: number }): JobsOptions => ({
  ...DEFAULT_JOB_OPTIONS,
  attempts: s.attempts,
  backoff: { type: 'exponential', delay: s.backoffMs },
});

/**
 * Transient failures (database, Redis, vendor) retry with exponential backoff; invalid input fails
 * at once (UnrecoverableError). A completed job is removed at once: its outcome is in PostgreSQL
 * (batch_items), operators read progress there, and keeping 10,000 finished jobs per queue cost
 * Redis commands to store and later to trim for nothing the dashboard needs. Failed jobs stay a
 * week for operators to inspect and retry.
 */
export const DEFAULT_JOB_OPTIONS: JobsOptions = {
  attempts: 6,
  backoff: { type: 'exponential', delay: 500 },
  removeOnComplete: true,
  removeOnFail: { age: 7 * 24 * 3600, count: 100_000 },
};

/**
 * The queues' event streams: nothing here reads them (no QueueEvents; the dashboard reads job
 * state), so they are kept short instead of BullMQ's 10,000 events a queue.
 */
export const EVENTS_MAX_LEN = 1_000;

/** How long a process job waits before asking again for a permit, without spending an attempt. */
export const PERMIT_RETRY_DELAY_MS = { min: 100, max: 400 };
