// The asset model behind the PI Web API simulator: asset servers, databases, a tree of
// elements, their attributes and each attribute's recorded values.
//
// A model is declared as plain data (PiModelSpec) and built once. Every GUID is derived from
// the seed and the object's path, so the same spec always gives the same Ids and WebIDs.
// Recorded values are never stored: a generated series computes value i from (seed, i), so
// an attribute with millions of values costs no memory and any time range is found by
// arithmetic. plantModel() builds a ready-made model of useful size.

import crypto from 'node:crypto';
import { encodeWebId, webIdPath, type WebIdKind, type WebIdType } from './pi-webid.js';

/** An enumeration value as PI Web API writes it in `Value`. */
export interface DigitalState {
  Name: string;
  Value: number;
  IsSystem: boolean;
}

/** Values of PI's System digital state set that bad values carry. */
export const SYSTEM_STATES: readonly DigitalState[] = [
  { Name: 'I/O Timeout', Value: 246, IsSystem: true },
  { Name: 'Shutdown', Value: 254, IsSystem: true },
  { Name: 'Bad Input', Value: 307, IsSystem: true },
];

/** A series computed on demand: value i is at `startMs + i * intervalMs`. */
export interface GeneratedSeries {
  startMs: number;
  intervalMs: number;
  count: number;
  /**
   * Share (0..1) of values recorded bad: `Good: false` with a System digital state as `Value`.
   * Default 0.01; 0 for none.
   */
  badRatio?: number;
  /** For numeric types: the wave the values follow (base ± amplitude over `periodValues`, plus noise). */
  base?: number;
  amplitude?: number;
  periodValues?: number;
  noise?: number;
  /**
   * For numeric types: a slow random walk added to the wave. Every `walkEveryValues` values
   * (default 60) the level moves by a uniform draw in ±walk, linearly in between. Default 0.
   */
  walk?: number;
  walkEveryValues?: number;
  /** Decimals non-integer numeric values are rounded to. Default 3. */
  decimals?: number;
  /** For EnumerationValue attributes: how many consecutive values keep the same state. Default 30. */
  stateRunLength?: number;
}

export type PiValue = number | string | boolean | DigitalState;

/** One recorded value given explicitly. */
export interface ExplicitValue {
  timestampMs: number;
  value: PiValue;
  /** Default true, except that a DigitalState with IsSystem true defaults to false. */
  good?: boolean;
  questionable?: boolean;
  substituted?: boolean;
  annotated?: boolean;
}

export interface PiAttributeSpec {
  name: string;
  description?: string;
  /** PI value type: Double (default), Single, Int32, Int64, Boolean, String, EnumerationValue. */
  type?: string;
  /** For EnumerationValue: the enumeration set's name. */
  typeQualifier?: string;
  /** For EnumerationValue: the set's state names, their values being their positions. */
  states?: string[];
  units?: { name: string; abbreviation: string };
  categoryNames?: string[];
  step?: boolean;
  /** Null for an attribute without a data reference (a static value, no recorded stream). */
  dataReference?: 'PI Point' | null;
  /** Explicit values (sorted by time here) or a generated series. */
  recorded?: GeneratedSeries | ExplicitValue[];
  attributes?: PiAttributeSpec[];
}

export interface PiElementSpec {
  name: string;
  description?: string;
  templateName?: string;
  categoryNames?: string[];
  attributes?: PiAttributeSpec[];
  elements?: PiElementSpec[];
}

export interface PiDatabaseSpec {
  name: string;
  description?: string;
  elements?: PiElementSpec[];
}

export interface PiServerSpec {
  name: string;
  description?: string;
  /** False for a server PI Web API knows but cannot reach: listing its databases fails with 502. */
  isConnected?: boolean;
  serverVersion?: string;
  databases?: PiDatabaseSpec[];
}

export interface PiModelSpec {
  seed?: number;
  servers: PiServerSpec[];
}

/** One recorded value, in the simulator's own terms. */
export interface RecordedValue {
  timestampMs: number;
  value: PiValue;
  good: boolean;
  questionable: boolean;
  substituted: boolean;
  annotated: boolean;
}

