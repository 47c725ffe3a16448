// The one metadata event source: what changed the metadata store other than a write through the
// entity store (whose own hooks, EntityHooks, see every row inside its transaction). Caches that
// mirror tables (accounts, the tag-to-scope map the workers read, the monitor's rules, the
// notification streams' grants, the process log) subscribe here; the code that changes the store
// wholesale (a restore, a cluster snapshot) or row by row from elsewhere (the cluster's applier)
// only emits, and never needs to know which caches exist.

import { Signal } from '../signal.js';

/** Rows a replicated change wrote, by table. */
export interface TablesChanged {
  readonly tables: ReadonlySet<string>;
  /** Primary keys of inserted rows, for the tables whose new rows someone acts on (notifications are fanned out). */
  readonly inserted: ReadonlyMap<string, readonly unknown[]>;
}

export class MetaEvents {
  /**
   * The store is about to be replaced, in this same turn of the event loop: whoever keeps
   * state that belongs to the old store writes it down or lets it go now.
   */
  readonly replacing = new Signal<[]>();
  /** The store was replaced (a restore, a cluster snapshot): these tables hold other rows now. */
  readonly replaced = new Signal<[tables: ReadonlySet<string>]>();
  /** Rows of these tables were changed by a replicated change (outside the entity store). */
  readonly tablesChanged = new Signal<[change: TablesChanged]>();
}
