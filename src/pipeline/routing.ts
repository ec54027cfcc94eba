import type { ItemStage } from '../db/database.js';

// Where an account goes next. The pipeline runs each account through these stages, one BullMQ job
// per account per stage; a dry run does stage, process and extras together, in one rolled-back step.

export const STAGES = ['validate', 'stage', 'process', 'extras'] as const;
export type Stage = (typeof STAGES)[number];

/** A stage job: identifiers only; the bundle lives in PostgreSQL (batch_items), so Redis stays small. */
export interface StageJobData {
  batchId: string;
  line: number;
  /** The item's retry round: part of the job id, so a retried item gets a fresh job. */
  round: number;
}

/** The stage after `stage` in a normal (not dry-run) batch, or null after the last. */
export const nextStage = (stage: Stage): Stage | null => STAGES[STAGES.indexOf(stage) + 1] ?? null;

/** The stage an item goes to after a step of `stage` in this batch (null: it is done). */
export const nextStageOf = (stage: Stage, dryRun: boolean): Stage | null => (dryRun ? (stage === 'validate' ? 'process' : null) : nextStage(stage));

/** The queue that runs an item at `stage`: a dry run's stage, process and extras all run in the process queue. */
export const queueForStage = (stage: ItemStage, dryRun: boolean): Stage =>
  stage === 'parse' || stage === 'validate' ? 'validate' : dryRun ? 'process' : stage;

/** Deterministic: enqueueing the same stage of the same item in the same round twice is harmless. */
export const stageJobId = (stage: Stage, d: StageJobData): string => `${d.batchId}.${d.line}.${stage}.${d.round}`;
