// Which shard owns a collection: FNV-1a (32-bit) of its id, modulo the shard
// count. Stable across restarts and identical on both sides of the thread
// boundary; changing it would move collections between workers.

export function shardOf(collectionId: string, shardCount: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < collectionId.length; i++) {
    hash ^= collectionId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % shardCount;
}
