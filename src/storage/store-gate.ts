// When the time-series store may be used. Writes pass through the gate: a backup's instant holds
// new ones and waits for those under way (so every write is wholly before the instant or wholly
// after it). From the start of a time-series restore (its checks and unpacking, which take minutes
// for a large backup) writes, seals and catalog changes answer 503: they would be lost when the
// backup replaces the store. Queries go on until the ts folder is swapped, and answer 503 only
// while it is. Nothing else waits for a time-series restore (logins, metadata).

import { ServiceError } from '../../shared/errors.js';

export class StoreGate {
  /** Writes in the storage subsystem (from entry to their answer, forwards included). */
  private writesInFlight = 0;
  private readonly writesDrained: Array<() => void> = [];
  /** Set while new writes wait (a backup's instant); they go on when it resolves. */
  private held: { promise: Promise<void>; open: () => void } | null = null;
  private restoring = false;
  /** Restores under way (from their first check to their end): changes to the store would be lost. */
  private replacing = 0;

  /** 503 while a restore replaces the ts folder. */
  refuseWhileRestoring(): void {
    if (this.restoring) throw restoreRunning();
  }

  /** 503 for a change to the time series (a write, a seal, a catalog change) while a restore is under way. */
  refuseChanges(): void {
    if (this.restoring || this.replacing > 0) throw restoreRunning();
  }

  /** A restore begins: changes answer 503 until the returned function is called (once). */
  beginReplacing(): () => void {
    this.replacing++;
    let ended = false;
    return () => {
      if (!ended) this.replacing--;
      ended = true;
    };
  }

  /** A write enters (after any hold); it must `leave` once answered. */
  async enter(): Promise<void> {
    while (this.held) await this.held.promise;
    this.writesInFlight++;
  }

  leave(): void {
    if (--this.writesInFlight === 0) for (const wake of this.writesDrained.splice(0)) wake();
  }

  /** Holds new writes and waits for the ones under way to be answered; the returned function lets writes go on. */
  async hold(): Promise<() => void> {
    let open!: () => void;
    const promise = new Promise<void>((resolve) => (open = resolve));
    const held = { promise, open };
    while (this.held) await this.held.promise;
    this.held = held;
    if (this.writesInFlight > 0) await new Promise<void>((resolve) => this.writesDrained.push(resolve));
    return () => {
      if (this.held === held) this.held = null;
      open();
    };
  }

  /** Runs `work` with writes held and everything else refused (a restore's swap). */
  async exclusively<T>(work: () => Promise<T>): Promise<T> {
    this.refuseWhileRestoring();
    const resume = await this.hold();
    this.restoring = true;
    try {
      return await work();
    } finally {
      this.restoring = false;
      resume();
    }
  }
}

function restoreRunning(): ServiceError {
  return new ServiceError('UNAVAILABLE', 'a time-series restore is running; retry when it has finished', { headers: { 'retry-after': '5' } });
}
