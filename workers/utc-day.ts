/**
 * UTC days: the unit of every day file. A day number counts days since 1970-01-01; its file
 * name form is YYYYMMDD. Timestamps run to 2^53-1 ms (year 285,616), past what Date can show,
 * so the calendar arithmetic is done without it (shared/civil-date.ts) and years after 9999
 * simply get more digits: the last four digits are always MMDD.
 */

import { civilFromDays } from '../shared/civil-date.js';

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
  const { year, month, dayOfMonth } = civilFromDays(day);
  return `${String(year).padStart(4, '0')}${String(month).padStart(2, '0')}${String(dayOfMonth).padStart(2, '0')}`;
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
