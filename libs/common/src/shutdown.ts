/**
 * Waits for `work` (a drain) at most `deadlineMs`; says which came first. The caller decides what
 * a missed deadline means (each service's main.ts owns its process and signals).
 */
export async function drainWithin(work: Promise<unknown>, deadlineMs: number): Promise<'drained' | 'deadline'> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'deadline'>((resolve) => {
    timer = setTimeout(() => resolve('deadline'), deadlineMs);
    timer.unref();
  });
  try {
    return await Promise.race([work.then(() => 'drained' as const), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs `task` every `intervalMs` (and once now), never two at once; a failure is reported, not thrown. */
export function every(intervalMs: number, task: () => Promise<unknown>, onError: (err: unknown) => void): { stop(): void } {
  let running = false;
  const tick = () => {
    if (running) return;
    running = true;
    void task()
      .catch(onError)
      .finally(() => (running = false));
  };
  const timer = setInterval(tick, intervalMs);
  timer.unref();
  tick();
  return { stop: () => clearInterval(timer) };
}
