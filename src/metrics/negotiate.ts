// Which exposition format a scraper asked for in `Accept`. Prometheus 2.x sends
// `application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,
// text/plain;version=0.0.4;q=0.5,*/*;q=0.1`: the highest quality wins, so it gets OpenMetrics.
// OpenMetrics is chosen only when it is named (a wildcard alone, or a tie, keeps the classic
// text format 0.0.4 every client reads), in the version prom-client writes (1.0.0, or none given).

import type { ExpositionFormat } from './exposition.js';

const OPENMETRICS = 'application/openmetrics-text';
const OPENMETRICS_VERSION = '1.0.0';
const TEXT_VERSION = '0.0.4';

interface MediaRange {
  type: string;
  version: string | null;
  quality: number;
}

function parse(part: string): MediaRange {
  const [type = '', ...params] = part.split(';').map((p) => p.trim());
  let version: string | null = null;
  let quality = 1;
  for (const param of params) {
    const eq = param.indexOf('=');
    if (eq < 0) continue;
    const name = param.slice(0, eq).trim().toLowerCase();
    const value = param.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1');
    if (name === 'q') {
      const q = Number(value);
      quality = Number.isFinite(q) ? Math.min(1, Math.max(0, q)) : 0;
    } else if (name === 'version') version = value;
  }
  return { type: type.toLowerCase(), version, quality };
}

export function formatFor(accept: string | undefined): ExpositionFormat {
  if (!accept) return 'text';
  let openMetrics = 0;
  let text = 0;
  for (const part of accept.split(',')) {
    const range = parse(part);
    if (range.type === OPENMETRICS && (range.version === null || range.version === OPENMETRICS_VERSION)) openMetrics = Math.max(openMetrics, range.quality);
    else if (range.type === 'text/plain' && (range.version === null || range.version === TEXT_VERSION)) text = Math.max(text, range.quality);
    else if (range.type === 'text/*' || range.type === '*/*') text = Math.max(text, range.quality);
  }
  return openMetrics > 0 && openMetrics > text ? 'openmetrics' : 'text';
}
