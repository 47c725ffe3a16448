/**
 * The names of the files a collection folder holds (`<dataDir>/ts/<org>/<site>/<unit>/<grid>/`),
 * shared by the storage workers that write and recover them, the data-dir check and the backup
 * restore that verifies an archive: one list, so a file the store writes is never refused by a
 * restore or passed over by a check (frozen day logs were, when each kept its own copy).
 * Layout and formats: workers/README.md.
 */

export const META_FILE = 'meta.json';
export const TAG_LOG_FILE = 'tags.log';
/**
 * Day logs. One with a generation (`active-YYYYMMDD-GGGGGGGG.log`) is frozen: no longer
 * written, waiting to become part GGGGGGGG (DayMaintenance in workers/day-maintenance.ts).
 */
export const DAY_LOG_FILE = /^(active|late)-(\d{8,})(?:-(\d{8}))?\.log$/;
export const SEALED_FILE = /^sealed-(\d{8,})\.hsd$/;
/** A part: day logs compacted before their day is sealed (sealed format; day, then generation). */
export const PART_FILE = /^part-(\d{8,})-(\d{8})\.hsd$/;

/** True for the name of a file the store keeps in a collection folder (not a temporary or set-aside one). */
export function isCollectionFileName(name: string): boolean {
  return name === META_FILE || name === TAG_LOG_FILE || DAY_LOG_FILE.test(name) || SEALED_FILE.test(name) || PART_FILE.test(name);
}
