import { UnrecoverableError, type Job } from 'bullmq';
import type { Executor } from '../db/database.js';
import { attemptDelivery } from '../webhooks/deliver.js';
import type { WebhookJobData } from './contract.js';

/**
 * The webhooks queue's processor: one attempt at the job's delivery (src/webhooks/deliver.ts). A
 * retryable failure throws, so BullMQ retries with the job's backoff; a refusal, a disabled webhook
 * or the last failed attempt throws UnrecoverableError, so nothing retries a delivery given up.
 */
export function createWebhookProcessor(db: Executor, opts: { timeoutMs: number }) {
  return async (job: Job<WebhookJobData>): Promise<'delivered' | 'skipped'> => {
    const attempt = job.attemptsMade + 1;
    const outcome = await attemptDelivery(db, job.data.deliveryId, {
      timeoutMs: opts.timeoutMs,
      lastAttempt: attempt >= (job.opts.attempts ?? 1),
      // The wall clock, never the service's: receivers check webhook-timestamp against theirs.
      now: () => new Date(),
    });
    if (outcome.kind === 'retry') throw new Error(outcome.error);
    if (outcome.kind === 'failed') throw new UnrecoverableError(outcome.error);
    return outcome.kind;
  };
}
