import { describe, expect, it } from 'vitest';
import type { BatchState } from '../../src/db/database.js';
import { duration, Pace } from '../../src/cli/cohort-commands.js';

// The upload's pace: accounts per second over the last half-minute, counting each stage an account
// has passed as a quarter of it, and the time left at that pace.
const counts = (completed: number, failed = 0) => ({ waiting: 0, active: 0, delayed: 0, completed, failed });
const status = (perStage: [number, number, number, number], state: BatchState = 'RUNNING', total = 1000, cancelled = 0) => ({
  state,
  total_items: total,
  cancelled,
  stages: { validate: counts(perStage[0]), stage: counts(perStage[1]), process: counts(perStage[2]), extras: counts(perStage[3]) },
});

describe('Pace', () => {
  it('says nothing until progress between two polls, then the rate and the time left at it', () => {
    let now = 0;
    const pace = new Pace(() => now);
    expect(pace.note(status([0, 0, 0, 0]))).toBe('');
    now = 2_000;
    expect(pace.note(status([0, 0, 0, 0]))).toBe('');
    now = 10_000;
    // 400 stage-steps in 10 s: 100 accounts' worth, 10 a second; 900 left: 90 s.
    expect(pace.note(status([100, 100, 100, 100]))).toBe('10 accounts/s, about 1m 30s left');
  });

  it('counts a batch filling its pipeline, not only finished accounts', () => {
    let now = 0;
    const pace = new Pace(() => now);
    pace.note(status([0, 0, 0, 0]));
    now = 10_000;
    // Validate far ahead, nothing finished yet: still 50 accounts' worth of work in 10 s.
    expect(pace.note(status([150, 40, 10, 0]))).toBe('5.0 accounts/s, about 3m 10s left');
  });

  it('follows the last half-minute, not the whole run', () => {
    let now = 0;
    const pace = new Pace(() => now);
    pace.note(status([0, 0, 0, 0], 'RUNNING', 100_000));
    now = 60_000;
    pace.note(status([600, 600, 600, 600], 'RUNNING', 100_000)); // 10/s for the first minute
    now = 90_000;
    // The window now starts at 60 s: 1,200 in 30 s is 40/s; 98,200 left: 2,455 s.
    expect(pace.note(status([1_800, 1_800, 1_800, 1_800], 'RUNNING', 100_000))).toBe('40 accounts/s, about 40m 55s left');
  });

  it('says nothing once the batch has ended', () => {
    let now = 0;
    const pace = new Pace(() => now);
    pace.note(status([0, 0, 0, 0]));
    now = 5_000;
    expect(pace.note(status([1000, 1000, 1000, 1000], 'COMPLETED'))).toBe('');
  });

  it('formats durations as an operator reads them', () => {
    expect([duration(0), duration(0.2), duration(59), duration(60), duration(75), duration(3_599), duration(3_600), duration(3_720), duration(90_000)]).toEqual([
      '0s',
      '1s',
      '59s',
      '1m 0s',
      '1m 15s',
      '59m 59s',
      '1h 0m',
      '1h 2m',
      '25h 0m',
    ]);
  });
});
