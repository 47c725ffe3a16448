// What one recipient has had on a stream, as a short sorted list of inclusive id ranges.
//
// Per-row delivery records would cost one insert per recipient per notification (2,000 dashboards
// × 100 notifications a second is 200,000 rows a second); ranges cost nothing per delivery. A
// range claims every id in it, including ids of rows the recipient could not see when it was
// claimed: a stream that has passed id n has had every visible row up to n. So a row that
// becomes visible later (a grant widened) is not replayed; it is still in the list routes.

/** Inclusive [lo, hi] ranges, sorted, disjoint and not adjacent. */
export type Ranges = Array<[number, number]>;

/** More ranges than this are merged across the smallest gap (the ids in the gap count as had). */
export const MAX_RANGES = 64;

export class DeliveredRanges {
  private ranges: Ranges;

  constructor(ranges: Ranges = []) {
    this.ranges = normalise(ranges);
  }

  /** From stored JSON; anything unreadable is an empty set (replays again rather than loses). */
  static parse(json: string): DeliveredRanges {
    try {
      const value = JSON.parse(json) as unknown;
      if (!Array.isArray(value)) return new DeliveredRanges();
      const ranges = value.filter(
        (r): r is [number, number] => Array.isArray(r) && r.length === 2 && Number.isSafeInteger(r[0]) && Number.isSafeInteger(r[1]) && r[0] <= r[1],
      );
      return new DeliveredRanges(ranges);
    } catch {
      return new DeliveredRanges();
    }
  }

  toJSON(): Ranges {
    return this.ranges.map(([lo, hi]) => [lo, hi]);
  }

  get list(): ReadonlyArray<readonly [number, number]> {
    return this.ranges;
  }

  has(id: number): boolean {
    for (const [lo, hi] of this.ranges) {
      if (id < lo) return false;
      if (id <= hi) return true;
    }
    return false;
  }

  /** Adds [lo, hi]; true when that changed the set. */
  add(lo: number, hi: number): boolean {
    if (hi < lo) return false;
    const last = this.ranges[this.ranges.length - 1];
    // The common case, a live stream moving forward: extend or append at the end.
    if (last && lo >= last[0]) {
      if (hi <= last[1]) return false;
      if (lo <= last[1] + 1) {
        last[1] = hi;
        return true;
      }
      this.ranges.push([lo, hi]);
      this.capRanges();
      return true;
    }
    if (!last) {
      this.ranges.push([lo, hi]);
      return true;
    }
    const before = JSON.stringify(this.ranges);
    this.ranges = normalise([...this.ranges, [lo, hi]]);
    this.capRanges();
    return JSON.stringify(this.ranges) !== before;
  }

  private capRanges(): void {
    while (this.ranges.length > MAX_RANGES) {
      let smallest = 0;
      for (let i = 1; i < this.ranges.length - 1; i++) {
        if (this.ranges[i + 1][0] - this.ranges[i][1] < this.ranges[smallest + 1][0] - this.ranges[smallest][1]) smallest = i;
      }
      this.ranges.splice(smallest, 2, [this.ranges[smallest][0], this.ranges[smallest + 1][1]]);
    }
  }
}

/** Sorts and merges overlapping or adjacent ranges. */
function normalise(ranges: Ranges): Ranges {
  const sorted = ranges.map(([lo, hi]): [number, number] => [lo, hi]).sort((a, b) => a[0] - b[0]);
  const out: Ranges = [];
  for (const [lo, hi] of sorted) {
    const last = out[out.length - 1];
    if (last && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
    else out.push([lo, hi]);
  }
  return out;
}