/** Random access to one attribute's recorded values, in time order. */
export interface RecordedSource {
  readonly count: number;
  at(index: number): RecordedValue;
  timestampAt(index: number): number;
  /** The first index whose timestamp is >= ms (count when none). */
  firstAtOrAfter(ms: number): number;
  /** The last index whose timestamp is <= ms (-1 when none). */
  lastAtOrBefore(ms: number): number;
}

interface NodeBase {
  id: string;
  name: string;
  description: string;
  /** Display path, `\\server\db\element|attribute`. */
  path: string;
}

export interface ServerNode extends NodeBase {
  kind: 'AssetServer';
  isConnected: boolean;
  serverVersion: string;
  databases: DatabaseNode[];
}

export interface DatabaseNode extends NodeBase {
  kind: 'AssetDatabase';
  server: ServerNode;
  elements: ElementNode[];
}

export interface ElementNode extends NodeBase {
  kind: 'Element';
  server: ServerNode;
  database: DatabaseNode;
  parent: ElementNode | null;
  templateName: string;
  categoryNames: string[];
  elements: ElementNode[];
  attributes: AttributeNode[];
}

export interface AttributeNode extends NodeBase {
  kind: 'Attribute';
  server: ServerNode;
  element: ElementNode;
  parent: AttributeNode | null;
  type: string;
  typeQualifier: string;
  states: string[];
  units: { name: string; abbreviation: string } | null;
  categoryNames: string[];
  step: boolean;
  dataReference: string | null;
  attributes: AttributeNode[];
  recorded: RecordedSource | null;
}

export type ModelNode = ServerNode | DatabaseNode | ElementNode | AttributeNode;

const byName = (a: { name: string }, b: { name: string }) => {
  const x = a.name.toLowerCase();
  const y = b.name.toLowerCase();
  return x < y ? -1 : x > y ? 1 : 0;
};

