// Times of the import and export commands: the `time` column of a CSV file (epoch ms, or RFC 3339
// as the service's CSV writes it with time_format=iso, as pandas writes it, or with an offset),
// and the --from / --to of an export (what the service's query parameters take).

import { daysFromCivil } from '../../shared/civil-date.js';
import { MAX_TIME_MS, parseTimeParam, TIME_PARAM_FORMS } from '../http/time-param.js';

const DAY = 86_400_000;
/**
 * RFC 3339 / ISO 8601: a date, optionally a time of day (separated by T or a space, as pandas
 * writes it) with seconds and any fraction, then Z or an offset. Years past 9999 as the service
 * writes them (`+012345`).
 */
const ISO = /^([+-][0-9]{6}|[0-9]{4})-([0-9]{2})-([0-9]{2})(?:[Tt ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:[.,]([0-9]+))?)? ?(?:([Zz])|([-+])([0-9]{2})(?::?([0-9]{2}))?)?)?$/;
const DIGITS = /^[0-9]+$/;
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * Epoch ms of a CSV time, or what is wrong with it. Digits past the millisecond are dropped
 * (as the service does with its time parameters).
 */
export function parseCsvTime(text: string): number | string {
  if (DIGITS.test(text)) {
    const ms = Number(text);
    return ms <= MAX_TIME_MS ? ms : `time ${JSON.stringify(text)} is past 2^53-1 ms`;
  }
  const m = ISO.exec(text);
  if (!m) return `time ${JSON.stringify(shorten(text))} is neither epoch milliseconds nor an RFC 3339 time (2024-06-01T00:00:00.000Z)`;
  const [, yyyy, MM, dd, hh, mm, ss, fraction, zulu, sign, offH, offM] = m;
  const year = Number(yyyy);
  const month = Number(MM);
  const day = Number(dd);
  if (month < 1 || month > 12) return `time ${JSON.stringify(text)}: there is no month ${MM}`;
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  if (day < 1 || day > (month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1])) return `time ${JSON.stringify(text)}: ${yyyy}-${MM} has no day ${dd}`;
  let ms = daysFromCivil(year, month, day) * DAY;
  if (hh !== undefined) {
    if (zulu === undefined && sign === undefined) return `time ${JSON.stringify(text)} has no UTC offset (Z or +02:00): the import does not guess time zones`;
    const hours = Number(hh);
    const minutes = Number(mm);
    const seconds = ss === undefined ? 0 : Number(ss);
    if (hours > 23 || minutes > 59 || seconds > 59) return `time ${JSON.stringify(text)}: ${hh}:${mm} is not a time of day`;
    ms += hours * 3_600_000 + minutes * 60_000 + seconds * 1000 + (fraction === undefined ? 0 : Number(fraction.slice(0, 3).padEnd(3, '0')));
    if (sign !== undefined) {
      const offset = Number(offH) * 3_600_000 + (offM === undefined ? 0 : Number(offM)) * 60_000;
      if (Number(offH) > 23 || Number(offM ?? 0) > 59) return `time ${JSON.stringify(text)}: ${offH}:${offM ?? '00'} is not a UTC offset`;
      ms += sign === '-' ? offset : -offset;
    }
  }
  if (ms < 0 || ms > MAX_TIME_MS) return `time ${JSON.stringify(text)} is outside 1970-01-01 .. 2^53-1 ms`;
  return ms;
}

/** An export's --from / --to: epoch ms, RFC 3339, a date, or relative to now (`now-1h`). */
export function parseTimeOption(value: number | string, name: string): number {
  if (typeof value === 'number') {
    if (Number.isInteger(value) && value >= 0 && value <= MAX_TIME_MS) return value;
    throw new Error(`${name} ${value} is not epoch milliseconds (an integer from 0 to 2^53-1)`);
  }
  const parsed = parseTimeParam(value.trim(), Date.now());
  if (parsed.ok) return parsed.ms;
  throw new Error(`${name} ${JSON.stringify(value)} is not a time${parsed.detail ? ` (${parsed.detail})` : ''}; use ${TIME_PARAM_FORMS}`);
}

function shorten(text: string): string {
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}
