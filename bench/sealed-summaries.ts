// The console's first draw of a long trend against a running service (bench/README.md "Sealed
// summaries"): one `fast_query_binary` request per aggregator (`min`, then `max`) for every tag,
// buckets of --hours, start aligned down to the bucket width. Prints each request's time per
// round, the median, the answer's size and a digest, so two builds' answers can be compared.
// With --write-days N it first creates the collection acme/n/b/year, writes N days of 1 s noisy
// analog data (random walk + noise, 2 decimals) for the tags up to now as HSW1 bodies through
// /svcapi/write_fast, and seals them (seal_now).
//
// node dist/bench/sealed-summaries.js --port 3101 --data-dir /tmp/x --password pw [--email admin@bench.local]
//   [--tags T0,...,T9] [--write-days 365] [--days 365] [--hours 6] [--rounds 5] [--end <ms>]

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { encodeBinaryBatch } from '../native-free-codecs/write-body-hsw1.js';
import { HttpsClient, json } from './service.js';

const { values: o } = parseArgs({
  options: {
    port: { type: 'string' },
    'data-dir': { type: 'string' },
    email: { type: 'string', default: 'admin@bench.local' },
    password: { type: 'string' },
    tags: { type: 'string', default: Array.from({ length: 10 }, (_, i) => `T${i}`).join(',') },
    days: { type: 'string', default: '365' },
    hours: { type: 'string', default: '6' },
    rounds: { type: 'string', default: '5' },
    end: { type: 'string' },
    'write-days': { type: 'string' },
  },
});
if (!o.port || !o['data-dir'] || !o.password) throw new Error('--port, --data-dir and --password are required');

const client = new HttpsClient(Number(o.port), fs.readFileSync(path.join(o['data-dir'], 'tls', 'ca.crt'), 'utf8'), 1);
const login = await client.postJson('/svcapi/login', { email: o.email, password: o.password });
client.headers.authorization = `Bearer ${json(login).token}`;

const scope = { organization: 'acme', site: 'n', unit: 'b', grid: 'year' };
const tags = o.tags!.split(',');

if (o['write-days']) {
  const created = await client.postJson('/svcapi/create_collection', scope);
  if (created.status !== 200) throw new Error(`create_collection: HTTP ${created.status} ${created.body.toString('utf8')}`);
  const rows = 43_200; // half a day of every tag per request
  const last = Math.floor(Date.now() / 1000) * 1000;
  const levels = tags.map(() => 50);
  const started = performance.now();
  for (let t0 = last - Number(o['write-days']) * 86_400_000; t0 < last; t0 += rows * 1000) {
    const n = Math.min(rows, (last - t0) / 1000);
    const timestamps = Float64Array.from({ length: n }, (_, i) => t0 + i * 1000);
    const columns = tags.map((name, k) => ({
      name,
      values: Float64Array.from({ length: n }, () => Math.round(((levels[k]! += (Math.random() - 0.5) * 0.05) + (Math.random() - 0.5) * 0.4) * 100) / 100),
    }));
    const reply = await client.request('POST', '/svcapi/write_fast', encodeBinaryBatch(scope, timestamps, columns), { 'content-type': 'application/octet-stream' });
    if (reply.status !== 200 || json(reply).success !== true) throw new Error(`write_fast: HTTP ${reply.status} ${reply.body.toString('utf8').slice(0, 300)}`);
  }
  console.log(`wrote ${o['write-days']} days x ${tags.length} tags in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  const sealed = await client.postJson('/svcapi/seal_now', {});
  console.log(`seal_now: ${sealed.body.toString('utf8')} in ${(sealed.ms / 1000).toFixed(1)} s`);
}

const width = Number(o.hours) * 3_600_000;
const end = o.end ? Number(o.end) : Date.now();
const start = Math.floor((end - Number(o.days) * 86_400_000) / width) * width;
console.log(`range ${new Date(start).toISOString()} .. ${new Date(end).toISOString()} (--end ${end}), buckets of ${o.hours} h`);

for (const name of ['min', 'max']) {
  const body = {
    start_absolute: start,
    end_absolute: end,
    ...scope,
    metrics: tags.map((tag) => ({ name: tag, aggregators: [{ name, sampling: { value: Number(o.hours), unit: 'hours' } }] })),
  };
  const times: number[] = [];
  let digest = '';
  let bytes = 0;
  for (let round = 0; round < Number(o.rounds); round++) {
    const reply = await client.postJson('/svcapi/fast_query_binary', body);
    if (reply.status !== 200) throw new Error(`${name}: HTTP ${reply.status} ${reply.body.toString('utf8').slice(0, 300)}`);
    times.push(reply.ms);
    bytes = reply.bodyLength;
    digest = crypto.createHash('sha256').update(reply.body).digest('hex').slice(0, 16);
  }
  const sorted = [...times].sort((a, b) => a - b);
  console.log(`${name}: ${times.map((t) => t.toFixed(0)).join(', ')} ms; median ${sorted[sorted.length >> 1]!.toFixed(0)} ms; ${bytes} bytes, sha256 ${digest}`);
}
client.close();
