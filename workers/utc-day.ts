/**
 * UTC days: the unit of every day file. A day number counts days since 1970-01-01; its file
 * name form is YYYYMMDD. Timestamps run to 2^53-1 ms (year 285,616), past what Date can show,
 * so the calendar arithmetic is done here (Howard Hinnant's days/civil algorithms) and years
 * after 9999 simply get more digits: the last four digits are always MMDD.
 */

export const DAY_MS = 86_400_000;

export function dayOf(timestampMs: number): number {
  return Math.floor(timestampMs / DAY_MS);
}

export function dayStartMs(day: number): number {
  return day * DAY_MS;
}

/** Last millisecond of the day. */
export function dayEndMs(day: number): number {
  return day * DAY_MS + DAY_MS - 1;
}

/** YYYYMMDD (UTC) of a day number >= 0. */
export function formatDay(day: number): string {
  const z = day + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  const y = yoe + era * 400 + (m <= 2 ? 1 : 0);
  return `${String(y).padStart(4, '0')}${String(m).padStart(2, '0')}${String(d).padStart(2, '0')}`;
}

/** Day number of a YYYYMMDD text, or null when it is not a real date in that exact form. */
export function parseDay(text: string): number | null {
  if (!/^\d{8,}$/.test(text)) return null;
  let y = Number(text.slice(0, -4));
  const m = Number(text.slice(-4, -2));
  const d = Number(text.slice(-2));
  if (m < 1 || m > 12 || d < 1 || d > 31) return null;
  y -= m <= 2 ? 1 : 0;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (m > 2 ? m - 3 : m + 9) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  const day = era * 146_097 + doe - 719_468;
  // Rejects 20240230 and leading zeros beyond four year digits: only the canonical text maps back.
  return day >= 0 && formatDay(day) === text ? day : null;
}
