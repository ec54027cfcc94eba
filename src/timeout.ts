/**
 * Waits for `work` at most `ms`: true when it settled successfully in time, false when it failed or
 * the time ran out. The timer is cleared either way, so it never keeps a process alive.
 */
export async function within(ms: number, work: Promise<unknown>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([work.then(() => true, () => false), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
