/**
 * `historian import` speed (issue 32: a 1 GB line protocol file, about 20 M lines, in under
 * 60 s on this machine while the service runs on the same cores).
 *
 *   npm run bench:import -- [--mb 1024] [--series 300] [--file path] [--keep] [--gzip]
 *                           [--concurrency 3] [--chunk-mb 2] [--durability sync|fast]
 *
 * 1. Writes a realistic line protocol file of about `--mb` MB (unless `--file` names one made
 *    before): `--series` series of a plant (`<measurement>,line=<L>,sensor=<S> <field>=<v>`),
 *    noisy analog values (a random walk plus noise, 2 decimals), every series each second, ns
 *    timestamps, as Telegraf writes them.
 * 2. Starts the service as `npm start` does, creates the collection, runs importData() against
 *    it in this process (the CLI's library, not a copy), and prints lines/s, MB/s and the time.
 * 3. Counts the points back with one `count` query per series, and checks them against the file.
 * 4. Exports the collection with exportData() as CSV and as line protocol to a sink that
 *    discards the bytes, and prints points/s of each.
 */

import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Writable } from 'node:stream';
import zlib from 'node:zlib';
import { exportData } from '../src/cli/export.js';
import { importData } from '../src/cli/import.js';
import { commandLine, machine, markdownTable } from './runner.js';
import { processCpuSeconds, startOurService } from './service.js';
import { prng } from '../test/support/prng.js';

const { values } = parseArgs({
  options: {
    mb: { type: 'string' }, series: { type: 'string' }, file: { type: 'string' }, keep: { type: 'boolean' }, gzip: { type: 'boolean' },
    concurrency: { type: 'string' }, 'chunk-mb': { type: 'string' }, durability: { type: 'string' },
  },
});
const TARGET_BYTES = Number(values.mb ?? 1024) * 1e6;
const SERIES = Number(values.series ?? 300);
const CONCURRENCY = Number(values.concurrency ?? 3);
const CHUNK_BYTES = Math.round(Number(values['chunk-mb'] ?? 2) * 2 ** 20);
const DURABILITY = (values.durability ?? 'sync') as 'sync' | 'fast';
const COLLECTION = { organization: 'bench', site: 'plant-1', unit: 'import', grid: 'main' };
const T0_NS = BigInt(Date.UTC(2025, 0, 1)) * 1_000_000n;
const MEASUREMENTS = [['boiler', 'temp'], ['pump', 'flow'], ['tank', 'level'], ['line', 'pressure'], ['dryer', 'humidity']] as const;


/** Writes the file; returns its lines and points (one field a line). */
async function generate(file: string, gzip: boolean): Promise<{ lines: number; bytes: number }> {
  const rnd = prng(32); // deterministic: two runs import the same file
  const prefixes = Array.from({ length: SERIES }, (_, s) => {
    const [m, field] = MEASUREMENTS[s % MEASUREMENTS.length];
    return `${m},line=L${(s % 7) + 1},sensor=${m.slice(0, 2).toUpperCase()}-${String(s).padStart(4, '0')} ${field}=`;
  });
  const level = Float64Array.from({ length: SERIES }, () => 20 + rnd() * 60);
  const out = fs.createWriteStream(file);
  const sink = gzip ? zlib.createGzip({ level: 1 }) : null;
  if (sink) sink.pipe(out);
  const target = sink ?? out;
  let bytes = 0;
  let lines = 0;
  for (let second = 0; bytes < TARGET_BYTES; second++) {
    const ts = `${(T0_NS + BigInt(second) * 1_000_000_000n).toString()}\n`;
    let block = '';
    for (let s = 0; s < SERIES; s++) {
      level[s] += (rnd() - 0.5) * 0.2; // the walk
      const value = level[s] + (rnd() - 0.5) * 0.05; // the noise
      block += `${prefixes[s]}${value.toFixed(2)} ${ts}`;
    }
    lines += SERIES;
    bytes += block.length;
    if (!target.write(block)) await new Promise<void>((resolve) => target.once('drain', () => resolve()));
  }
  target.end();
  await new Promise<void>((resolve) => out.once('finish', () => resolve()));
  return { lines, bytes };
}

