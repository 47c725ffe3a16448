// Whether this node leads, for every part that does leader-only work (the monitor evaluates,
// the connector backfills, the first admin is made) or refuses mutations elsewhere. A single
// node always leads, from the moment the service has started. On a cluster the cluster plugin
// decides (it holds the LeadershipControl, a built-in capability of the host): it says who
// leads through `decideBy` and tells the others when this node starts and stops leading.

export interface Leadership {
  /** Whether this node may accept mutations and do leader-only work now (always, on a single node). */
  leads(): boolean;
  /** Work to do each time this node starts leading; on a single node, once, when the service has started. */
  onLeading(work: () => Promise<void> | void): void;
  /** Work to stop when this node stops leading (never on a single node). */
  onFollowing(work: () => void): void;
}

/** The cluster's side of leadership. */
export interface LeadershipControl {
  /** Whether this service runs as a node of a cluster (cluster.enabled). */
  readonly clustered: boolean;
  /** The verdict `leads()` gives from now on (the cluster's election and fencing). */
  decideBy(leads: () => boolean): void;
  /** This node leads now: the onLeading work runs, each awaited in turn; failures are logged by the caller. */
  leading(): Promise<void>;
  /** This node no longer leads. */
  following(): void;
}

export class LeadershipState implements Leadership, LeadershipControl {
  private verdict: () => boolean;
  private readonly leadingWork: Array<() => Promise<void> | void> = [];
  private readonly followingWork: Array<() => void> = [];

  constructor(readonly clustered: boolean) {
    // Until the cluster decides, a node of a cluster leads nothing.
    this.verdict = clustered ? () => false : () => true;
  }

  leads(): boolean {
    return this.verdict();
  }

  onLeading(work: () => Promise<void> | void): void {
    this.leadingWork.push(work);
  }

  onFollowing(work: () => void): void {
    this.followingWork.push(work);
  }

  decideBy(leads: () => boolean): void {
    this.verdict = leads;
  }

  /** Runs the onLeading work in order; the first failure is thrown after the rest ran. */
  async leading(): Promise<void> {
    let failure: unknown = null;
    let failed = false;
    for (const work of this.leadingWork) {
      try {
        await work();
      } catch (err) {
        if (!failed) {
          failed = true;
          failure = err;
        }
      }
    }
    if (failed) throw failure;
  }

  following(): void {
    for (const work of this.followingWork) work();
  }

  /** The service has started: a single node begins leading now (errors fail the start). */
  async serviceStarted(): Promise<void> {
    if (!this.clustered) await this.leading();
  }
}
