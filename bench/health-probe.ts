// Main-thread responsiveness probe: GET /ingest/health (or another cheap route,
// such as /svcapi/health) every 10 ms on its own connection. It runs in a worker
// thread so the benchmark's own body encoding (which blocks the main thread for
// milliseconds) is not counted as server latency.

import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { startWorkerLoop } from './worker-loop.js';
import { HttpsClient } from './service.js';

interface ProbeData {
  port: number;
  ca: string;
  intervalMs: number;
  path: string;
}

export interface ProbeResult {
  latencies: number[];
  failures: string[];
}

/** Starts the probe; `stop()` ends it and hands back every latency (ms). */
export function startHealthProbe(port: number, ca: string, intervalMs = 10, path = '/ingest/health'): { stop(): Promise<ProbeResult> } {
  return startWorkerLoop<ProbeResult>(new URL(import.meta.url), { port, ca, intervalMs, path } satisfies ProbeData);
}

async function probe({ port, ca, intervalMs, path }: ProbeData): Promise<void> {
  const client = new HttpsClient(port, ca, 1);
  let stopping = false;
  parentPort!.once('message', () => {
    stopping = true;
  });
  const latencies: number[] = [];
  const failures: string[] = [];
  while (!stopping) {
    const start = performance.now();
    try {
      const reply = await client.get(path);
      if (reply.status === 200) latencies.push(reply.ms);
      else failures.push(`HTTP ${reply.status}: ${reply.body.subarray(0, 200).toString()}`);
    } catch (err) {
      failures.push(err instanceof Error ? err.message : String(err));
    }
    const wait = intervalMs - (performance.now() - start);
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  }
  client.close();
  parentPort!.postMessage({ latencies, failures: failures.slice(0, 20) } satisfies ProbeResult);
}

if (!isMainThread && (workerData as ProbeData | undefined)?.intervalMs) void probe(workerData as ProbeData);
