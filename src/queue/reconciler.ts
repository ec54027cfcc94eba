import type { Logger } from '../log.js';

export interface ReconcileOutcome {
  batches: number;
  openItems: number;
  jobsRecreated: number;
}

/**
 * Re-creates the jobs of open batch items that Redis lost: once now, in the background (a process
 * serves and works while it runs), and again each time Redis is reachable after a loss, since
 * whatever Redis held may be gone. Runs never overlap: a reconnect during a run asks for one more
 * run after it. Never throws: a failed run is logged and waits for the next reconnect (or restart).
 */
export function startReconciling(opts: { log: Logger; onRedisReconnect: (fn: () => void) => void; reconcile: () => Promise<ReconcileOutcome> }): void {
  let running = false;
  let again = false;
  const run = (): void => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    opts
      .reconcile()
      .then((r) => {
        if (r.jobsRecreated > 0) opts.log.info(r, 'reconciled open batch items: re-created the jobs Redis had lost');
      })
      .catch((err: unknown) => opts.log.warn({ err }, 'could not reconcile open batch items; trying again when Redis is back'))
      .finally(() => {
        running = false;
        if (again) {
          again = false;
          run();
        }
      });
  };
  run();
  opts.onRedisReconnect(run);
}
