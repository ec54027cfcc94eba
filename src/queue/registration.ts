import { UnrecoverableError, type BackoffStrategy, type Job } from 'bullmq';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/database.js';
import type { Logger } from '../log.js';
import { GatewayUnavailable, readEvents, sendRegistration, sendWithdrawal, type GatewayAnswer, type GatewayConfig } from '../registration/gateway-client.js';
import {
  accountsAwaitingRegistration,
  anyOpenRegistration,
  applyEventsPage,
  findAttempt,
  noteSendStarted,
  recordRequestAnswer,
  recordWithdrawalAnswer,
  unansweredAttempts,
} from '../registration/registration.repository.js';
import type { RegistrationJobData } from './contract.js';
import { enqueueRegistrations, type Queues } from './queues.js';

/** A request the gateway did not take or refuse (408, 429, 5xx, a timeout, our key refused): retried. */
export class GatewayRetry extends Error {
  override readonly name = 'GatewayRetry';
  constructor(
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

const MAX_BACKOFF_MS = 5 * 60_000;
/** A Retry-After longer than this is capped: the job retries then, and asks again. */
const MAX_RETRY_AFTER_MS = 30 * 60_000;

/**
 * The 'gateway' backoff (REGISTRATION_JOB_OPTIONS): the gateway's Retry-After when it sent one,
 * exponential from one second otherwise, with jitter, capped at five minutes.
 */
export const gatewayBackoff: BackoffStrategy = (attemptsMade, _type, err) => {
  const after = err instanceof GatewayRetry ? err.retryAfterMs : undefined;
  if (after !== undefined) return Math.min(Math.max(after, 0), MAX_RETRY_AFTER_MS);
  const base = Math.min(1_000 * 2 ** Math.max(0, attemptsMade - 1), MAX_BACKOFF_MS);
  return Math.round(base * (0.75 + Math.random() * 0.5));
};

export interface RegistrationWorkerDeps {
  db: Kysely<Database>;
  log: Logger;
  gateway: GatewayConfig | undefined;
}

/**
 * The registration queue's processor (decisions.md §8). A request job sends its attempt's request once
 * the attempt is still its meter point's current one and unanswered; before sending it notes, in its
 * own statement, that a request may be out, then records the answer. So marking twice (one attempt,
 * one job id) and two workers (BullMQ's lock on the job) never send a second request; a worker killed
 * between the request and its record runs again and resends with the same Idempotency-Key, which the
 * gateway answers 409 (taken): one registration.
 */
export function createRegistrationProcessor(deps: RegistrationWorkerDeps) {
  const retryOrThrow = (answer: Extract<GatewayAnswer, { kind: 'retry' }>, job: Job<RegistrationJobData>): never => {
    if (answer.keyRefused) deps.log.error({ status: answer.status, requestId: job.data.requestId }, 'the registration gateway refused our key (REGISTRATION_GATEWAY_KEY)');
    throw new GatewayRetry(answer.error, answer.retryAfterMs);
  };
  return async (job: Job<RegistrationJobData>): Promise<string> => {
    const gateway = deps.gateway;
    if (!gateway) throw new UnrecoverableError('no registration gateway is configured');
    const { requestId } = job.data;
    const attempt = await findAttempt(deps.db, requestId);
    if (!attempt) return 'gone';
    if (job.data.kind === 'withdrawal') {
      const answer = await sendWithdrawal(gateway, requestId);
      if (answer.kind === 'retry') return retryOrThrow(answer, job);
      await recordWithdrawalAnswer(deps.db, requestId, answer.kind === 'taken' ? { taken: true } : { taken: false, reason: answer.reason });
      return answer.kind;
    }
    if (attempt.current_request_id !== requestId || attempt.status !== 'UNDERGOING_REGISTRATION' || attempt.answered_at !== null) return 'nothing to send';
    await noteSendStarted(deps.db, requestId);
    const answer = await sendRegistration(gateway, attempt.request);
    if (answer.kind === 'retry') return retryOrThrow(answer, job);
    await recordRequestAnswer(deps.db, requestId, answer.kind === 'taken' ? { taken: true } : { taken: false, reason: answer.reason });
    return answer.kind;
  };
}

export const EVENTS_PAGE = 500;
/** Pages read per run at most; the next run goes on from the saved cursor. */
const MAX_PAGES_PER_RUN = 200;
/** An attempt marked this long ago and still unanswered with no job in Redis has lost its job: the poll re-creates it. */
const LOST_JOB_AFTER_MS = 60_000;

export interface EventsPollDeps extends RegistrationWorkerDeps {
  queues: Queues;
  /** Told the seconds from request to acceptance of each acceptance applied (the metrics' histogram). */
  observeAcceptance?: (seconds: readonly number[]) => void;
  /** Marks accounts' meter points and enqueues the attempts (the registration service's markAccounts). */
  markAccounts(accountIds: readonly string[]): Promise<{ marked: number; not_marked: number }>;
}

/** Accounts the sweep marks per run at most (automatic registration, register=true batches). */
const SWEEP_ACCOUNTS = 2_000;

/**
 * The registration-events queue's processor, run by a BullMQ job scheduler every REGISTRATION_POLL_MS:
 * re-creates the jobs of attempts whose job was lost (a deterministic id makes that a no-op for the
 * others), marks the accounts registered automatically (a supplier's --auto-register, a batch's
 * register=true) that are not yet, then, while any registration is open, reads the gateway's events a page at a time. Each
 * page is applied and its cursor saved in one transaction that first locks the cursor row (NOWAIT):
 * a second run at the same moment, in any process, finds it locked and stops, so two never interleave.
 */
export function createRegistrationEventsProcessor(deps: EventsPollDeps) {
  return async (): Promise<{ pages: number; applied: number; busy?: true }> => {
    const gateway = deps.gateway;
    if (!gateway) return { pages: 0, applied: 0 };
    const lost = await unansweredAttempts(deps.db, new Date(Date.now() - LOST_JOB_AFTER_MS), 1_000);
    await enqueueRegistrations(deps.queues, lost.map((requestId) => ({ requestId, kind: 'request' })));
    // Automatic registration (a supplier's, a register=true batch's): what was asked for and never marked.
    const awaiting = await accountsAwaitingRegistration(deps.db, SWEEP_ACCOUNTS);
    if (awaiting.length > 0) await deps.markAccounts(awaiting);
    if (!(await anyOpenRegistration(deps.db))) return { pages: 0, applied: 0 };
    let pages = 0;
    let applied = 0;
    for (; pages < MAX_PAGES_PER_RUN; ) {
      let full = false;
      let acceptedAfter: number[] = [];
      try {
        await deps.db.transaction().execute(async (trx) => {
          const { rows } = await sql<{ cursor: string | null }>`SELECT cursor FROM registration_cursor WHERE id = 1 FOR UPDATE NOWAIT`.execute(trx);
          const page = await readEvents(gateway, rows[0]?.cursor ?? null, EVENTS_PAGE);
          const done = await applyEventsPage(trx, page.events, page.cursor);
          applied += done.applied;
          acceptedAfter = done.acceptedAfterSeconds;
          if (done.unknown > 0) deps.log.warn({ unknown: done.unknown }, 'registration events for request ids this service never sent: kept, skipped');
          full = page.events.length >= EVENTS_PAGE;
        });
      } catch (err) {
        if ((err as { code?: string }).code === '55P03') return { pages, applied, busy: true };
        if (err instanceof GatewayUnavailable) {
          deps.log.warn({ err: err.message }, 'registration events not read this time');
          return { pages, applied };
        }
        throw err;
      }
      pages++;
      // Once the page has committed: an acceptance rolled back was never one.
      if (acceptedAfter.length > 0) deps.observeAcceptance?.(acceptedAfter);
      if (!full) break;
    }
    return { pages, applied };
  };
}

/** Installs (or updates) the poller's schedule; one scheduler id, so every process installs the same one. */
export async function scheduleRegistrationPolling(queues: Queues, pollMs: number): Promise<void> {
  await queues['registration-events'].upsertJobScheduler('registration-events', { every: pollMs }, { name: 'poll', data: {}, opts: { removeOnComplete: true, removeOnFail: { count: 100 } } });
}
