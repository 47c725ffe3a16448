// Sparkplug B host-side state of one collector (Eclipse Sparkplug 3.0): per edge node its birth
// certificates (metric names, aliases and datatypes of the node and each device), its bdSeq and
// its message sequence; decoded payloads become values with tags
// `<group>/<edge node>[/<device>]/<metric name>`. What cannot be resolved (an alias no birth
// defined, data of a node never born, a sequence gap) asks the edge node for a rebirth.

import { isNumericType, metricNumber, SparkplugType, type SparkplugMetric, type SparkplugPayload } from '../../../native-free-codecs/sparkplug-b.js';
import type { CollectedValue } from '../driver.js';

export type SparkplugMessageType = 'NBIRTH' | 'NDEATH' | 'DBIRTH' | 'DDEATH' | 'NDATA' | 'DDATA' | 'NCMD' | 'DCMD' | 'STATE';

export interface SparkplugTopic {
  group: string;
  type: SparkplugMessageType;
  edge: string;
  device: string | null;
}

const TYPES = new Set<string>(['NBIRTH', 'NDEATH', 'DBIRTH', 'DDEATH', 'NDATA', 'DDATA', 'NCMD', 'DCMD', 'STATE']);

/** `spBv1.0/<group>/<type>/<edge>[/<device>]`, or null for another topic. */
export function parseSparkplugTopic(topic: string): SparkplugTopic | null {
  const parts = topic.split('/');
  if (parts[0] !== 'spBv1.0' || parts.length < 3 || !TYPES.has(parts[2]!)) return null;
  const type = parts[2] as SparkplugMessageType;
  if (type === 'STATE') return { group: parts[1]!, type, edge: '', device: null };
  const device = type[0] === 'D' ? parts[4] : undefined;
  if (parts.length !== (type[0] === 'D' ? 5 : 4) || !parts[1] || !parts[3] || device === '') return null;
  return { group: parts[1]!, type, edge: parts[3]!, device: device ?? null };
}

/** What a birth defines for one metric. */
interface Definition {
  tag: string;
  datatype: number;
  /** bdSeq, Node Control/*, Device Control/*: not stored. */
  control: boolean;
}

interface MetricSet {
  byAlias: Map<number, Definition>;
  byName: Map<string, Definition>;
}

interface EdgeNode {
  born: boolean;
  bdSeq: number | null;
  /** The last sequence number seen, null when unknown (after a restart of the collector). */
  seq: number | null;
  metrics: MetricSet;
  devices: Map<string, MetricSet>;
  lastRebirthRequestMs: number;
  /** Births restored from the saved file: refreshed by a rebirth request on the node's first message. */
  restored: boolean;
}

/** A saved birth certificate: [alias or null, name, datatype] per metric. */
type SavedMetrics = Array<[number | null, string, number]>;
export interface SavedBirths {
  [nodeKey: string]: { bdSeq: number | null; node: SavedMetrics; devices: Record<string, SavedMetrics> };
}

export interface SparkplugResult {
  values: CollectedValue[];
  /** is_historical metrics: stored as backfill (no alarms). */
  historical: CollectedValue[];
  /** Values not stored, by reason. */
  skipped: Map<string, number>;
  /** The edge node (group/edge) to send an NCMD Rebirth, or null. */
  rebirth: { group: string; edge: string } | null;
  /** A sequence number was missed. */
  gap: boolean;
  /** The birth certificates changed (worth saving). */
  birthsChanged: boolean;
}

/** Rebirth requests to one edge node are at least this far apart (a node slow to answer is not flooded). */
export const REBIRTH_INTERVAL_MS = 5000;

/** Values older than this are refused by storage unless configured otherwise: most likely epoch seconds. */
const MIN_TIMESTAMP_MS = 1e11;

const TYPE_NAMES = Object.fromEntries(Object.entries(SparkplugType).map(([name, n]) => [n, name])) as Record<number, string>;

/** The datatype a metric with none (and no birth) is read as, from the field that carried it. */
function inferredType(m: SparkplugMetric): number {
  switch (m.field) {
    case 'int':
      return SparkplugType.Int32;
    case 'long':
      return SparkplugType.Int64;
    case 'float':
    case 'double':
      return SparkplugType.Double;
    case 'boolean':
      return SparkplugType.Boolean;
    case 'string':
      return SparkplugType.String;
    case 'dataset':
      return SparkplugType.DataSet;
    case 'template':
      return SparkplugType.Template;
    default:
      return SparkplugType.Bytes;
  }
}

