// 507 while free space on the data volume is under storage.minFreeBytes (checked at most once a
// second), for every path that adds data: writes of every mode and route, and collection
// creates and updates. A volume whose free space cannot be read counts as full: writing blind
// onto it is how a disk fills up.

import fs from 'node:fs';
import type { Logger } from '../log.js';
import { ServiceError } from '../../shared/errors.js';

export class DiskGuard {
  private checkedAt = 0;
  private low = false;
  /** Why the free space could not be read at the last check, or null. */
  private unknown: string | null = null;

  constructor(
    private readonly dataDir: string,
    private readonly minFreeBytes: number,
    private readonly log: Logger,
  ) {}

  /** Throws 507 while writes must be refused. */
  check(): void {
    const now = Date.now();
    if (now - this.checkedAt > 1000) {
      this.checkedAt = now;
      try {
        const stats = fs.statfsSync(this.dataDir);
        this.low = stats.bavail * stats.bsize < this.minFreeBytes;
        this.unknown = null;
      } catch (err) {
        this.low = true;
        if (this.unknown === null) this.log.error({ err: String(err), dataDir: this.dataDir }, 'cannot read the free space of the data volume; refusing writes until it can be read');
        this.unknown = String((err as Error)?.message ?? err);
      }
    }
    if (this.unknown !== null) {
      throw new ServiceError('INSUFFICIENT_STORAGE', 'the free space of the data volume cannot be read; writes are refused until it can (storage.minFreeBytes), reads go on');
    }
    if (this.low) throw new ServiceError('INSUFFICIENT_STORAGE', `free disk space is below storage.minFreeBytes (${this.minFreeBytes} bytes); writes are refused, reads go on`);
  }

  /** Free bytes on the data volume now (for GET /metrics), or null when they cannot be read. */
  freeBytes(): number | null {
    try {
      const stats = fs.statfsSync(this.dataDir);
      return stats.bavail * stats.bsize;
    } catch {
      return null;
    }
  }

  /** Why writes are refused now, or null. */
  problem(): string | null {
    try {
      this.check();
      return null;
    } catch (err) {
      return (err as Error).message;
    }
  }
}
