/** Polls `fn` until it returns a truthy value or the deadline passes: waiting without sleeping blind. */
export async function pollUntil<T>(fn: () => Promise<T>, opts: { timeoutMs?: number; intervalMs?: number; what?: string } = {}): Promise<NonNullable<T>> {
  const deadline = Date.now() + (opts.timeoutMs ?? 10_000);
  let last: T | undefined;
  for (;;) {
    last = await fn();
    if (last) return last as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${opts.what ?? 'condition'} (last: ${JSON.stringify(last)})`);
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 25));
  }
}
