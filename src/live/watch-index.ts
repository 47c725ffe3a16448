// Which subscriptions watch which tags, and what the storage workers are told of it.
//
// Tags are counted by subscriber: the worker owning a collection is told only the tags that
// gain their first subscriber or lose their last one (a delta), so a subscription costs the
// worker its own tags, never the collection's whole watched list again (that made each
// subscribe slower than the one before, and the messages grow with every socket).

import type { Logger } from '../log.js';
import type { LiveFeed } from '../storage/api.js';

export class WatchIndex<Sub> {
  /** collection → tag → subscriptions. */
  private readonly watched = new Map<string, Map<string, Set<Sub>>>();
  /** Per collection, the last update sent to its worker and not answered yet. */
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Tag names sent to the workers in watch updates (added or removed), for GET /metrics. */
  tagsSent = 0;

  constructor(private readonly feed: LiveFeed, private readonly log: Logger) {}

  /** The watched tags of a collection and their subscribers, or undefined when nobody watches it. */
  of(collectionId: string): ReadonlyMap<string, ReadonlySet<Sub>> | undefined {
    return this.watched.get(collectionId);
  }

  /**
   * Indexes `sub` under its tags; resolves once the worker watches all of them (those it
   * already watched included: an update sent before for another subscription is waited for).
   */
  async add(sub: Sub, collectionId: string, tags: Iterable<string>): Promise<void> {
    let byTag = this.watched.get(collectionId);
    if (!byTag) this.watched.set(collectionId, (byTag = new Map()));
    const added: string[] = [];
    for (const tag of tags) {
      let subs = byTag.get(tag);
      if (!subs) {
        byTag.set(tag, (subs = new Set()));
        added.push(tag);
      }
      subs.add(sub);
    }
    // The worker takes updates in the order sent: once this one is answered, every earlier one is applied.
    if (added.length > 0) await this.send(collectionId, added, []);
    else await this.inFlight.get(collectionId);
  }

  /** Removes `sub` from the index; the worker forgets the tags nobody watches any more. */
  remove(sub: Sub, collectionId: string, tags: Iterable<string>): void {
    const byTag = this.watched.get(collectionId);
    if (!byTag) return;
    const removed: string[] = [];
    for (const tag of tags) {
      const subs = byTag.get(tag);
      if (!subs?.delete(sub) || subs.size > 0) continue;
      byTag.delete(tag);
      removed.push(tag);
    }
    if (byTag.size === 0) this.watched.delete(collectionId);
    if (removed.length > 0) {
      this.send(collectionId, [], removed).catch((err) => this.log.warn({ err: String(err), collection: collectionId }, 'live watch could not be updated'));
    }
  }

  private send(collectionId: string, add: string[], remove: string[]): Promise<void> {
    this.tagsSent += add.length + remove.length;
    const sent = this.feed.watch(collectionId, add, remove);
    const settled = sent.then(
      () => undefined,
      () => undefined,
    );
    this.inFlight.set(collectionId, settled);
    void settled.then(() => {
      if (this.inFlight.get(collectionId) === settled) this.inFlight.delete(collectionId);
    });
    return sent;
  }
}
