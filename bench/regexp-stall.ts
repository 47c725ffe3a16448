/**
 * Main-thread stall from `regexp` filters (issue 12 item 7): four no-grant
 * clients list a shared table with a regexp filter while a probe measures
 * `/ingest/health` latency (in a worker thread, every 10 ms).
 *
 *   npx tsc -b && node dist/bench/regexp-stall.js [--seconds 10] [--rows 20] [--chars 8192] [--clients 4]
 *
 * Scenarios: the probe alone; `/a*b/` over rows of `a` (the attack of the
 * issue); and `/[ab]*a[ab]{14}$/` over random a/b rows, a pattern whose DFA
 * has 2^15 states, so the linear matcher runs it without its cache (its
 * slowest steps) until the step budget stops it.
 */

import { parseArgs } from 'node:util';
import { startHealthProbe } from './health-probe.js';
import { prng } from '../test/support/prng.js';
import { commandLine, int, machine, markdownTable, ms, percentiles, sleep } from './runner.js';
import { HttpsClient, json, startOurService } from './service.js';

const { values } = parseArgs({
  options: { seconds: { type: 'string' }, rows: { type: 'string' }, chars: { type: 'string' }, clients: { type: 'string' } },
  strict: true,
});
const seconds = Number(values.seconds ?? 10);
const rowCount = Number(values.rows ?? 20);
const chars = Number(values.chars ?? 8192);
const clientCount = Number(values.clients ?? 4);

const service = await startOurService({});
const admin = service.client(1);
const random = prng(12);
const mixed = () => Array.from({ length: chars }, () => (random() < 0.5 ? 'a' : 'b')).join('');
for (const [url, make] of [
  ['labels', () => 'a'.repeat(chars)],
  ['connections', mixed],
] as const) {
  const reply = await admin.postJson(`/svcapi/${url}/bulk`, Array.from({ length: rowCount }, () => ({ name: make() })));
  if (reply.status !== 200) throw new Error(`bulk ${url}: ${reply.status} ${reply.body.toString().slice(0, 200)}`);
}

// No-grant accounts: labels and connections are shared with every logged-in caller.
const clients: HttpsClient[] = [];
for (let n = 0; n < clientCount; n++) {
  const client = new HttpsClient(service.port, service.ca, 1);
  const email = `stall-${n}@bench.local`;
  await client.postJson('/svcapi/register', { email, password: 'bench-password-1', name: email });
  const login = await client.postJson('/svcapi/login', { email, password: 'bench-password-1' });
  if (login.status !== 200) throw new Error(`login ${email}: ${login.status}`);
  client.headers.authorization = `Bearer ${json(login).token as string}`;
  clients.push(client);
}

const scenarios: Array<{ label: string; path: string | null }> = [
  { label: 'no regexp requests', path: null },
  { label: `/a*b/ over ${rowCount} × ${int(chars)} a`, path: `/svcapi/labels?where=${encodeURIComponent(JSON.stringify({ name: { regexp: '/a*b/' } }))}` },
  {
    label: `/[ab]*a[ab]{14}$/ over ${rowCount} × ${int(chars)} random a/b`,
    path: `/svcapi/connections?where=${encodeURIComponent(JSON.stringify({ name: { regexp: '/[ab]*a[ab]{14}$/' } }))}`,
  },
];

const rows: string[][] = [];
for (const scenario of scenarios) {
  process.stderr.write(`${scenario.label}…\n`);
  const probe = startHealthProbe(service.port, service.ca, 10);
  const statuses = new Map<number, number>();
  const latencies: number[] = [];
  const until = performance.now() + seconds * 1000;
  if (scenario.path) {
    await Promise.all(
      clients.map(async (client) => {
        while (performance.now() < until) {
          const reply = await client.get(scenario.path!);
          statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1);
          latencies.push(reply.ms);
        }
      }),
    );
  } else {
    await sleep(seconds * 1000);
  }
  const health = await probe.stop();
  const h = percentiles(health.latencies);
  const r = percentiles(latencies);
  rows.push([
    scenario.label,
    ms(h.p50),
    ms(h.p99),
    ms(h.max),
    int(health.latencies.length),
    scenario.path ? `${[...statuses].map(([status, count]) => `${int(count)}× ${status}`).join(', ')}; p50 ${ms(r.p50)}` : '',
  ]);
}

for (const client of clients) client.close();
await service.dispose();

console.log('# Regexp filters against /ingest/health latency\n');
console.log(`\`${commandLine()}\`\n`);
console.log(`${machine()}; ${clientCount} no-grant clients, ${seconds} s per row, default settings\n`);
console.log(markdownTable(['regexp requests', 'health p50', 'health p99', 'health max', 'health probes', 'regexp replies'], rows));
