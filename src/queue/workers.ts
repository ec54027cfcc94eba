import { Worker, type Processor, type WorkerOptions } from 'bullmq';
import { createTransport } from 'nodemailer';
import type { Deps } from '../deps.js';
import { isRedisUnavailable } from '../redis.js';
import { within } from '../timeout.js';
import type { Services } from '../imports/services.js';
import { createEmailProcessor } from '../notifications/welcome-email.js';
import { createPipeline, type PipelineObserver } from '../pipeline/pipeline.js';
import { PERMIT_RETRY_DELAY_MS, STAGES, type QueueName, type Stage } from './contract.js';
import { createStageProcessor } from './stage-processor.js';
import { createRegistrationEventsProcessor, createRegistrationProcessor, gatewayBackoff, scheduleRegistrationPolling } from './registration.js';
import { loadWebhookSettings, type WebhookSettings } from '../webhooks/settings.js';
import { createWebhookProcessor } from './webhook-processor.js';
import { startWebhookRelay, type WebhookRelay } from './webhook-relay.js';

export interface WorkerSet {
  readonly workers: readonly Worker[];
  /** The webhook relay and sweep, when this set runs the webhooks queue. */
  readonly webhookRelay: WebhookRelay | undefined;
  /** Stops taking jobs and waits up to `graceMs` for active ones, then closes hard. Idempotent. */
  close(graceMs?: number): Promise<void>;
}

export interface StartWorkersOptions {
  queues: readonly QueueName[];
  observe?: (stage: Stage, outcome: 'completed' | 'failed' | 'delayed', seconds: number) => void;
  /** Told of every recorded step and closed batch (the metrics' counters). */
  observer?: PipelineObserver;
  /** Told the seconds from request to acceptance of each registration acceptance the poller applies (the metrics' histogram). */
  observeAcceptance?: (seconds: readonly number[]) => void;
  /** Over the WEBHOOK_* environment variables (src/webhooks/settings.ts): tests shorten the backoff. */
  webhooks?: Partial<WebhookSettings>;
}

/** Starts BullMQ workers for the named queues, with the stage processors over the domain services. */
export function startWorkers(deps: Deps, services: Services, opts: StartWorkersOptions): WorkerSet {
  const { config, log } = deps;
  const workers: Worker[] = [];
  const common = {
    connection: deps.redisBlocking,
    prefix: config.redisPrefix,
    lockDuration: config.workerLockMs,
    stalledInterval: config.workerLockMs,
    // A job whose worker died runs again; only a job that keeps killing workers is given up on.
    maxStalledCount: 3,
  };
  const pipeline = createPipeline(
    { db: deps.db, clock: deps.clock, log, permits: deps.permits, stageQueue: deps.ports.stageQueue, permitRetryDelayMs: PERMIT_RETRY_DELAY_MS, ...(opts.observer ? { observer: opts.observer } : {}) },
    services,
  );
  // Read only where the webhooks queue runs; a bad WEBHOOK_* value stops the start, as a bad config does.
  const webhookSettings = opts.queues.includes('webhooks') ? { ...loadWebhookSettings(), ...opts.webhooks } : undefined;
  let webhookRelay: WebhookRelay | undefined;
  for (const name of opts.queues) {
    let processor: Processor;
    const concurrency =
      name === 'webhooks' ? webhookSettings!.concurrency : name === 'registration-events' ? 1 : config.workerConcurrency[name];
    let extra: Partial<WorkerOptions> = {};
    if ((STAGES as readonly string[]).includes(name)) {
      processor = createStageProcessor(pipeline, name as Stage, {
        setSize: config.pipelineSet.size,
        setWaitMs: config.pipelineSet.waitMs,
        ...(opts.observe ? { observe: opts.observe } : {}),
      }) as Processor;
    } else if (name === 'registration') {
      processor = createRegistrationProcessor({ db: deps.db, log, gateway: config.registrationGateway }) as Processor;
      // The industry throttles: at most REGISTRATION_RATE_PER_SECOND requests a second over every worker (BullMQ's limiter is per queue).
      extra = { limiter: { max: config.registration.ratePerSecond, duration: 1_000 }, settings: { backoffStrategy: gatewayBackoff } };
    } else if (name === 'registration-events') {
      processor = createRegistrationEventsProcessor({ db: deps.db, log, gateway: config.registrationGateway, queues: deps.queues, markAccounts: (ids) => services.registration.markAccounts(ids), ...(opts.observeAcceptance ? { observeAcceptance: opts.observeAcceptance } : {}) }) as Processor;
      if (config.registrationGateway) {
        scheduleRegistrationPolling(deps.queues, config.registration.pollMs).catch((err: unknown) => log.warn({ err }, 'the registration events schedule could not be installed; it is retried at the next start'));
      }
    } else if (name === 'webhooks') {
      const settings = webhookSettings!;
      processor = createWebhookProcessor(deps.db, { timeoutMs: settings.timeoutMs }) as Processor;
      webhookRelay = startWebhookRelay({ db: deps.db, databaseUrl: config.databaseUrl, queues: deps.queues, settings, log, onRedisReconnect: deps.onRedisReconnect });
    } else {
      if (!config.smtpUrl) {
        log.warn('SMTP_URL is not set: welcome e-mails wait unsent in the emails queue');
        continue;
      }
      processor = createEmailProcessor(deps, createTransport(config.smtpUrl), config.emailFrom) as Processor;
    }
    const worker = new Worker(name, processor, { ...common, concurrency, ...extra });
    // Connection losses are logged once by the connection itself (src/redis.ts); anything else here.
    worker.on('error', (err) => {
      if (!isRedisUnavailable(err)) log.warn({ err, queue: name }, 'worker error');
    });
    worker.on('failed', (job, err) => {
      if (job && job.attemptsMade >= (job.opts.attempts ?? 1)) log.info({ queue: name, jobId: job.id, err: err.message }, 'job failed');
    });
    workers.push(worker);
  }

  let closing: Promise<void> | undefined;
  return {
    workers,
    webhookRelay,
    close(graceMs = config.workerShutdownGraceMs) {
      closing ??= (async () => {
        await webhookRelay?.stop();
        // A worker closed while its blocking connection is still connecting makes BullMQ emit that
        // connection's failure after the worker has dropped its listeners: an uncaught 'error' that
        // ended the process with exit 1 instead of a clean stop (SIGTERM right after start-up).
        await within(2_000, Promise.allSettled(workers.map((w) => w.waitUntilReady())));
        const finished = await within(graceMs, Promise.allSettled(workers.map((w) => w.close())));
        if (!finished) {
          log.warn({ graceMs }, 'active jobs did not finish within the grace period; closing hard (they will run again)');
          await Promise.allSettled(workers.map((w) => w.close(true)));
        }
      })();
      return closing;
    },
  };
}
