// Keeping a page's data fresh: a task that runs now, then again every `everyMs`, never two at
// once (a slow service must not pile up requests), and sooner when something says the data
// changed (`soon`, debounced so a burst of notifications costs one reload). `stop()` ends the
// timer and aborts the run in flight, so a page that is left makes no more calls.

export interface Repeater {
  /** Runs the task after `delayMs` (or right after the run in flight), unless a run is already due sooner. */
  soon(delayMs?: number): void;
  /** Runs the task as soon as possible; resolves once a run that started after this call has ended. */
  now(): Promise<void>;
  stop(): void;
}

export function repeat(task: (signal: AbortSignal) => Promise<void>, everyMs: number): Repeater {
  let timer: ReturnType<typeof setTimeout> | null = null;
  let dueAt = Infinity;
  let running: AbortController | null = null;
  let again = false;
  let stopped = false;
  /** Callers of now() waiting for the next run to start, then end. */
  let waiting: Array<() => void> = [];

  const schedule = (delayMs: number) => {
    if (stopped) return;
    const at = Date.now() + delayMs;
    if (timer !== null && dueAt <= at) return;
    if (timer !== null) clearTimeout(timer);
    dueAt = at;
    timer = setTimeout(run, delayMs);
  };

  const run = () => {
    timer = null;
    dueAt = Infinity;
    if (stopped) return;
    if (running) { again = true; return; }
    const controller = new AbortController();
    const waiters = waiting;
    waiting = [];
    running = controller;
    void task(controller.signal).catch(() => { /* the task shows its own errors */ }).finally(() => {
      running = null;
      for (const resolve of waiters) resolve();
      if (stopped) return;
      if (again) { again = false; schedule(0); } else schedule(everyMs);
    });
  };

  schedule(0);
  return {
    soon: (delayMs = 0) => schedule(delayMs),
    now: () => new Promise<void>((resolve) => {
      if (stopped) return resolve();
      waiting.push(resolve);
      schedule(0);
    }),
    stop: () => {
      stopped = true;
      if (timer !== null) clearTimeout(timer);
      running?.abort();
      for (const resolve of waiting) resolve();
      waiting = [];
    },
  };
}
