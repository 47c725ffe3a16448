/**
 * Aggregator specs of the query bodies (WIRE.md "POST query body"): their types, and parsing and
 * validation, which the main thread runs to answer 400 before dispatch. Specs are plain data,
 * so they cross the thread boundary as they are; workers/aggregators.ts runs them.
 *
 * Pure computation: no I/O, no Node built-ins.
 */

import { TIME_UNITS, UNIT_MS, addMonthsUtc, isCalendarUnit, type Sampling, type TimeUnit } from './time-units.js';

export const SAMPLING_AGGREGATORS = ['avg', 'min', 'max', 'sum', 'count', 'first', 'last', 'dev', 'gaps', 'percentile'] as const;
export const AGGREGATOR_NAMES = [...SAMPLING_AGGREGATORS, 'diff', 'rate', 'sampler', 'scale', 'div', 'filter', 'trim'] as const;
export const FILTER_OPS = ['lt', 'lte', 'gt', 'gte', 'equal', 'ne'] as const;
export const TRIM_MODES = ['first', 'last', 'both'] as const;

export type FilterOp = (typeof FILTER_OPS)[number];
export type TrimMode = (typeof TRIM_MODES)[number];

interface RangeFlags {
  sampling: Sampling;
  align_sampling: boolean;
  align_start_time: boolean;
  align_end_time: boolean;
}

/** A step that buckets by `sampling`. */
export type SamplingStep =
  | ({ name: 'avg' | 'min' | 'max' | 'sum' | 'count' | 'first' | 'last' | 'dev' | 'gaps' } & RangeFlags)
  | ({ name: 'percentile'; percentile: number } & RangeFlags);

export type AggregatorSpec =
  | SamplingStep
  | { name: 'diff' }
  | { name: 'rate'; unit: TimeUnit }
  | { name: 'sampler'; unit: TimeUnit }
  | { name: 'scale'; factor: number }
  | { name: 'div'; divisor: number }
  | { name: 'filter'; filter_op: FilterOp; threshold: number }
  | { name: 'trim'; trim: TrimMode }
  | PromqlWindowStep;

/**
 * Internal, never parsed from a request: a PromQL range-vector function (shared/promql-windows.ts)
 * evaluated over the scan for a step grid. Step i's window ends at `first_end + i × step_ms`
 * (at `first_end` for every step when `fixed_end`, the `@` modifier) and spans `range_ms`; the
 * output has one point per step with a result, its timestamp the step's index. `arg` is
 * quantile_over_time's φ. `fn` LOOKBACK samples an instant vector selector instead (range_ms
 * is then the lookback, and the window's end the step's reference time).
 */
export interface PromqlWindowStep {
  name: 'promql_window';
  fn: string;
  range_ms: number;
  first_end: number;
  step_ms: number;
  steps: number;
  fixed_end: boolean;
  arg: number;
  /**
   * Set when the series' results are aggregated across series in the worker (`sum by (…)
   * (rate(…))`): series of one `key` are combined step by step with `op`, and the result comes
   * back once per key (the main thread combines the keys' partial results of several shards).
   */
  group?: { key: string; op: PromqlGroupOp };
}

/** The aggregations a worker runs across series (each combines with itself: partials merge). */
export type PromqlGroupOp = 'sum' | 'min' | 'max' | 'count' | 'group';

/** A bad aggregator spec; the message starts with the path of the offending field. */
export class AggregatorError extends Error {
  override name = 'AggregatorError';
}

// ---------------------------------------------------------------------------------------------
// Parsing

