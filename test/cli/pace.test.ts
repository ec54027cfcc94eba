import { describe, expect, it } from 'vitest';
import type { BatchState } from '../../src/db/database.js';
import { duration, Pace } from '../../src/cli/cohort-commands.js';

// The upload's pace line: accounts finished per second over the last half-minute, and the time left.
describe('Pace', () => {
  const status = (done: number, state: BatchState = 'RUNNING', total = 1000) => ({ state, succeeded: done - 10 > 0 ? done - 10 : 0, failed: Math.min(done, 10), cancelled: 0, total_items: total });

  it('says nothing until items finish between two polls, then the rate and the time left at it', () => {
    let now = 0;
    const pace = new Pace(() => now);
    expect(pace.note(status(0))).toBe('');
    now = 2_000;
    expect(pace.note(status(0))).toBe('');
    now = 10_000;
    // 100 finished in 10 s: 10 a second, 900 left: 90 s.
    expect(pace.note(status(100))).toBe('10 accounts/s, about 1m 30s left');
  });

  it('follows the last half-minute, not the whole run', () => {
    let now = 0;
    const pace = new Pace(() => now);
    pace.note(status(0, 'RUNNING', 100_000));
    now = 60_000;
    pace.note(status(600, 'RUNNING', 100_000)); // 10/s for the first minute
    now = 90_000;
    // The window now starts at 60 s: 1,200 in 30 s is 40/s; 98,200 left: 2,455 s.
    expect(pace.note(status(1_800, 'RUNNING', 100_000))).toBe('40 accounts/s, about 40m 55s left');
  });

  it('says nothing once the batch has ended', () => {
    let now = 0;
    const pace = new Pace(() => now);
    pace.note(status(0));
    now = 5_000;
    expect(pace.note(status(1000, 'COMPLETED'))).toBe('');
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