/** A GUID made from the seed and a key: stable across runs, distinct per object. */
function derivedGuid(seed: number, key: string): string {
  const bytes = crypto.createHash('sha256').update(`${seed}\u0000${key}`).digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** A 32-bit mix of two integers (the murmur3 finaliser), for random access to pseudo-random values. */
function mix(a: number, b: number): number {
  let h = (Math.imul(a, 0x9e3779b1) ^ b) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}
const unit = (h: number) => h / 4294967296;

const NUMERIC_TYPES = new Set(['Double', 'Single', 'Int16', 'Int32', 'Int64', 'Byte']);
const INTEGER_TYPES = new Set(['Int16', 'Int32', 'Int64', 'Byte']);

class GeneratedSource implements RecordedSource {
  readonly count: number;
  private readonly badThreshold: number;
  /** The walk's level at every `walkEveryValues`-th value; empty without a walk. */
  private readonly walkLevels: Float64Array;
  private readonly walkEvery: number;

  constructor(
    private readonly series: GeneratedSeries,
    private readonly attribute: AttributeNode,
    private readonly streamSeed: number,
  ) {
    if (!(series.intervalMs > 0) || !Number.isInteger(series.count) || series.count < 0) {
      throw new Error(`${attribute.path}: a generated series needs intervalMs > 0 and a whole count`);
    }
    this.count = series.count;
    this.badThreshold = Math.floor((series.badRatio ?? 0.01) * 4294967296);
    // A random walk has no closed form for value i, so its levels are summed once here: one
    // number per walkEveryValues values keeps random access cheap for millions of values.
    this.walkEvery = series.walkEveryValues ?? 60;
    const walk = series.walk ?? 0;
    this.walkLevels = new Float64Array(walk > 0 ? Math.ceil(series.count / this.walkEvery) + 2 : 0);
    for (let k = 1; k < this.walkLevels.length; k++) {
      this.walkLevels[k] = this.walkLevels[k - 1]! + walk * (2 * unit(mix(streamSeed ^ 0x68e31da4, k)) - 1);
    }
  }

  timestampAt(index: number): number {
    return this.series.startMs + index * this.series.intervalMs;
  }

  firstAtOrAfter(ms: number): number {
    const i = Math.ceil((ms - this.series.startMs) / this.series.intervalMs);
    return Math.min(Math.max(i, 0), this.count);
  }

  lastAtOrBefore(ms: number): number {
    const i = Math.floor((ms - this.series.startMs) / this.series.intervalMs);
    return Math.max(Math.min(i, this.count - 1), -1);
  }

  at(index: number): RecordedValue {
    const timestampMs = this.timestampAt(index);
    const flags = { questionable: false, substituted: false, annotated: false };
    if (mix(this.streamSeed, index) < this.badThreshold) {
      const state = SYSTEM_STATES[mix(this.streamSeed ^ 0x5bd1e995, index) % SYSTEM_STATES.length]!;
      return { timestampMs, value: { ...state }, good: false, ...flags };
    }
    return { timestampMs, value: this.goodValue(index), good: true, ...flags };
  }

  private goodValue(index: number): PiValue {
    const { type, states } = this.attribute;
    const noiseDraw = unit(mix(this.streamSeed ^ 0x27d4eb2f, index));
    if (type === 'EnumerationValue') {
      const run = Math.floor(index / (this.series.stateRunLength ?? 30));
      const position = mix(this.streamSeed ^ 0x165667b1, run) % Math.max(states.length, 1);
      return { Name: states[position] ?? 'Unknown', Value: position, IsSystem: false };
    }
    if (type === 'Boolean') return noiseDraw < 0.5;
    if (type === 'String') return `text ${index}`;
    const base = this.series.base ?? 50;
    const amplitude = this.series.amplitude ?? 10;
    const period = this.series.periodValues ?? 3600;
    const noise = this.series.noise ?? 1;
    const raw = base + amplitude * Math.sin((2 * Math.PI * index) / period) + this.walkAt(index) + noise * (noiseDraw - 0.5);
    if (INTEGER_TYPES.has(type)) return Math.round(raw);
    const scale = 10 ** (this.series.decimals ?? 3);
    return Math.round(raw * scale) / scale;
  }

  private walkAt(index: number): number {
    if (this.walkLevels.length === 0) return 0;
    const k = Math.floor(index / this.walkEvery);
    const from = this.walkLevels[k]!;
    return from + (this.walkLevels[k + 1]! - from) * ((index % this.walkEvery) / this.walkEvery);
  }
}

class ExplicitSource implements RecordedSource {
  private readonly values: RecordedValue[];

  constructor(values: ExplicitValue[]) {
    this.values = values
      .map((v) => ({
        timestampMs: v.timestampMs,
        value: v.value,
        good: v.good ?? !(typeof v.value === 'object' && v.value.IsSystem),
        questionable: v.questionable ?? false,
        substituted: v.substituted ?? false,
        annotated: v.annotated ?? false,
      }))
      .sort((a, b) => a.timestampMs - b.timestampMs);
  }

  get count(): number {
    return this.values.length;
  }

  at(index: number): RecordedValue {
    const v = this.values[index]!;
    return { ...v, value: typeof v.value === 'object' ? { ...v.value } : v.value };
  }

  timestampAt(index: number): number {
    return this.values[index]!.timestampMs;
  }

  firstAtOrAfter(ms: number): number {
    let lo = 0;
    let hi = this.values.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.values[mid]!.timestampMs < ms) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  lastAtOrBefore(ms: number): number {
    return this.firstAtOrAfter(ms + 1) - 1;
  }
}

/** Counts of recorded values in a time range, by what a client copying numbers must do with them. */
export interface RecordedTally {
  total: number;
  /** Good values whose Value is a number: the ones a numeric copy keeps. */
  goodNumeric: number;
  /** Values with Good false. */
  bad: number;
  /** Good values whose Value is not a number (enumeration states, text, booleans). */
  goodNonNumeric: number;
}

export class PiModel {
  readonly seed: number;
  readonly servers: ServerNode[] = [];
  private readonly byId = new Map<string, ModelNode>();
  private readonly byPath = new Map<string, ModelNode>();

  constructor(spec: PiModelSpec) {
    this.seed = spec.seed ?? 1;
    for (const s of spec.servers) this.servers.push(this.buildServer(s));
    this.servers.sort(byName);
  }

  /** The object with this GUID (any kind), or undefined. */
  byGuid(id: string): ModelNode | undefined {
    return this.byId.get(id.toLowerCase());
  }

  /** The object at this display path (`\\server\db\a\b|attr|child`, any case), or undefined. */
  byDisplayPath(path: string): ModelNode | undefined {
    return this.byPath.get(webIdPath(path));
  }

  /** The GUIDs a WebID of this object carries (see pi-webid.ts). */
  webIdGuids(node: ModelNode): string[] {
    switch (node.kind) {
      case 'AssetServer':
        return [node.id];
      case 'AssetDatabase':
        return [node.server.id, node.id];
      case 'Element':
        return [node.server.id, node.id];
      case 'Attribute':
        return [node.server.id, node.element.id, node.id];
    }
  }

  webId(node: ModelNode, type: WebIdType = 'Full'): string {
    return encodeWebId(type, node.kind as WebIdKind, this.webIdGuids(node), node.path);
  }

  /** Every recorded value of an attribute in [startMs, endMs], in time order (for tests to compare with). */
  *recordedBetween(attribute: AttributeNode, startMs: number, endMs: number): Generator<RecordedValue> {
    const source = attribute.recorded;
    if (!source) return;
    for (let i = source.firstAtOrAfter(startMs); i < source.count && source.timestampAt(i) <= endMs; i++) yield source.at(i);
  }

  tally(attribute: AttributeNode, startMs: number, endMs: number): RecordedTally {
    const tally: RecordedTally = { total: 0, goodNumeric: 0, bad: 0, goodNonNumeric: 0 };
    for (const v of this.recordedBetween(attribute, startMs, endMs)) {
      tally.total++;
      if (!v.good) tally.bad++;
      else if (typeof v.value === 'number') tally.goodNumeric++;
      else tally.goodNonNumeric++;
    }
    return tally;
  }

  private register(node: ModelNode): void {
    const key = webIdPath(node.path);
    if (this.byPath.has(key)) throw new Error(`two objects at ${node.path} (names are unique per parent, case-insensitively)`);
    this.byPath.set(key, node);
    this.byId.set(node.id, node);
  }

  private guid(kind: string, path: string): string {
    return derivedGuid(this.seed, `${kind}:${webIdPath(path)}`);
  }

  private buildServer(spec: PiServerSpec): ServerNode {
    const path = `\\\\${spec.name}`;
    const server: ServerNode = {
      kind: 'AssetServer',
      id: this.guid('AssetServer', path),
      name: spec.name,
      description: spec.description ?? '',
      path,
      isConnected: spec.isConnected ?? true,
      serverVersion: spec.serverVersion ?? '2.10.11.2717',
      databases: [],
    };
    this.register(server);
    for (const d of spec.databases ?? []) server.databases.push(this.buildDatabase(d, server));
    server.databases.sort(byName);
    return server;
  }

  private buildDatabase(spec: PiDatabaseSpec, server: ServerNode): DatabaseNode {
    const path = `${server.path}\\${spec.name}`;
    const database: DatabaseNode = {
      kind: 'AssetDatabase',
      id: this.guid('AssetDatabase', path),
      name: spec.name,
      description: spec.description ?? '',
      path,
      server,
      elements: [],
    };
    this.register(database);
    for (const e of spec.elements ?? []) database.elements.push(this.buildElement(e, database, null));
    database.elements.sort(byName);
    return database;
  }

  private buildElement(spec: PiElementSpec, database: DatabaseNode, parent: ElementNode | null): ElementNode {
    const path = `${parent ? parent.path : database.path}\\${spec.name}`;
    const element: ElementNode = {
      kind: 'Element',
      id: this.guid('Element', path),
      name: spec.name,
      description: spec.description ?? '',
      path,
      server: database.server,
      database,
      parent,
      templateName: spec.templateName ?? '',
      categoryNames: spec.categoryNames ?? [],
      elements: [],
      attributes: [],
    };
    this.register(element);
    for (const e of spec.elements ?? []) element.elements.push(this.buildElement(e, database, element));
    element.elements.sort(byName);
    for (const a of spec.attributes ?? []) element.attributes.push(this.buildAttribute(a, element, null));
    element.attributes.sort(byName);
    return element;
  }

  private buildAttribute(spec: PiAttributeSpec, element: ElementNode, parent: AttributeNode | null): AttributeNode {
    const path = `${parent ? parent.path : element.path}|${spec.name}`;
    const type = spec.type ?? 'Double';
    if (type === 'EnumerationValue' && !spec.states?.length) throw new Error(`${path}: an EnumerationValue attribute needs states`);
    const attribute: AttributeNode = {
      kind: 'Attribute',
      id: this.guid('Attribute', path),
      name: spec.name,
      description: spec.description ?? '',
      path,
      server: element.server,
      element,
      parent,
      type,
      typeQualifier: spec.typeQualifier ?? '',
      states: spec.states ?? [],
      units: spec.units ?? null,
      categoryNames: spec.categoryNames ?? [],
      step: spec.step ?? (type === 'EnumerationValue' || type === 'Boolean' || type === 'String'),
      dataReference: spec.dataReference === undefined ? (spec.recorded ? 'PI Point' : null) : spec.dataReference,
      attributes: [],
      recorded: null,
    };
    if (spec.recorded) {
      attribute.recorded = Array.isArray(spec.recorded)
        ? new ExplicitSource(spec.recorded)
        : new GeneratedSource(spec.recorded, attribute, Number.parseInt(attribute.id.slice(0, 8), 16));
    }
    this.register(attribute);
    for (const a of spec.attributes ?? []) attribute.attributes.push(this.buildAttribute(a, element, attribute));
    attribute.attributes.sort(byName);
    return attribute;
  }
}

export function isNumericType(type: string): boolean {
  return NUMERIC_TYPES.has(type);
}

// ---------------------------------------------------------------------------------------------
// A ready-made plant.

export interface PlantModelOptions {
  seed?: number;
  /** Where every generated series starts. Default 2024-01-01T00:00:00Z. */
  historyStartMs?: number;
  /** Values of the big series (`paths.bigSeries`), one per second. Default 100,000. */
  bigSeriesValues?: number;
  /** Child elements of `paths.wideElement`, so that listing them takes several pages. Default 2,500. */
  wideElementChildren?: number;
  /** Attributes of `paths.wideAttributesElement`. Default 1,200. */
  wideElementAttributes?: number;
}

export interface PlantModel {
  spec: PiModelSpec;
  /** Display paths of the objects tests usually need. */
  paths: {
    server: string;
    disconnectedServer: string;
    database: string;
    emptyDatabase: string;
    /** An element with three child Areas (each with Units, each with equipment). */
    site: string;
    /** An equipment element with numeric, integer, enumeration and static attributes. */
    pump: string;
    /** 100,000 (bigSeriesValues) Double values at 1 s from historyStartMs, about 1 % bad. */
    bigSeries: string;
    /** An EnumerationValue attribute: good values are {Name, Value, IsSystem: false}. */
    enumeration: string;
    /** An Int32 attribute. */
    integer: string;
    /** An attribute with recorded values and two child attributes. */
    withChildAttributes: string;
    /** A child attribute without a data reference: no recorded values. */
    staticAttribute: string;
    wideElement: string;
    wideAttributesElement: string;
  };
}

const PUMP_STATES = ['Running', 'Stopped', 'Tripped', 'Maintenance'];

/**
 * A plant of some size: one connected AF server with a Plant database (two sites, areas,
 * units and equipment, one element with thousands of children, one with over a thousand
 * attributes), an empty database, and a second server that is not connected.
 */
export function plantModel(options: PlantModelOptions = {}): PlantModel {
  const seed = options.seed ?? 1;
  const start = options.historyStartMs ?? Date.UTC(2024, 0, 1);
  const bigSeriesValues = options.bigSeriesValues ?? 100_000;
  const wideChildren = options.wideElementChildren ?? 2_500;
  const wideAttributes = options.wideElementAttributes ?? 1_200;
  const pad = (n: number, width: number) => String(n).padStart(width, '0');
  const minutesOfDay: GeneratedSeries = { startMs: start, intervalMs: 60_000, count: 1_440 };

  const equipment = (name: string, template: string, big: boolean): PiElementSpec => ({
    name,
    templateName: template,
    description: `${template} ${name}`,
    categoryNames: ['Equipment'],
    attributes: [
      {
        name: 'Temperature',
        units: { name: 'degree Celsius', abbreviation: '°C' },
        categoryNames: ['Process'],
        recorded: { ...minutesOfDay, base: 70, amplitude: 5 },
        attributes: [
          { name: 'Hi Limit', units: { name: 'degree Celsius', abbreviation: '°C' }, dataReference: null },
          { name: 'Lo Limit', units: { name: 'degree Celsius', abbreviation: '°C' }, dataReference: null },
        ],
      },
      {
        name: 'Pressure',
        units: { name: 'bar', abbreviation: 'bar' },
        categoryNames: ['Process'],
        recorded: { ...minutesOfDay, base: 6, amplitude: 0.5, noise: 0.1 },
      },
      {
        name: 'Flow',
        units: { name: 'cubic meter per hour', abbreviation: 'm3/h' },
        categoryNames: ['Process'],
        recorded: big ? { startMs: start, intervalMs: 1_000, count: bigSeriesValues, base: 120, amplitude: 15 } : { ...minutesOfDay, base: 120, amplitude: 15 },
      },
      {
        name: 'Status',
        type: 'EnumerationValue',
        typeQualifier: 'Pump Status',
        states: PUMP_STATES,
        recorded: { ...minutesOfDay, stateRunLength: 90 },
      },
      {
        name: 'Run Hours',
        type: 'Int32',
        units: { name: 'hour', abbreviation: 'h' },
        recorded: { ...minutesOfDay, base: 5_000, amplitude: 0, noise: 0, badRatio: 0 },
      },
      { name: 'Model Number', type: 'String', dataReference: null },
    ],
  });

  const unitElement = (area: number, unit: number): PiElementSpec => ({
    name: `Unit ${unit}`,
    templateName: 'Process Unit',
    description: `Process unit ${area}.${unit}`,
    elements: [
      equipment('Pump 1', 'Pump', area === 1 && unit === 1),
      equipment('Pump 2', 'Pump', false),
      equipment('Compressor', 'Compressor', false),
    ],
  });

  const spec: PiModelSpec = {
    seed,
    servers: [
      {
        name: 'PIAF01',
        description: 'Production asset server',
        databases: [
          {
            name: 'Plant',
            description: 'Plant asset model',
            elements: [
              {
                name: 'Site North',
                templateName: 'Site',
                description: 'Northern site',
                elements: [1, 2, 3].map((area) => ({
                  name: `Area ${area}`,
                  templateName: 'Area',
                  elements: [1, 2, 3, 4].map((unit) => unitElement(area, unit)),
                })),
              },
              {
                name: 'Site South',
                templateName: 'Site',
                description: 'Southern site',
                elements: [
                  {
                    name: 'Sensor Field',
                    description: 'Wireless sensors',
                    elements: Array.from({ length: wideChildren }, (_, i) => ({
                      name: `Sensor ${pad(i + 1, 5)}`,
                      templateName: 'Wireless Sensor',
                      attributes: [
                        {
                          name: 'Value',
                          units: { name: 'percent', abbreviation: '%' },
                          recorded: { startMs: start, intervalMs: 60_000, count: 60 },
                        },
                      ],
                    })),
                  },
                ],
              },
              {
                name: 'Utilities',
                elements: [
                  {
                    name: 'Analyzer Bank',
                    templateName: 'Analyzer',
                    attributes: Array.from({ length: wideAttributes }, (_, i) => ({
                      name: `Channel ${pad(i + 1, 4)}`,
                      recorded: { startMs: start, intervalMs: 60_000, count: 60 },
                    })),
                  },
                ],
              },
            ],
          },
          { name: 'Sandbox', description: 'Empty database' },
        ],
      },
      { name: 'PIAF02-DR', description: 'Disaster recovery asset server', isConnected: false },
    ],
  };

  const pump = '\\\\PIAF01\\Plant\\Site North\\Area 1\\Unit 1\\Pump 1';
  return {
    spec,
    paths: {
      server: '\\\\PIAF01',
      disconnectedServer: '\\\\PIAF02-DR',
      database: '\\\\PIAF01\\Plant',
      emptyDatabase: '\\\\PIAF01\\Sandbox',
      site: '\\\\PIAF01\\Plant\\Site North',
      pump,
      bigSeries: `${pump}|Flow`,
      enumeration: `${pump}|Status`,
      integer: `${pump}|Run Hours`,
      withChildAttributes: `${pump}|Temperature`,
      staticAttribute: `${pump}|Temperature|Hi Limit`,
      wideElement: '\\\\PIAF01\\Plant\\Site South\\Sensor Field',
      wideAttributesElement: '\\\\PIAF01\\Plant\\Utilities\\Analyzer Bank',
    },
  };
}