async function countPoints(port: number, ca: string, token: string, tags: string[]): Promise<number> {
  const agent = new https.Agent({ ca, keepAlive: true });
  let total = 0;
  for (let i = 0; i < tags.length; i += 100) {
    const body = JSON.stringify({
      start_absolute: 0, ...COLLECTION,
      metrics: tags.slice(i, i + 100).map((name) => ({ name, aggregators: [{ name: 'count', sampling: { value: 100, unit: 'years' } }] })),
    });
    const reply = await new Promise<string>((resolve, reject) => {
      const req = https.request({ host: '127.0.0.1', servername: 'localhost', port, method: 'POST', path: '/svcapi/fast_query', agent, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } }, (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (c: string) => (text += c)).on('end', () => (res.statusCode === 200 ? resolve(text) : reject(new Error(`count query: ${res.statusCode} ${text}`))));
      });
      req.on('error', reject);
      req.end(body);
    });
    for (const points of Object.values(JSON.parse(reply) as Record<string, Array<[number, number]>>)) for (const [, n] of points) total += n;
  }
  agent.destroy();
  return total;
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'historian-bench-import-'));
const file = values.file ?? path.join(dir, values.gzip ? 'plant.lp.gz' : 'plant.lp');
let generated: { lines: number; bytes: number } | null = null;
if (!values.file) {
  const start = performance.now();
  generated = await generate(file, values.gzip === true);
  console.error(`generated ${file}: ${generated.lines} lines, ${(generated.bytes / 1e6).toFixed(0)} MB of text in ${((performance.now() - start) / 1000).toFixed(1)} s`);
}
const fileBytes = fs.statSync(file).size;
const service = await startOurService({});
try {
  const client = service.client(1);
  const created = await client.postJson('/svcapi/create_collection', COLLECTION);
  if (created.status !== 200) throw new Error(`create_collection answered ${created.status}`);
  const agent = new https.Agent({ ca: service.ca, keepAlive: true });
  const target = { baseUrl: `https://localhost:${service.port}`, authorization: `Bearer ${service.token}`, agent };
  const cpuBefore = processCpuSeconds(service.process.pid);
  const clientCpuBefore = process.cpuUsage();
  const start = performance.now();
  const result = await importData(target, {
    collection: Object.values(COLLECTION).join('/'), input: file, concurrency: CONCURRENCY, chunkBytes: CHUNK_BYTES, durability: DURABILITY, stateDir: dir,
  });
  const seconds = (performance.now() - start) / 1000;
  const serverCpu = processCpuSeconds(service.process.pid) - cpuBefore;
  const clientCpu = process.cpuUsage(clientCpuBefore);
  const exports: string[][] = [];
  for (const format of ['csv', 'lp'] as const) {
    let bytes = 0;
    const sink = new Writable({ write: (chunk: Buffer, _encoding, done) => ((bytes += chunk.length), done()) });
    const t = performance.now();
    const exported = await exportData(target, { collection: Object.values(COLLECTION).join('/'), format, out: sink });
    const s = (performance.now() - t) / 1000;
    exports.push([`export ${format}`, `${s.toFixed(2)} s, ${Math.round(exported.points / s).toLocaleString('en-US')} points/s, ${(bytes / 1e6 / s).toFixed(1)} MB/s (${exported.points.toLocaleString('en-US')} points)`]);
  }
  agent.destroy();
  const listing = JSON.parse((await client.get(`/svcapi/series?collection=${encodeURIComponent(Object.values(COLLECTION).join('/'))}&limit=100000`)).body.toString()) as { series: Array<{ tag: string }> };
  const stored = await countPoints(service.port, service.ca, service.token, listing.series.map((s) => s.tag));
  console.log(`\n${commandLine()}\n${machine()}\n`);
  console.log(markdownTable(['figure', 'value'], [
    ['file', `${(fileBytes / 1e6).toFixed(1)} MB${values.gzip ? ' gzip' : ''}, ${(result.bytes / 1e6).toFixed(1)} MB of text, ${result.lines.toLocaleString('en-US')} lines, ${SERIES} series`],
    ['settings', `concurrency ${CONCURRENCY}, chunks of ${(CHUNK_BYTES / 2 ** 20).toFixed(1)} MiB, /svcapi/${DURABILITY === 'fast' ? 'write_fast' : 'write'}`],
    ['import time', `${seconds.toFixed(2)} s (${result.requests} requests)`],
    ['lines/s', Math.round(result.lines / seconds).toLocaleString('en-US')],
    ['MB/s (text)', (result.bytes / 1e6 / seconds).toFixed(1)],
    ['1 GB at this rate', `${(1e9 / (result.bytes / seconds)).toFixed(1)} s`],
    ['CPU seconds: importer (user+sys) / service', `${((clientCpu.user + clientCpu.system) / 1e6).toFixed(1)} / ${serverCpu.toFixed(1)}`],
    ['points stored (counted back) / in the file', `${stored.toLocaleString('en-US')} / ${result.points.toLocaleString('en-US')}${stored === result.points ? '' : ' MISMATCH'}`],
    ...exports,
  ]));
  if (generated && stored !== generated.lines) process.exitCode = 1;
} finally {
  await service.dispose();
  if (!values.keep) fs.rmSync(dir, { recursive: true, force: true });
  else console.error(`kept ${dir}`);
}
