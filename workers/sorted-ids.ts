// Binary search over the sorted tag ids of a sealed file's footer and of its summary directory.

/** The first index whose id is `id` in ascending `ids`, or -1. */
export function firstIndexOf(ids: Uint32Array, id: number): number {
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ids[mid]! < id) lo = mid + 1;
    else hi = mid;
  }
  return lo < ids.length && ids[lo] === id ? lo : -1;
}
