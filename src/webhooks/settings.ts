import { z } from 'zod';

// The webhooks' tunables, read from the environment here rather than in src/config.ts: only the
// processes that run the webhooks queue (and its relay) need them. Parsed once at start-up, frozen.

const whole = (fallback: number, min: number, max: number) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .optional()
    .transform((v) => v ?? fallback)
    .pipe(z.number().int().min(min).max(max));

const schema = z.object({
  /** Attempts per delivery, the first included: with the default backoff, 8 attempts span about 21 minutes. */
  WEBHOOK_ATTEMPTS: whole(8, 1, 50),
  /** The first retry's delay; each next one doubles (BullMQ's exponential backoff). */
  WEBHOOK_BACKOFF_MS: whole(10_000, 1, 86_400_000),
  /** How long one request may take, answer included, before it counts as a timeout (and is retried). */
  WEBHOOK_TIMEOUT_MS: whole(10_000, 100, 120_000),
  /** How often the sweep re-enqueues pending deliveries whose job is missing (0: never). */
  WEBHOOK_SWEEP_INTERVAL_S: whole(60, 0, 86_400),
  /** Deliveries a worker process sends at once. */
  WORKER_CONCURRENCY_WEBHOOKS: whole(10, 1, 1_000),
});

export interface WebhookSettings {
  readonly attempts: number;
  readonly backoffMs: number;
  readonly timeoutMs: number;
  readonly sweepIntervalMs: number;
  readonly concurrency: number;
}

export class WebhookSettingsError extends Error {
  override readonly name = 'WebhookSettingsError';
}

/** The settings from `env`; throws WebhookSettingsError naming every bad variable. */
export function loadWebhookSettings(env: NodeJS.ProcessEnv = process.env): WebhookSettings {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    throw new WebhookSettingsError(`invalid configuration: ${parsed.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ')}`);
  }
  const e = parsed.data;
  return Object.freeze({
    attempts: e.WEBHOOK_ATTEMPTS,
    backoffMs: e.WEBHOOK_BACKOFF_MS,
    timeoutMs: e.WEBHOOK_TIMEOUT_MS,
    sweepIntervalMs: e.WEBHOOK_SWEEP_INTERVAL_S * 1000,
    concurrency: e.WORKER_CONCURRENCY_WEBHOOKS,
  });
}
