// 507 while free space on the data volume is under storage.minFreeBytes, for every path that adds
// data: writes of every mode and route, collection creates and updates, blob and attachment
// uploads. A volume whose free space cannot be read counts as full: writing blind onto it is how
// a disk fills up.
//
// statfs runs at most once a second (a request never pays a syscall), so the bytes of writes
// accepted in between are accounted for here: a write is refused when the free space last read,
// less what is accounted for, less its own size, would go under the floor. A burst inside one
// second thus stops at the floor instead of running into ENOSPC. Accounted for are:
// - bytes held (reserve) by writes under way, until they end;
// - bytes of writes that ended on disk (`sync` writes), until the next read of statfs sees them;
// - bytes of writes that ended in a storage worker's buffer (`fast`, `buffered`), until the read
//   after that: the worker writes them within storage.flushIntervalMs, maybe after the next read.
// A blob upload, fsynced when it ends, gives its bytes back with release, which reads statfs at
// once (one read per upload, not per request). A refusal is confirmed by a fresh read (at most
// ten a second), so bytes counted both in statfs and here do not refuse writes that fit.

import fs from 'node:fs';
import type { Logger } from '../log.js';
import { ServiceError } from '../../shared/errors.js';

const REFRESH_MS = 1000;
/** How old the last read may be for a refusal to stand without reading again. */
const CONFIRM_MS = 100;

export class DiskGuard {
  private checkedAt = 0;
  private readAt = 0;
  /** Free bytes at the last statfs. */
  private free = 0;
  /** Bytes of writes under way. */
  private held = 0;
  /** Bytes written since the last statfs. */
  private onDisk = 0;
  /** Bytes left in worker buffers since the last statfs, and in the period before it. */
  private bufferedNow = 0;
  private bufferedBefore = 0;
  /** Why the free space could not be read at the last check, or null. */
  private unknown: string | null = null;

  constructor(
    private readonly dataDir: string,
    private readonly minFreeBytes: number,
    private readonly log: Logger,
  ) {}

  /** Throws 507 while writes must be refused (collection creates and updates: a few bytes). */
  check(): void {
    this.refuseBeyond(0);
  }

  /** Throws 507 when `bytes` more would take the volume under the floor; otherwise holds them until written or release. */
  reserve(bytes: number): void {
    this.refuseBeyond(bytes);
    this.held += bytes;
  }

  /** A write of `bytes` reserved before has ended: on disk (`onDisk`), or in a worker's buffer. */
  written(bytes: number, onDisk: boolean): void {
    this.held = Math.max(0, this.held - bytes);
    if (onDisk) this.onDisk += bytes;
    else this.bufferedNow += bytes;
  }

  /** Gives back reserved bytes that are on disk now (fsynced) or will never be written, and reads statfs again. */
  release(bytes: number): void {
    this.held = Math.max(0, this.held - bytes);
    this.read();
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

  private refuseBeyond(bytes: number): void {
    const now = Date.now();
    if (now - this.checkedAt > REFRESH_MS) {
      this.checkedAt = now;
      this.bufferedBefore = this.bufferedNow;
      this.bufferedNow = 0;
      this.read();
    }
    if (this.unknown === null && this.fits(bytes)) return;
    if (this.unknown === null && Date.now() - this.readAt > CONFIRM_MS) {
      this.read();
      if (this.unknown === null && this.fits(bytes)) return;
    }
    if (this.unknown !== null) {
      throw new ServiceError('INSUFFICIENT_STORAGE', 'the free space of the data volume cannot be read; writes are refused until it can (storage.minFreeBytes), reads go on');
    }
    throw new ServiceError('INSUFFICIENT_STORAGE', `free disk space is below storage.minFreeBytes (${this.minFreeBytes} bytes); writes are refused, reads go on`);
  }

  private fits(bytes: number): boolean {
    return this.free - this.held - this.onDisk - this.bufferedNow - this.bufferedBefore - bytes >= this.minFreeBytes;
  }

  /** Reads statfs: what was written before now is in it. */
  private read(): void {
    this.readAt = Date.now();
    try {
      const stats = fs.statfsSync(this.dataDir);
      this.free = stats.bavail * stats.bsize;
      this.onDisk = 0;
      this.unknown = null;
    } catch (err) {
      if (this.unknown === null) this.log.error({ err: String(err), dataDir: this.dataDir }, 'cannot read the free space of the data volume; refusing writes until it can be read');
      this.unknown = String((err as Error)?.message ?? err);
    }
  }
}
