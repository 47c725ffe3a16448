// The time of a query parameter (`start`, `end`; WIRE.md part 3 "Time parameters and CSV"),
// read by a small grammar of its own rather than Date.parse, which takes nonsense ('1' is
// 2001-01-01 local time) and reads an ISO time without an offset as local time:
//
//   time      = epoch-ms | iso | relative
//   epoch-ms  = 1*DIGIT                                    (an integer up to 2^53-1)
//   iso       = date [ ("T" | "t") hh ":" mm [":" ss ["." 1*9DIGIT]] offset ]
//   date      = yyyy "-" MM "-" dd                         (a date alone is 00:00 UTC)
//   offset    = "Z" | "z" | sign hh [[":"] mm]             (required with a time of day)
//   sign      = "+" | "-" | " "                            (a "+" left unencoded in a URL arrives as a space)
//   relative  = "now" [ ("-" | "+") 1*(1*DIGIT unit) ]     (units largest first, each once)
//   unit      = "w" | "d" | "h" | "m" | "s" | "ms"
//
// Fraction digits past the millisecond are dropped. A result before the epoch is refused, except
// a relative one, which stops at 0 (`now-100000w` means "from the beginning", like the POST
// body's start_relative). Pure: no Node API.

import { daysFromCivil } from '../../shared/civil-date.js';

/** The accepted forms, for error messages and the OpenAPI document. */
export const TIME_PARAM_FORMS =
  'epoch milliseconds (1717200000000), an ISO 8601 time with an offset (2024-06-01T00:00:00Z, 2024-06-01T02:00:00.250+02:00) or date (2024-06-01, midnight UTC), or a time relative to now (now, now-15m, now-1h30m, now+1d; units w d h m s ms)';

export const MAX_TIME_MS = 9007199254740991;

/** A time, or why the text is none: `detail` is what is wrong with it, when more can be said than that. */
export type TimeParam = { ok: true; ms: number } | { ok: false; detail?: string };

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Relative units, largest first: a duration names them in this order, each at most once. */
const UNITS: ReadonlyArray<readonly [string, number]> = [['w', 7 * DAY], ['d', DAY], ['h', HOUR], ['m', MINUTE], ['s', SECOND], ['ms', 1]];

const EPOCH_MS = /^[0-9]+$/;
const ISO = /^([0-9]{4})-([0-9]{2})-([0-9]{2})(?:[Tt]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]{1,9}))?)?(?:([Zz])|([-+ ])([0-9]{2})(?::?([0-9]{2}))?)?)?$/;
const DURATION_PART = /([0-9]+)(ms|[wdhms])/y;

/** Reads `text` as a time, evaluating relative forms against `now` (epoch ms). */
export function parseTimeParam(text: string, now: number): TimeParam {
  if (EPOCH_MS.test(text)) {
    const ms = Number(text);
    return ms <= MAX_TIME_MS ? { ok: true, ms } : { ok: false, detail: 'past 2^53-1 ms' };
  }
  if (text.startsWith('now')) return relative(text, now);
  const iso = ISO.exec(text);
  if (iso) return isoTime(iso);
  return { ok: false };
}

function relative(text: string, now: number): TimeParam {
  if (text === 'now') return { ok: true, ms: now };
  const sign = text[3];
  if ((sign !== '-' && sign !== '+') || text.length === 4) return { ok: false, detail: 'after "now" comes - or + and a duration such as 15m or 1h30m' };
  let total = 0;
  let nextUnit = 0;
  DURATION_PART.lastIndex = 4;
  while (DURATION_PART.lastIndex < text.length) {
    const at = DURATION_PART.lastIndex;
    const part = DURATION_PART.exec(text);
    if (!part || part.index !== at) return { ok: false, detail: `"${text.slice(4)}" is not a duration: numbers each followed by a unit, such as 1h30m` };
    const unit = UNITS.findIndex(([name]) => name === part[2]);
    if (unit < nextUnit) return { ok: false, detail: `in "${text.slice(4)}" the units must come largest first, each once` };
    nextUnit = unit + 1;
    total += Number(part[1]) * UNITS[unit][1];
  }
  if (!(total <= MAX_TIME_MS)) return { ok: false, detail: 'the duration is longer than 2^53-1 ms' };
  const ms = sign === '-' ? now - total : now + total;
  if (ms > MAX_TIME_MS) return { ok: false, detail: 'past 2^53-1 ms' };
  return { ok: true, ms: Math.max(0, ms) };
}

function isoTime(m: RegExpExecArray): TimeParam {
  const [, yyyy, MM, dd, hh, mm, ss, fraction, zulu, sign, offH, offM] = m;
  const year = Number(yyyy);
  const month = Number(MM);
  const day = Number(dd);
  if (month < 1 || month > 12) return { ok: false, detail: `there is no month ${MM}` };
  if (day < 1 || day > daysInMonth(year, month)) return { ok: false, detail: `${yyyy}-${MM} has no day ${dd}` };
  let ms = daysFromCivil(year, month, day) * DAY;
  if (hh !== undefined) {
    if (zulu === undefined && sign === undefined) return { ok: false, detail: 'a time of day needs its UTC offset, Z or +02:00: the service does not guess time zones' };
    const hours = Number(hh);
    const minutes = Number(mm);
    const seconds = ss === undefined ? 0 : Number(ss);
    if (hours > 23 || minutes > 59 || seconds > 59) return { ok: false, detail: `${hh}:${mm}${ss === undefined ? '' : `:${ss}`} is not a time of day` };
    const millis = fraction === undefined ? 0 : Number(fraction.slice(0, 3).padEnd(3, '0'));
    ms += hours * HOUR + minutes * MINUTE + seconds * SECOND + millis;
    if (sign !== undefined) {
      const offsetHours = Number(offH);
      const offsetMinutes = offM === undefined ? 0 : Number(offM);
      if (offsetHours > 23 || offsetMinutes > 59) return { ok: false, detail: `${offH}:${offM ?? '00'} is not a UTC offset` };
      // The local time is ahead of UTC by a positive offset: UTC = local - offset.
      const offset = offsetHours * HOUR + offsetMinutes * MINUTE;
      ms += sign === '-' ? offset : -offset;
    }
  }
  if (ms < 0) return { ok: false, detail: 'before 1970-01-01T00:00:00Z, the earliest time the store holds' };
  return { ok: true, ms };
}

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

function daysInMonth(year: number, month: number): number {
  return month === 2 ? (isLeapYear(year) ? 29 : 28) : [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];
}