/** bdSeq and the Node/Device Control metrics are protocol, not plant values. */
function isControlMetric(name: string): boolean {
  return name === 'bdSeq' || name.startsWith('Node Control/') || name.startsWith('Device Control/');
}

const newSet = (): MetricSet => ({ byAlias: new Map(), byName: new Map() });

export class SparkplugState {
  private readonly nodes = new Map<string, EdgeNode>();

  /** Counters since start. */
  readonly counts = { gaps: 0, rebirthRequests: 0, unknownAliases: 0 };

  constructor(saved?: SavedBirths) {
    if (saved) this.restore(saved);
  }

  handle(t: SparkplugTopic, p: SparkplugPayload, now: number): SparkplugResult {
    const r: SparkplugResult = { values: [], historical: [], skipped: new Map(), rebirth: null, gap: false, birthsChanged: false };
    if (t.type === 'NCMD' || t.type === 'DCMD' || t.type === 'STATE') return r;
    const key = `${t.group}/${t.edge}`;
    let node = this.nodes.get(key);
    if (t.type === 'NBIRTH') {
      node = { born: true, bdSeq: null, seq: p.seq ?? null, metrics: newSet(), devices: new Map(), lastRebirthRequestMs: node?.lastRebirthRequestMs ?? 0, restored: false };
      this.nodes.set(key, node);
      for (const m of p.metrics) if (m.name === 'bdSeq') node.bdSeq = metricNumber(m, m.datatype || SparkplugType.UInt64);
      this.define(node.metrics, key, p.metrics);
      r.birthsChanged = true;
      this.collect(r, node.metrics, key, p, now, node, t);
      return r;
    }
    if (t.type === 'NDEATH') {
      // A death whose bdSeq is not the current birth's is a stale will from an older session.
      const bdSeq = p.metrics.find((m) => m.name === 'bdSeq');
      const deathSeq = bdSeq ? metricNumber(bdSeq, bdSeq.datatype || SparkplugType.UInt64) : null;
      if (node && (deathSeq === null || node.bdSeq === null || deathSeq === node.bdSeq)) {
        this.nodes.delete(key);
        r.birthsChanged = true;
      }
      return r;
    }
    if (!node || !node.born) {
      // Data (or a device birth) from a node whose birth we never saw: ask for it.
      node ??= { born: false, bdSeq: null, seq: null, metrics: newSet(), devices: new Map(), lastRebirthRequestMs: 0, restored: false };
      this.nodes.set(key, node);
      this.askRebirth(r, node, t, now);
    } else if (node.restored) {
      // The node may have been reborn with other aliases while we were away: resolve with the
      // saved births (queued QoS 1 data needs them) and ask for fresh ones.
      node.restored = false;
      this.askRebirth(r, node, t, now);
    }
    this.checkSequence(r, node, t, p, now);
    const deviceKey = `${key}/${t.device}`;
    switch (t.type) {
      case 'DBIRTH': {
        const set = newSet();
        node.devices.set(t.device!, set);
        this.define(set, deviceKey, p.metrics);
        r.birthsChanged = true;
        this.collect(r, set, deviceKey, p, now, node, t);
        break;
      }
      case 'DDEATH':
        if (node.devices.delete(t.device!)) r.birthsChanged = true;
        break;
      case 'NDATA':
        this.collect(r, node.metrics, key, p, now, node, t);
        break;
      case 'DDATA': {
        let set = node.devices.get(t.device!);
        if (!set) {
          set = newSet();
          this.askRebirth(r, node, t, now);
        }
        this.collect(r, set, deviceKey, p, now, node, t);
        break;
      }
    }
    return r;
  }

  /** The birth certificates, for saving (restored by the constructor). */
  save(): SavedBirths {
    const out: SavedBirths = {};
    const metricsOf = (set: MetricSet, prefix: string): SavedMetrics => {
      const rows: SavedMetrics = [];
      const aliased = new Set<Definition>();
      for (const [alias, d] of set.byAlias) {
        rows.push([alias, d.tag.slice(prefix.length + 1), d.datatype]);
        aliased.add(d);
      }
      for (const [name, d] of set.byName) if (!aliased.has(d)) rows.push([null, name, d.datatype]);
      return rows;
    };
    for (const [key, node] of this.nodes) {
      if (!node.born) continue;
      const devices: Record<string, SavedMetrics> = {};
      for (const [id, set] of node.devices) devices[id] = metricsOf(set, `${key}/${id}`);
      out[key] = { bdSeq: node.bdSeq, node: metricsOf(node.metrics, key), devices };
    }
    return out;
  }

