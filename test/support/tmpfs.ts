// A real, small, fillable volume for full-disk tests: a tmpfs mounted in a temp folder (the
// tests run as root). Whoever mounts one unmounts it in an after hook, whatever happened.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface Volume {
  /** The mount point (use it as the data dir: the harness keeps its settings file beside it, off the volume). */
  readonly dir: string;
  /** Free bytes for an unprivileged writer now. */
  free(): number;
  /** Writes a filler file until at most `leaveBytes` are free (0: until ENOSPC). */
  fill(leaveBytes: number, name?: string): void;
  /** Unmounts and removes the temp folder; safe to call twice. */
  unmount(): void;
}

export function mountTmpfs(sizeBytes: number): Volume {
  const parent = fs.mkdtempSync(path.join(os.tmpdir(), 'historian-volume-'));
  const dir = path.join(parent, 'data');
  fs.mkdirSync(dir);
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeBytes},mode=0700`, 'tmpfs', dir]);
  let mounted = true;
  const free = () => {
    const stats = fs.statfsSync(dir);
    return stats.bavail * stats.bsize;
  };
  return {
    dir,
    free,
    fill(leaveBytes, name = 'filler') {
      const fd = fs.openSync(path.join(dir, name), 'a');
      const block = Buffer.alloc(1024 * 1024, 0x5a);
      try {
        for (let left = free() - leaveBytes; left > 0; left = free() - leaveBytes) {
          fs.writeSync(fd, block, 0, Math.min(block.length, left));
        }
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
      } finally {
        fs.closeSync(fd);
      }
    },
    unmount() {
      if (!mounted) return;
      mounted = false;
      execFileSync('umount', ['-l', dir]);
      fs.rmSync(parent, { recursive: true, force: true });
    },
  };
}

/** An after hook's body: the service on the volume is killed, then the volume unmounted, whatever happens. */
export async function releaseVolume(service: { stop(signal: NodeJS.Signals): Promise<unknown> } | undefined, volume: Volume | undefined): Promise<void> {
  try {
    await service?.stop('SIGKILL');
  } finally {
    volume?.unmount();
  }
}
