// CSV of what the chart shows: the raw points (not the buckets) of the picked series over the
// shown range, one GET fast_query per collection (scope parameters name one collection), joined
// under one `time,tag,value` header (WIRE.md part 3 "Time parameters and CSV").

import { queryString, type Api } from '../api.js';
import { h } from '../dom.js';
import { dateTime } from '../format.js';
import { scopeOf, type SeriesRef } from './model.js';

const HEADER = 'time,tag,value';

/** `20240601-140307`: a file name part in local time, like the times on screen. */
const stamp = (ms: number) => dateTime(ms).replace(/[-:]/g, '').replace(' ', '-');

/** The joined CSV text (CRLF, as the service writes it). */
export async function fetchCsv(api: Api, series: readonly SeriesRef[], from: number, to: number, signal?: AbortSignal): Promise<string> {
  const byCollection = new Map<string, string[]>();
  for (const s of series) {
    const tags = byCollection.get(s.collection) ?? [];
    if (!tags.includes(s.tag)) tags.push(s.tag);
    byCollection.set(s.collection, tags);
  }
  const parts = await Promise.all([...byCollection].map(async ([collection, tags]) => {
    const query = { ...scopeOf(collection), tags, start: Math.floor(from), end: Math.ceil(to), format: 'csv' };
    const text = await (await api.fetch(`/svcapi/fast_query${queryString(query)}`, { signal })).text();
    // Each answer starts with its own header line: keep the rows only.
    const firstBreak = text.indexOf('\n');
    const header = firstBreak < 0 ? text : text.slice(0, firstBreak).trim();
    if (header !== HEADER) throw new Error(`${collection}: unexpected CSV header ${JSON.stringify(header.slice(0, 40))}`);
    return firstBreak < 0 ? '' : text.slice(firstBreak + 1);
  }));
  return `${HEADER}\r\n${parts.join('')}`;
}

/** Fetches the CSV and hands it to the browser as a download. */
export async function downloadCsv(api: Api, series: readonly SeriesRef[], from: number, to: number, signal?: AbortSignal): Promise<void> {
  const text = await fetchCsv(api, series, from, to, signal);
  const url = URL.createObjectURL(new Blob([text], { type: 'text/csv' }));
  const link = h('a', { href: url, download: `trend-${stamp(from)}-${stamp(to)}.csv`, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  // The download has started from the URL by now; revoking later rather than at once is what
  // every browser tolerates.
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
