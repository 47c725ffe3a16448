// 507 while free space on the data volume is under storage.minFreeBytes, for every path that adds
// data: writes of every mode and route, collection creates and updates, blob and attachment
// uploads. A volume whose free space cannot be read counts as full: writing blind onto it is how
// a disk fills up.
//
// statfs runs at most once a second (a request never pays a syscall), so between two reads the
// bytes accepted are reserved here: a write is refused when the free space last read, less what
// was accepted since, less its own size, would go under the floor. A burst inside one second thus
// stops at the floor instead of running into ENOSPC. Bytes accepted in the second before a read
// still count after it: a storage worker may hold them in its buffer (storage.flushIntervalMs)
// until after that read. A writer that knows when its bytes are on disk (a blob upload, fsynced)
// holds them instead (reserve) and gives them back once they are (release), which reads statfs
// again, so they are counted neither twice nor not at all.

import fs from 'node:fs';
import type { Logger } from '../log.js';
import { ServiceError } from '../../shared/errors.js';

const REFRESH_MS = 1000;

export class DiskGuard {
  private checkedAt = 0;
  /** Free bytes at the last statfs. */
  private free = 0;
  /** Bytes accepted since the last statfs, and in the period before it. */
  private reservedNow = 0;
  private reservedBefore = 0;
  /** Bytes held by writers that release them themselves (reserve/release). */
  private held = 0;
  /** Why the free space could not be read at the last check, or null. */
  private unknown: string | null = null;

  constructor(
    private readonly dataDir: string,
    private readonly minFreeBytes: number,
    private readonly log: Logger,
  ) {}

  /**
   * Throws 507 while writes must be refused, or when `bytes` more would take the volume under the
   * floor; otherwise counts `bytes` as taken until the free space has been read twice more.
   */
  check(bytes = 0): void {
    this.refuseBeyond(bytes);
    this.reservedNow += bytes;
  }

  /** As check, but the bytes stay taken until release (not only until the next reads of statfs). */
  reserve(bytes: number): void {
    this.refuseBeyond(bytes);
    this.held += bytes;
  }

  /** Gives back bytes of reserve once they are on disk (or were never written), and reads statfs again. */
  release(bytes: number): void {
    this.held = Math.max(0, this.held - bytes);
    this.read();
  }

  private refuseBeyond(bytes: number): void {
    this.refresh();
    if (this.unknown !== null) {
      throw new ServiceError('INSUFFICIENT_STORAGE', 'the free space of the data volume cannot be read; writes are refused until it can (storage.minFreeBytes), reads go on');
    }
    if (this.free - this.reservedNow - this.reservedBefore - this.held - bytes < this.minFreeBytes) {
      throw new ServiceError('INSUFFICIENT_STORAGE', `free disk space is below storage.minFreeBytes (${this.minFreeBytes} bytes); writes are refused, reads go on`);
    }
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

  private refresh(): void {
    const now = Date.now();
    if (now - this.checkedAt <= REFRESH_MS) return;
    this.checkedAt = now;
    this.reservedBefore = this.reservedNow;
    this.reservedNow = 0;
    this.read();
  }

  private read(): void {
    try {
      const stats = fs.statfsSync(this.dataDir);
      this.free = stats.bavail * stats.bsize;
      this.unknown = null;
    } catch (err) {
      if (this.unknown === null) this.log.error({ err: String(err), dataDir: this.dataDir }, 'cannot read the free space of the data volume; refusing writes until it can be read');
      this.unknown = String((err as Error)?.message ?? err);
    }
  }
}
