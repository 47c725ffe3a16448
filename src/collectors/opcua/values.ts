// One OPC UA DataValue as a stored number, or the reason it is not stored. Shared by live
// notifications and HistoryRead back-fill so both skip and convert alike.

import type { DataValue } from 'node-opcua-client';

export const SKIP_BAD = 'bad status';
export const SKIP_UNCERTAIN = 'uncertain status';
export const SKIP_NOT_NUMERIC = 'not numeric';
export const SKIP_OLD = 'timestamp before 1973';
/** storage.minTimestampMs's default: a device whose clock was never set sends 1970 (or 1601) times, refused by storage anyway. */
const MIN_TIMESTAMP_MS = 100_000_000_000;

// node-opcua's DataType numbers (OPC UA built-in type ids), so this file needs no import of it.
const BOOLEAN = 1;
const INT64 = 8;
const UINT64 = 9;
const NUMBER_TYPES = new Set([2, 3, 4, 5, 6, 7, 10, 11]);
const SCALAR = 0;

/** `now` stands in when the server gives neither a source nor a server timestamp. */
export function convertDataValue(dv: DataValue, keepUncertain: boolean, now: number): { value: number; ts: number } | string {
  // StatusCode severity: the top two bits, 00 Good, 01 Uncertain, 10/11 Bad.
  const severity = (dv.statusCode?.value ?? 0) >>> 30;
  if (severity >= 2) return SKIP_BAD;
  if (severity === 1 && !keepUncertain) return SKIP_UNCERTAIN;
  const variant = dv.value;
  if (!variant || variant.arrayType !== SCALAR) return SKIP_NOT_NUMERIC;
  let value: number;
  const raw = variant.value as unknown;
  if (variant.dataType === BOOLEAN) value = raw ? 1 : 0;
  else if (NUMBER_TYPES.has(variant.dataType)) value = raw as number;
  else if (variant.dataType === INT64 || variant.dataType === UINT64) {
    // node-opcua gives 64-bit integers as [high, low] 32-bit words; beyond 2^53 precision is lost, as in JSON.
    if (!Array.isArray(raw) || raw.length !== 2) return SKIP_NOT_NUMERIC;
    const [high, low] = raw as [number, number];
    value = (variant.dataType === INT64 ? high | 0 : high >>> 0) * 4294967296 + (low >>> 0);
  } else return SKIP_NOT_NUMERIC;
  if (typeof value !== 'number' || !Number.isFinite(value)) return SKIP_NOT_NUMERIC;
  const ts = timestampOf(dv, now);
  if (ts < MIN_TIMESTAMP_MS) return SKIP_OLD;
  return { value, ts };
}

/** The source timestamp, else the server's, else now (OPC UA's "no time" is null or 1601-01-01). */
function timestampOf(dv: DataValue, now: number): number {
  const source = dv.sourceTimestamp?.getTime();
  if (source !== undefined && Number.isFinite(source) && source > 0) return source;
  const server = dv.serverTimestamp?.getTime();
  if (server !== undefined && Number.isFinite(server) && server > 0) return server;
  return now;
}
