/**
 * The label sets of a collection's tags (line protocol series), by tag id, packed: each set is
 * one string, the JSON of `[shape, ...values]`, where `shape` numbers the set's list of keys in
 * a table shared by the collection (its series mostly have the same few keys). An object per
 * tag with a string per value cost about 100 bytes a series with four labels; the packed string
 * about half, and a tag without labels nothing but its slot. Sets are unpacked when asked for
 * (a listing, meta.json), never on the write path.
 */

import type { SeriesLabels } from '../native-free-codecs/write-body.js';

/** Past this many shapes (every series with keys of its own), a set is packed as its own JSON object. */
const MAX_SHAPES = 4096;

export class LabelSets {
  /** Per tag id: its packed set, or undefined. */
  private readonly packed: Array<string | undefined> = [];
  /** Key lists by shape number, and shape numbers by the JSON of their key list. */
  private readonly shapes: string[][] = [];
  private readonly shapeOf = new Map<string, number>();

  constructor(sets: ReadonlyArray<SeriesLabels | undefined> = []) {
    for (const set of sets) this.push(set);
  }

  get length(): number {
    return this.packed.length;
  }

  /** The next tag id's set. */
  push(set: SeriesLabels | null | undefined): void {
    this.packed.push(set ? this.pack(set) : undefined);
  }

  set(id: number, set: SeriesLabels): void {
    this.packed[id] = this.pack(set);
  }

  has(id: number): boolean {
    return this.packed[id] !== undefined;
  }

  /** A fresh object with the keys in the order they were given. */
  get(id: number): SeriesLabels | undefined {
    const text = this.packed[id];
    if (text === undefined) return undefined;
    if (text.startsWith('{')) return JSON.parse(text) as SeriesLabels;
    const [shape, ...values] = JSON.parse(text) as [number, ...string[]];
    const keys = this.shapes[shape]!;
    const set: Record<string, string> = {};
    for (let k = 0; k < keys.length; k++) {
      const key = keys[k]!;
      // defineProperty: a label named __proto__ stays a plain key, as JSON.parse made it (only
      // there: objects built by assignment share their shape, which keeps meta.json's stringify fast).
      if (key === '__proto__') Object.defineProperty(set, key, { value: values[k]!, enumerable: true, writable: true, configurable: true });
      else set[key] = values[k]!;
    }
    return set;
  }

  /** Every tag id with a set, in id order. */
  *ids(): IterableIterator<number> {
    for (let id = 0; id < this.packed.length; id++) if (this.packed[id] !== undefined) yield id;
  }

  private pack(set: SeriesLabels): string {
    const keys = Object.keys(set);
    const shapeKey = JSON.stringify(keys);
    let shape = this.shapeOf.get(shapeKey);
    if (shape === undefined) {
      if (this.shapes.length >= MAX_SHAPES) return JSON.stringify(set);
      shape = this.shapes.length;
      this.shapes.push(keys);
      this.shapeOf.set(shapeKey, shape);
    }
    const row: Array<number | string> = [shape];
    for (const key of keys) row.push(set[key]!);
    return JSON.stringify(row);
  }
}