/** A value as it appears in a message: JSON, cut short, "nothing" when absent. */
function shown(x: unknown): string {
  if (x === undefined) return 'nothing';
  let text: string;
  try {
    text = JSON.stringify(x) ?? String(x);
  } catch {
    text = String(x);
  }
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

function oneOf(list: readonly string[]): string {
  return list.join(', ');
}

/** A unit name, case-insensitive (KairosDB accepts "MINUTES"); returned in lower case. */
export function parseTimeUnit(input: unknown, path: string): TimeUnit {
  if (input === undefined) throw new AggregatorError(`${path}: is required (one of ${oneOf(TIME_UNITS)})`);
  const unit = typeof input === 'string' ? input.toLowerCase() : input;
  if (!(TIME_UNITS as readonly unknown[]).includes(unit)) {
    throw new AggregatorError(`${path}: must be one of ${oneOf(TIME_UNITS)}, got ${shown(input)}`);
  }
  return unit as TimeUnit;
}

/** `{value, unit}` with a positive integer value; a string of digits counts (clients send "1"). */
export function parseSampling(input: unknown, path: string): Sampling {
  if (!isObject(input)) throw new AggregatorError(`${path}: must be an object {value, unit}, got ${shown(input)}`);
  const raw = input.value;
  const value = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : raw;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new AggregatorError(`${path}.value: must be a positive integer, got ${shown(raw)}`);
  }
  return { value, unit: parseTimeUnit(input.unit, `${path}.unit`) };
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/** A finite number, or a decimal string of one (JSON-loose clients); null when neither. */
function looseNumber(x: unknown): number | null {
  if (typeof x === 'number') return Number.isFinite(x) ? x : null;
  if (typeof x === 'string' && /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(x)) {
    const n = Number(x);
    return Number.isFinite(n) ? n : null;
  }
  return null;
}

function flag(step: Record<string, unknown>, key: string, path: string): boolean {
  const value = step[key];
  if (value === undefined || value === null) return false;
  if (typeof value !== 'boolean') throw new AggregatorError(`${path}.${key}: must be true or false, got ${shown(value)}`);
  return value;
}

function pick<T extends string>(value: unknown, list: readonly T[], path: string): T {
  if (!(list as readonly unknown[]).includes(value)) {
    throw new AggregatorError(`${path}: must be one of ${oneOf(list)}, got ${shown(value)}`);
  }
  return value as T;
}

/**
 * Validates a list of aggregator specs (undefined is an empty list) and returns them normalised:
 * only the known fields, flags defaulted to false, units in lower case. Unknown keys are
 * ignored. Messages start with `path[i]`, e.g. `pipeline[0].sampling.unit: must be one of ...`.
 */
export function parseAggregators(input: unknown, path: string): AggregatorSpec[] {
  if (input === undefined) return [];
  if (!Array.isArray(input)) throw new AggregatorError(`${path}: must be an array of aggregators, got ${shown(input)}`);
  return input.map((step, i) => parseStep(step, `${path}[${i}]`));
}

function parseStep(input: unknown, path: string): AggregatorSpec {
  if (!isObject(input)) throw new AggregatorError(`${path}: must be an aggregator object, got ${shown(input)}`);
  const name = input.name;
  if (typeof name !== 'string') {
    throw new AggregatorError(`${path}.name: must be one of ${oneOf(AGGREGATOR_NAMES)}, got ${shown(name)}`);
  }
  switch (name) {
    case 'avg':
    case 'min':
    case 'max':
    case 'sum':
    case 'count':
    case 'first':
    case 'last':
    case 'dev':
    case 'gaps':
      return { name, ...rangeFlags(input, name, path) };
    case 'percentile': {
      const p = looseNumber(input.percentile);
      if (p === null || p < 0 || p > 1) {
        const got = input.percentile === undefined ? '' : `, got ${shown(input.percentile)}`;
        throw new AggregatorError(`${path}.percentile: must be a number from 0 to 1${got}`);
      }
      return { name, percentile: p, ...rangeFlags(input, name, path) };
    }
    case 'diff':
      return { name };
    case 'rate':
    case 'sampler': {
      // Some KairosDB clients put the unit in `sampling`; `unit` wins when both are there.
      const sampling = isObject(input.sampling) ? input.sampling : undefined;
      const unitPath = input.unit === undefined && sampling?.unit !== undefined ? `${path}.sampling.unit` : `${path}.unit`;
      return { name, unit: parseTimeUnit(input.unit ?? sampling?.unit, unitPath) };
    }
    case 'scale': {
      const factor = looseNumber(input.factor);
      if (factor === null) throw new AggregatorError(`${path}.factor: must be a finite number, got ${shown(input.factor)}`);
      return { name, factor };
    }
    case 'div': {
      const divisor = looseNumber(input.divisor);
      if (divisor === null || divisor === 0) {
        throw new AggregatorError(`${path}.divisor: must be a non-zero number, got ${shown(input.divisor)}`);
      }
      return { name, divisor };
    }
    case 'filter': {
      const filterOp = pick(input.filter_op, FILTER_OPS, `${path}.filter_op`);
      const threshold = looseNumber(input.threshold);
      if (threshold === null) throw new AggregatorError(`${path}.threshold: must be a finite number, got ${shown(input.threshold)}`);
      return { name, filter_op: filterOp, threshold };
    }
    case 'trim':
      return { name, trim: pick(input.trim, TRIM_MODES, `${path}.trim`) };
    default:
      throw new AggregatorError(`${path}: unknown aggregator ${shown(name)} (known: ${oneOf(AGGREGATOR_NAMES)})`);
  }
}

function rangeFlags(input: Record<string, unknown>, name: string, path: string): RangeFlags {
  if (input.sampling === undefined || input.sampling === null) {
    throw new AggregatorError(`${path}.sampling: is required for "${name}" ({value, unit})`);
  }
  return {
    sampling: parseSampling(input.sampling, `${path}.sampling`),
    align_sampling: flag(input, 'align_sampling', path),
    align_start_time: flag(input, 'align_start_time', path),
    align_end_time: flag(input, 'align_end_time', path),
  };
}

/**
 * KairosDB start_relative / end_relative: `now` minus the amount. Months and years go back in
 * calendar months (Mar 31 minus 1 month is Feb 28/29) and count whole units only, as KairosDB's
 * integer field does; fixed units use the value as given.
 */
export function relativeToAbsolute(rel: { value: number; unit: TimeUnit }, now: number): number {
  if (isCalendarUnit(rel.unit)) return addMonthsUtc(now, -Math.trunc(rel.value) * (rel.unit === 'years' ? 12 : 1));
  return now - rel.value * UNIT_MS[rel.unit];
}

export function isSamplingStep(spec: AggregatorSpec): spec is SamplingStep {
  return 'sampling' in spec;
}