  private restore(saved: SavedBirths): void {
    const setOf = (rows: SavedMetrics, prefix: string): MetricSet => {
      const set = newSet();
      for (const [alias, name, datatype] of rows) {
        const d = { tag: `${prefix}/${name}`, datatype, control: isControlMetric(name) };
        set.byName.set(name, d);
        if (alias !== null) set.byAlias.set(alias, d);
      }
      return set;
    };
    for (const [key, s] of Object.entries(saved)) {
      const devices = new Map<string, MetricSet>();
      for (const [id, rows] of Object.entries(s.devices)) devices.set(id, setOf(rows, `${key}/${id}`));
      this.nodes.set(key, { born: true, bdSeq: s.bdSeq, seq: null, metrics: setOf(s.node, key), devices, lastRebirthRequestMs: 0, restored: true });
    }
  }

  private define(set: MetricSet, prefix: string, metrics: readonly SparkplugMetric[]): void {
    for (const m of metrics) {
      if (m.name === undefined) continue;
      const d = { tag: `${prefix}/${m.name}`, datatype: m.datatype || inferredType(m), control: isControlMetric(m.name) };
      set.byName.set(m.name, d);
      if (m.alias !== undefined) set.byAlias.set(m.alias, d);
    }
  }

  private checkSequence(r: SparkplugResult, node: EdgeNode, t: SparkplugTopic, p: SparkplugPayload, now: number): void {
    if (p.seq === undefined) return;
    if (node.seq !== null && p.seq !== (node.seq + 1) % 256) {
      r.gap = true;
      this.counts.gaps++;
      this.askRebirth(r, node, t, now);
    }
    node.seq = p.seq;
  }

  private askRebirth(r: SparkplugResult, node: EdgeNode, t: SparkplugTopic, now: number): void {
    if (r.rebirth || now - node.lastRebirthRequestMs < REBIRTH_INTERVAL_MS) return;
    node.lastRebirthRequestMs = now;
    this.counts.rebirthRequests++;
    r.rebirth = { group: t.group, edge: t.edge };
  }

  private collect(r: SparkplugResult, set: MetricSet, prefix: string, p: SparkplugPayload, now: number, node: EdgeNode, t: SparkplugTopic): void {
    const payloadTs = p.timestamp !== undefined && p.timestamp >= MIN_TIMESTAMP_MS && p.timestamp <= Number.MAX_SAFE_INTEGER ? p.timestamp : now;
    const skip = (reason: string) => r.skipped.set(reason, (r.skipped.get(reason) ?? 0) + 1);
    for (const m of p.metrics) {
      let d: Definition | undefined;
      if (m.alias !== undefined && m.name === undefined) {
        d = set.byAlias.get(m.alias);
        if (!d) {
          this.counts.unknownAliases++;
          skip('sparkplug unknown alias');
          this.askRebirth(r, node, t, now);
          continue;
        }
      } else if (m.name !== undefined) {
        d = set.byName.get(m.name) ?? { tag: `${prefix}/${m.name}`, datatype: m.datatype || inferredType(m), control: isControlMetric(m.name) };
      } else {
        skip('sparkplug metric with neither name nor alias');
        continue;
      }
      if (d.control) continue;
      // Absent or 0 (Unknown) in DATA messages, as the spec recommends: the birth's type applies.
      const datatype = m.datatype || d.datatype;
      if (m.isNull) {
        skip('sparkplug null metric');
        continue;
      }
      if (!isNumericType(datatype)) {
        skip(`sparkplug ${(TYPE_NAMES[datatype] ?? `datatype ${datatype}`).toLowerCase()} metric`);
        continue;
      }
      if (m.isTransient) {
        skip('sparkplug transient metric');
        continue;
      }
      const value = metricNumber(m, datatype);
      if (value === null || !Number.isFinite(value)) {
        skip(value === null ? 'sparkplug value does not match its datatype' : 'sparkplug value not finite');
        continue;
      }
      const ts = m.timestamp !== undefined && m.timestamp >= MIN_TIMESTAMP_MS && m.timestamp <= Number.MAX_SAFE_INTEGER ? m.timestamp : payloadTs;
      (m.isHistorical ? r.historical : r.values).push({ tag: d.tag, ts, value });
    }
  }
}
