/**
 * Time units of the KairosDB-like query body and the bucket grid the sampling aggregators use.
 * Everything is UTC. Months and years are calendar-aware: adding months keeps the time of day
 * and clamps the day to the target month's length (Jan 31 + 1 month = Feb 28 or 29), as Java's
 * calendars do for KairosDB. Pure arithmetic; Date objects are made per bucket, never per point.
 */

export const TIME_UNITS = ['milliseconds', 'seconds', 'minutes', 'hours', 'days', 'weeks', 'months', 'years'] as const;
export type TimeUnit = (typeof TIME_UNITS)[number];

export interface Sampling {
  value: number;
  unit: TimeUnit;
}

const SECOND_MS = 1000;
const MINUTE_MS = 60 * SECOND_MS;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;
const WEEK_MS = 7 * DAY_MS;

/**
 * Length of one unit in ms. Months and years have no fixed length; where one number is needed
 * (rate and sampler) they count as 30 and 365 days.
 */
export const UNIT_MS: Readonly<Record<TimeUnit, number>> = {
  milliseconds: 1,
  seconds: SECOND_MS,
  minutes: MINUTE_MS,
  hours: HOUR_MS,
  days: DAY_MS,
  weeks: WEEK_MS,
  months: 30 * DAY_MS,
  years: 365 * DAY_MS,
};

/** 1970-01-05T00:00Z, the first Monday after the epoch: week buckets are aligned on Mondays (ISO weeks). */
export const FIRST_MONDAY_MS = 4 * DAY_MS;

/** Date's own limit (±100,000,000 days around the epoch); calendar sums beyond it become ±Infinity. */
const MAX_DATE_MS = 8.64e15;

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

export function isCalendarUnit(unit: TimeUnit): unit is 'months' | 'years' {
  return unit === 'months' || unit === 'years';
}

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

function daysInMonth(year: number, month: number): number {
  return month === 1 && isLeapYear(year) ? 29 : DAYS_IN_MONTH[month];
}

/** Midnight UTC of a date; setUTCFullYear because Date.UTC reads years 0..99 as 1900..1999. */
function utcMidnight(year: number, month: number, day: number): number {
  const d = new Date(0);
  d.setUTCFullYear(year, month, day);
  return d.getTime();
}

/** Months since year 0 of the UTC month holding `t`. */
function monthNumber(t: number): number {
  const d = new Date(t);
  return d.getUTCFullYear() * 12 + d.getUTCMonth();
}

/**
 * `t` plus `months` calendar months (negative goes back), keeping the time of day and clamping
 * the day of month. Results outside Date's range are ±Infinity, so bucket loops still end.
 */
export function addMonthsUtc(t: number, months: number): number {
  if (months === 0) return t;
  const d = new Date(t);
  const total = d.getUTCMonth() + months;
  const year = d.getUTCFullYear() + Math.floor(total / 12);
  const month = total - 12 * Math.floor(total / 12);
  const msOfDay = ((t % DAY_MS) + DAY_MS) % DAY_MS;
  const result = utcMidnight(year, month, Math.min(d.getUTCDate(), daysInMonth(year, month))) + msOfDay;
  if (Number.isNaN(result)) return months > 0 ? Infinity : -Infinity;
  return result;
}

/**
 * Where sampling buckets start and end. Bucket i covers [startOf(i), startOf(i + 1)); i may be
 * negative (points before the origin). Fixed units: origin + i * width. Months and years: the
 * origin plus i * value calendar months, always counted from the origin so clamping never
 * accumulates (from Jan 31: Feb 29, Mar 31, Apr 30, ...).
 *
 * The origin is the range start, or with align_sampling the start of the unit period holding
 * it: fixed units to a multiple of the bucket width since the epoch (weeks: since Monday
 * 1970-01-05, so weekly buckets start on Mondays), months to the 1st of the month, years to
 * January 1st.
 */
export class BucketGrid {
  readonly origin: number;
  /** Bucket length in ms (fixed units), else 0. */
  private readonly width: number;
  /** Bucket length in months (months, years), else 0. */
  private readonly months: number;
  private readonly originMonth: number;

  constructor(sampling: Sampling, alignSampling: boolean, rangeStart: number) {
    const { value, unit } = sampling;
    if (isCalendarUnit(unit)) {
      this.width = 0;
      this.months = unit === 'years' ? value * 12 : value;
      let origin = rangeStart;
      if (alignSampling) {
        const d = new Date(Math.max(-MAX_DATE_MS, Math.min(MAX_DATE_MS, rangeStart)));
        origin = utcMidnight(d.getUTCFullYear(), unit === 'years' ? 0 : d.getUTCMonth(), 1);
      }
      this.origin = origin;
      this.originMonth = monthNumber(Math.max(-MAX_DATE_MS, Math.min(MAX_DATE_MS, origin)));
    } else {
      this.width = value * UNIT_MS[unit];
      this.months = 0;
      this.originMonth = 0;
      const epoch = unit === 'weeks' ? FIRST_MONDAY_MS : 0;
      this.origin = alignSampling ? epoch + Math.floor((rangeStart - epoch) / this.width) * this.width : rangeStart;
    }
  }

  startOf(i: number): number {
    return this.months === 0 ? this.origin + i * this.width : addMonthsUtc(this.origin, i * this.months);
  }

  /** Index of the bucket holding `t`. */
  indexOf(t: number): number {
    let i: number;
    if (this.months === 0) {
      i = Math.floor((t - this.origin) / this.width);
    } else {
      // The month count is a first guess: clamping and the time of day can move a boundary
      // into the previous or next month.
      const month = monthNumber(Math.max(-MAX_DATE_MS, Math.min(MAX_DATE_MS, t)));
      i = Math.floor((month - this.originMonth) / this.months);
    }
    // Corrects the guess (and float rounding of the division for very wide fixed buckets).
    while (this.startOf(i) > t) i--;
    while (this.startOf(i + 1) <= t) i++;
    return i;
  }
}
