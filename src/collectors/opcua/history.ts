// Back-filling a gap after a reconnect: for each item whose last value the collector saw before the
// connection broke, HistoryRead (raw) from just after that value to the server's time at reconnect.
// Items are read many per call, sorted by their last value so one call's start time suits them all;
// values at or before an item's own last value are dropped. A server (or a node) without history
// simply answers Bad for it: the gap then stays a gap, as nothing is invented.

import type { ClientSession, DataValue } from 'node-opcua-client';
import type { CollectedValue } from '../driver.js';
import type { OpcuaLib } from './library.js';

export interface GapItem {
  nodeId: string;
  tag: string;
  /** Epoch ms of the last value seen before the gap. */
  lastTs: number;
}

export interface BackfillResult {
  values: number;
  /** Items the server had history for. */
  itemsWithHistory: number;
  skippedBad: number;
}

const NODES_PER_CALL = 100;
const VALUES_PER_NODE = 10_000;
/** Bounds one back-fill: a long outage is not worth holding the whole of in memory at once. */
const MAX_VALUES = 2_000_000;
const MAX_ROUNDS = 1000;

export async function backfillGap(
  lib: OpcuaLib,
  session: ClientSession,
  items: GapItem[],
  until: Date,
  convert: (dv: DataValue) => { value: number; ts: number } | string,
  emit: (values: CollectedValue[]) => void,
  stopped: () => boolean,
): Promise<BackfillResult> {
  const result: BackfillResult = { values: 0, itemsWithHistory: 0, skippedBad: 0 };
  const sorted = [...items].sort((a, b) => a.lastTs - b.lastTs);
  for (let i = 0; i < sorted.length && !stopped() && result.values < MAX_VALUES; i += NODES_PER_CALL) {
    const chunk = sorted.slice(i, i + NODES_PER_CALL);
    const start = new Date(chunk[0]!.lastTs + 1);
    if (start >= until) continue;
    let nodes = chunk.map((item) => ({ item, continuationPoint: null as Buffer | null }));
    const withHistory = new Set<GapItem>();
    for (let round = 0; nodes.length > 0 && round < MAX_ROUNDS && !stopped(); round++) {
      const response = await session.historyRead(new lib.HistoryReadRequest({
        historyReadDetails: new lib.ReadRawModifiedDetails({ isReadModified: false, startTime: start, endTime: until, numValuesPerNode: VALUES_PER_NODE, returnBounds: false }),
        timestampsToReturn: lib.TimestampsToReturn.Both,
        releaseContinuationPoints: false,
        nodesToRead: nodes.map((n) => ({ nodeId: n.item.nodeId, continuationPoint: n.continuationPoint ?? undefined })),
      }));
      const results = response.results ?? [];
      const again: typeof nodes = [];
      nodes.forEach((n, k) => {
        const r = results[k];
        if (!r || r.statusCode.isBad()) return;
        withHistory.add(n.item);
        const data = r.historyData as { dataValues?: DataValue[] | null } | null;
        const out: CollectedValue[] = [];
        for (const dv of data?.dataValues ?? []) {
          const converted = convert(dv);
          if (typeof converted === 'string') {
            result.skippedBad++;
            continue;
          }
          if (converted.ts <= n.item.lastTs || converted.ts > until.getTime()) continue;
          out.push({ tag: n.item.tag, ts: converted.ts, value: converted.value });
        }
        result.values += out.length;
        emit(out);
        if (r.continuationPoint && r.continuationPoint.length > 0) again.push({ item: n.item, continuationPoint: r.continuationPoint });
      });
      nodes = again;
      if (nodes.length > 0 && (stopped() || round === MAX_ROUNDS - 1 || result.values >= MAX_VALUES)) {
        await release(lib, session, nodes.map((n) => ({ nodeId: n.item.nodeId, continuationPoint: n.continuationPoint! })));
        nodes = [];
      }
    }
    result.itemsWithHistory += withHistory.size;
  }
  return result;
}

async function release(lib: OpcuaLib, session: ClientSession, nodes: Array<{ nodeId: string; continuationPoint: Buffer }>): Promise<void> {
  try {
    await session.historyRead(new lib.HistoryReadRequest({
      historyReadDetails: new lib.ReadRawModifiedDetails({ isReadModified: false, numValuesPerNode: 0 }),
      timestampsToReturn: lib.TimestampsToReturn.Both,
      releaseContinuationPoints: true,
      nodesToRead: nodes,
    }));
  } catch {
    // The session may be gone; continuation points die with it.
  }
}
