// A measuring loop that runs in a worker thread of its own (so the benchmark's main thread,
// busy encoding bodies, is not counted as server latency): started with its data, stopped by a
// message, it answers its result once.

import { Worker } from 'node:worker_threads';

/** Starts `moduleUrl` as a worker with `data`; `stop()` asks it to end and resolves with what it posts back. */
export function startWorkerLoop<Result>(moduleUrl: URL, data: unknown): { stop(): Promise<Result> } {
  const worker = new Worker(moduleUrl, { workerData: data });
  const result = new Promise<Result>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  return {
    stop() {
      worker.postMessage('stop');
      return result;
    },
  };
}
