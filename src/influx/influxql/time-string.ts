/**
 * InfluxQL's time strings, read as InfluxDB 1.6 reads them (`time > '2024-06-01T00:00:00Z'`,
 * `GROUP BY time(1h, '…')`). Pure TypeScript.
 *
 * A string is a time literal when it starts with `YYYY-MM-DD`. It is then one of:
 * - `YYYY-MM-DD` (midnight);
 * - `YYYY-MM-DD H:MM:SS[.frac]` (Go layout `2006-01-02 15:04:05.999999`): no zone;
 * - `YYYY-MM-DD[T]H:MM:SS[.frac]Z` or `…±hh:mm` (Go's RFC 3339 with nanoseconds).
 * Hours take one or two digits, other fields exactly two (year four); a fraction is `.` or `,`
 * then any number of digits (nanoseconds: the first nine count); fields are range-checked
 * (day within its month, leap years included). Anything else, or anything after, is not a time.
 */

import { daysFromCivil } from '../../../shared/civil-date.js';

export interface TimeString {
  /** Nanoseconds since the epoch, the wall time taken as UTC when the string has no zone. */
  ns: bigint;
  /** Whether the string gave its zone (`Z` or an offset); if not, the statement's tz() applies. */
  zoned: boolean;
}

function isDigit(c: string | undefined): boolean {
  return c !== undefined && c >= '0' && c <= '9';
}

/** Whether InfluxDB takes `s` for a time literal (it starts with YYYY-MM-DD). */
export function looksLikeTime(s: string): boolean {
  for (let i = 0; i < 10; i++) {
    if (i === 4 || i === 7 ? s[i] !== '-' : !isDigit(s[i])) return false;
  }
  return true;
}

function daysIn(month: number, year: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** The time `s` stands for, or null when InfluxDB answers `invalid timestamp string`. */
export function parseTimeString(s: string): TimeString | null {
  if (!looksLikeTime(s)) return null;
  const year = Number(s.slice(0, 4));
  const month = Number(s.slice(5, 7));
  const day = Number(s.slice(8, 10));
  if (month < 1 || month > 12 || day < 1 || day > daysIn(month, year)) return null;
  const dayNs = BigInt(daysFromCivil(year, month, day)) * 86_400_000_000_000n;
  if (s.length === 10) return { ns: dayNs, zoned: false };

  const separator = s[10];
  if (separator !== ' ' && separator !== 'T') return null;
  let i = 11;
  if (!isDigit(s[i])) return null;
  let hour = Number(s[i++]);
  if (isDigit(s[i])) hour = hour * 10 + Number(s[i++]);
  const two = (): number | null => {
    if (!isDigit(s[i]) || !isDigit(s[i + 1])) return null;
    const n = Number(s.slice(i, i + 2));
    i += 2;
    return n;
  };
  if (s[i++] !== ':') return null;
  const minute = two();
  if (minute === null || s[i++] !== ':') return null;
  const second = two();
  if (second === null || hour >= 24 || minute >= 60 || second >= 60) return null;
  let fraction = 0n;
  if ((s[i] === '.' || s[i] === ',') && isDigit(s[i + 1])) {
    i++;
    let digits = '';
    while (isDigit(s[i])) digits += s[i++];
    fraction = BigInt(digits.slice(0, 9).padEnd(9, '0'));
  }
  let ns = dayNs + BigInt(hour * 3600 + minute * 60 + second) * 1_000_000_000n + fraction;

  if (separator === ' ') return i === s.length ? { ns, zoned: false } : null;
  if (s[i] === 'Z') return i + 1 === s.length ? { ns, zoned: true } : null;
  const sign = s[i];
  if ((sign !== '+' && sign !== '-') || s.length !== i + 6 || s[i + 3] !== ':') return null;
  i++;
  const offsetHours = two();
  i++;
  const offsetMinutes = two();
  if (offsetHours === null || offsetMinutes === null) return null;
  const offsetNs = BigInt(offsetHours * 3600 + offsetMinutes * 60) * 1_000_000_000n;
  ns = sign === '+' ? ns - offsetNs : ns + offsetNs;
  return { ns, zoned: true };
}
