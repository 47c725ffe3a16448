// PI time strings for the PI Web API simulator: an optional date-time part and an optional
// interval part, as PI Web API documents them ("Time Strings").
//
//   date-time part   *  (now)  |  t, today  |  y, yesterday  |  ISO 8601 (Z, offset, or none)
//                    |  the same ISO text in single or double quotes  |  nothing (now)
//   interval part    one {+|-}<number><unit>; units s m h d w mo y and their long forms;
//                    fractions only for seconds, minutes and hours (as PI)
//
// The simulated server runs in UTC: today, yesterday and ISO text without a zone are UTC.
// Weekday and month names, bare day-of-month or year numbers and hh:mm:ss intervals are
// not simulated and are refused like any unparsable string.

export class TimeStringError extends Error {}

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

type Unit = { ms: number } | { months: number };
const UNITS: Record<string, Unit> = {};
for (const name of ['s', 'sec', 'second', 'seconds']) UNITS[name] = { ms: SECOND };
for (const name of ['m', 'min', 'minute', 'minutes']) UNITS[name] = { ms: MINUTE };
for (const name of ['h', 'hr', 'hour', 'hours']) UNITS[name] = { ms: HOUR };
for (const name of ['d', 'day', 'days']) UNITS[name] = { ms: DAY };
for (const name of ['w', 'week', 'weeks']) UNITS[name] = { ms: 7 * DAY };
for (const name of ['mo', 'month', 'months']) UNITS[name] = { months: 1 };
for (const name of ['y', 'year', 'years']) UNITS[name] = { months: 12 };
const FRACTIONAL_UNITS = new Set([SECOND, MINUTE, HOUR]);

const INTERVAL = /^(.*?)\s*([+-])\s*(\d+(?:\.\d+)?)\s*([a-z]+)$/i;
const ISO =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,7}))?)?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

/** Epoch milliseconds for a PI time string, `nowMs` being the server's current time. */
export function parsePiTime(text: string, nowMs: number): number {
  const trimmed = text.trim();
  const interval = INTERVAL.exec(trimmed);
  if (interval) {
    const [, base, sign, amount, unitName] = interval as unknown as [string, string, string, string, string];
    const unit = UNITS[unitName.toLowerCase()];
    if (unit === undefined) throw new TimeStringError(`unknown interval unit '${unitName}'`);
    const count = Number(amount) * (sign === '-' ? -1 : 1);
    const reference = parseDateTime(base, nowMs, text);
    if ('ms' in unit) {
      if (!Number.isInteger(count) && !FRACTIONAL_UNITS.has(unit.ms)) throw new TimeStringError(`fractional '${unitName}' in '${text}'`);
      return reference + Math.round(count * unit.ms);
    }
    if (!Number.isInteger(count)) throw new TimeStringError(`fractional '${unitName}' in '${text}'`);
    return addMonths(reference, count * unit.months);
  }
  return parseDateTime(trimmed, nowMs, text);
}

function parseDateTime(part: string, nowMs: number, whole: string): number {
  const text = part.trim();
  const lower = text.toLowerCase();
  if (text === '' || text === '*') return nowMs;
  if (lower === 't' || lower === 'today') return startOfUtcDay(nowMs);
  if (lower === 'y' || lower === 'yesterday') return startOfUtcDay(nowMs) - DAY;
  const unquoted = /^(['"])(.*)\1$/.exec(text)?.[2] ?? text;
  const ms = parseIso(unquoted);
  if (ms === null) throw new TimeStringError(`cannot read '${whole}' as a time`);
  return ms;
}

function parseIso(text: string): number | null {
  const m = ISO.exec(text.trim());
  if (!m) return null;
  const [, y, mo, d, h = '0', mi = '0', s = '0', frac = '', zone] = m as unknown as string[];
  const year = Number(y);
  const month = Number(mo) - 1;
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(s);
  const local = Date.UTC(year, month, day, hour, minute, second) + Math.round(Number(`0.${frac || '0'}`) * 1000);
  // Date.UTC rolls 2024-02-30 over into March; a real calendar date survives the round trip.
  const check = new Date(local);
  if (check.getUTCFullYear() !== year || check.getUTCMonth() !== month || check.getUTCDate() !== day) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  if (zone === undefined || zone.toUpperCase() === 'Z') return local;
  const z = /^([+-])(\d{2}):?(\d{2})?$/.exec(zone)!;
  const offsetMinutes = (Number(z[2]) * 60 + Number(z[3] ?? '0')) * (z[1] === '-' ? -1 : 1);
  if (Math.abs(offsetMinutes) > 14 * 60) return null;
  return local - offsetMinutes * MINUTE;
}

function startOfUtcDay(ms: number): number {
  return Math.floor(ms / DAY) * DAY;
}

/** Calendar months, keeping the time of day; the day is clamped to the target month's length. */
function addMonths(ms: number, months: number): number {
  const date = new Date(ms);
  const day = date.getUTCDate();
  date.setUTCDate(1);
  date.setUTCMonth(date.getUTCMonth() + months);
  const lastDay = new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 0)).getUTCDate();
  date.setUTCDate(Math.min(day, lastDay));
  return date.getTime();
}

/** A timestamp as PI Web API writes it: ISO 8601 UTC, fractional seconds only when there are some. */
export function formatPiTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d*?)0*Z$/, (_, digits: string) => (digits ? `.${digits}Z` : 'Z'));
}
