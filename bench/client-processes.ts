// The parent's side of the bench client processes (notification fan-out, live data): ask one a
// question over its IPC channel and wait for its answer of a given kind.

import type { ChildProcess } from 'node:child_process';

/** Sends `message` to `child` and resolves with its next message whose `op` is `op`; rejects if it exits first. */
export function ask<From extends { op: string }, Op extends From['op']>(child: ChildProcess, message: unknown, op: Op): Promise<Extract<From, { op: Op }>> {
  return new Promise((resolve, reject) => {
    const onMessage = (reply: From) => {
      if (reply.op !== op) return;
      child.off('message', onMessage);
      child.off('exit', onExit);
      resolve(reply as Extract<From, { op: Op }>);
    };
    const onExit = (code: number | null) => reject(new Error(`client process exited (${code}) while waiting for "${op}"`));
    child.on('message', onMessage);
    child.once('exit', onExit);
    child.send(message as never);
  });
}

/** The CPU a client process has used, in seconds (its answer to `{op: 'cpu'}`). */
export function cpuAnswer(): { op: 'cpu'; seconds: number } {
  const usage = process.cpuUsage();
  return { op: 'cpu', seconds: (usage.user + usage.system) / 1e6 };
}
