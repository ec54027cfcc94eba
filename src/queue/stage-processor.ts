import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import DataLoader from 'dataloader';
import type { Member, MemberOutcome, Pipeline, StageOutcome } from '../pipeline/pipeline.js';
import type { Stage, StageJobData } from './contract.js';

export type { StageOutcome };

export interface StageProcessorOptions {
  /** The most jobs run as one set. */
  setSize: number;
  /** How long a set waits for more jobs after its first. */
  setWaitMs: number;
  /** Called with how long each job took (metrics). */
  observe?: (stage: Stage, outcome: 'completed' | 'failed' | 'delayed', seconds: number) => void;
}

/**
 * The BullMQ processor of one stage's queue: a thin adapter. Each job is still its own (operators
 * see and retry accounts on the dashboard), but the jobs a worker holds at once are collected for a
 * few milliseconds and handed to the pipeline as one set; each job then ends with its own outcome.
 */
export function createStageProcessor(pipeline: Pipeline, stage: Stage, opts: StageProcessorOptions) {
  const sets = new DataLoader<Member, MemberOutcome, string>((members) => pipeline.runSet(stage, members), {
    cache: false,
    maxBatchSize: opts.setSize,
    batchScheduleFn: (run) => setTimeout(run, opts.setWaitMs),
  });

  return async (job: Job<StageJobData>, token?: string): Promise<StageOutcome> => {
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    const { batchId, line, round } = job.data;
    const attempt = job.attemptsMade + 1;
    const outcome = await sets.load({ batchId, line, round, attempt, lastAttempt: attempt >= (job.opts.attempts ?? 1) });
    switch (outcome.kind) {
      case 'done':
        opts.observe?.(stage, 'completed', seconds());
        return outcome.result;
      case 'delay':
        // Waits (for a permit, or its window) without spending an attempt.
        await job.moveToDelayed(outcome.until, token);
        opts.observe?.(stage, 'delayed', seconds());
        throw new DelayedError();
      case 'invalid':
        opts.observe?.(stage, 'failed', seconds());
        throw new UnrecoverableError(`${outcome.error.code}: ${outcome.error.detail}`);
      case 'retry':
        opts.observe?.(stage, 'failed', seconds());
        throw outcome.error;
    }
  };
}
