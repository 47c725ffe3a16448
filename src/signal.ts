// A typed event source: how one part of the service tells the others that something happened
// (points written that someone watches, the metadata store replaced, this node leading) without
// knowing who listens, and without anyone assigning a callback into another object's field.
// Listeners run synchronously in the order they subscribed; one that throws does not keep the
// others from running, and the first error is thrown to the emitter once all have run.

export class Signal<Args extends unknown[]> {
  private listeners: ReadonlyArray<(...args: Args) => void> = [];

  /** Calls `listener` on every emit from now on; the returned function unsubscribes it. */
  subscribe(listener: (...args: Args) => void): () => void {
    this.listeners = [...this.listeners, listener];
    return () => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    };
  }

  /** Whether anyone listens (an emitter may skip building what nobody would receive). */
  get observed(): boolean {
    return this.listeners.length > 0;
  }

  emit(...args: Args): void {
    let failure: unknown = null;
    let failed = false;
    // The array is replaced, never changed, on (un)subscribe: a listener that unsubscribes itself is safe.
    for (const listener of this.listeners) {
      try {
        listener(...args);
      } catch (err) {
        if (!failed) {
          failed = true;
          failure = err;
        }
      }
    }
    if (failed) throw failure;
  }
}
