/**
 * Undo steps registered as resources are created, run once in reverse order: at the end of a run,
 * on failure, and on SIGINT/SIGTERM. Each step runs even when an earlier one fails. A resource
 * created once cleanup has begun (an interrupted scenario still unwinding) is released at once.
 */
type Step = { what: string; run: () => Promise<void> | void };

const steps: Step[] = [];
let running: Promise<void> | undefined;

const report = (what: string, err: unknown) => console.error(`cleanup: ${what} failed: ${err instanceof Error ? err.message : String(err)}`);

export function onCleanup(what: string, run: Step['run']): void {
  if (running) {
    void (async () => run())().catch((err: unknown) => report(what, err));
    return;
  }
  steps.push({ what, run });
}

/** True once cleanup has begun: scenarios not yet started are skipped. */
export const isCleaningUp = (): boolean => running !== undefined;

export function cleanup(): Promise<void> {
  running ??= (async () => {
    while (steps.length > 0) {
      const step = steps.pop()!;
      try {
        await step.run();
      } catch (err) {
        report(step.what, err);
      }
    }
  })();
  return running;
}

/**
 * Cleans up and exits on Ctrl-C or a kill (a second signal exits at once). While cleaning up, the
 * interrupted scenario keeps unwinding and may throw as its connections go away: that is logged,
 * never allowed to stop the cleanup halfway. An error outside cleanup cleans up and exits 1.
 */
export function installSignalHandlers(): void {
  let signalled = false;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (signalled) process.exit(130);
      signalled = true;
      console.error(`\n${signal}: cleaning up (again to exit at once)`);
      void cleanup().finally(() => process.exit(130));
    });
  }
  const fatal = (err: unknown) => {
    if (running) {
      console.error(`(while cleaning up) ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    console.error(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    void cleanup().finally(() => process.exit(1));
  };
  process.on('uncaughtException', fatal);
  process.on('unhandledRejection', fatal);
}
