/**
 * Notification fan-out (issue 14): N notification streams held open on loopback while an admin
 * posts notifications at a fixed rate; delivery latency, the server's main-thread CPU and
 * `GET /svcapi/health` latency during the run.
 *
 *   npm run bench:fanout -- [--streams 2000] [--rate 100] [--seconds 30] [--clients 2]
 *                           [--audience org|all] [--streams-per-user 20] [--wait-idle 0] [--keep]
 *                           [--server-log FILE]   (the server's whole output, e.g. with
 *                                                  HISTORIAN_BENCH_NODE_ARGS=--trace-gc)
 *
 * - Accounts: streams / streams-per-user read-write users (20 each, the default per-user cap),
 *   each granted one of 10 orgs; stream i uses user i mod users, token in `?access_token=`.
 * - Notifications: `--audience org` (default) addresses each to one org in turn, so every stream
 *   is matched against every notification and a tenth of the streams receive each (20,000
 *   events/s at the defaults); `--audience all` posts system-wide broadcasts that every stream
 *   receives (200,000 events/s at the defaults: more than this 2-core machine can send and read
 *   at once, see bench/README.md).
 * - Streams live in `--clients` child processes (fanout-client.ts); each POST carries its send
 *   time in `payload`, and a client's receive time minus it is the delivery latency (same clock).
 * - The poster and the /svcapi/health probe (a worker thread, every 10 ms) run in this process.
 *   The CPU of the server's main thread, the whole server, the clients and this process is read
 *   over the posting window, since all of them share the machine's cores.
 */

import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { ask as askClient } from './client-processes.js';
import { clockMs, SENT_AT_FIELD, type FromClient, type ToClient } from './fanout-client.js';
import { startHealthProbe } from './health-probe.js';
import { commandLine, int, machine, markdownTable, mib, ms, num, percentiles, runPool, sleep } from './runner.js';
import { cpuMeter, HttpsClient, json, processCpuSeconds, startOurService, threadCpuSeconds, threadCpuSplit, waitForQuiet, type Reply } from './service.js';

const { values } = parseArgs({
  options: {
    streams: { type: 'string' },
    rate: { type: 'string' },
    seconds: { type: 'string' },
    clients: { type: 'string' },
    audience: { type: 'string' },
    'streams-per-user': { type: 'string' },
    'wait-idle': { type: 'string' },
    'server-log': { type: 'string' },
    keep: { type: 'boolean' },
  },
  strict: true,
});
const positive = (name: string, fallback: number, integer = true): number => {
  const raw = (values as Record<string, unknown>)[name];
  if (raw === undefined) return fallback;
  const v = Number(raw);
  if (!(v > 0) || (integer && !Number.isInteger(v))) throw new Error(`--${name} must be a positive ${integer ? 'integer' : 'number'}, got ${String(raw)}`);
  return v;
};
const streamCount = positive('streams', 2000);
const rate = positive('rate', 100, false);
const seconds = positive('seconds', 30, false);
const clientCount = Math.min(positive('clients', 2), streamCount);
const perUser = positive('streams-per-user', 20);
const waitIdle = values['wait-idle'] === undefined ? 0 : positive('wait-idle', 0);
const audience = values.audience ?? 'org';
if (audience !== 'all' && audience !== 'org') throw new Error(`--audience must be org or all, got ${audience}`);
const ORGS = 10;
const userCount = Math.ceil(streamCount / perUser);
const postCount = Math.round(rate * seconds);
const PASSWORD = 'fanout-user-password';

// ---- the service and its accounts -----------------------------------------------------------

if (waitIdle > 0) await waitForQuiet(waitIdle);
process.stderr.write(`starting the service; ${int(userCount)} users, ${int(streamCount)} streams\n`);
const service = await startOurService({
  // Setup only: the accounts are made and logged in from one address with a cheap hash; neither
  // setting is on the path measured.
  auth: { scryptCost: 1024, rateLimitRequestsPerAddress: 1_000_000 },
  // Only when the flags go past the defaults (20 per user, 10,000 in all).
  ...(perUser > 20 || streamCount > 10_000 ? { notifications: { maxStreamsPerUser: Math.max(20, perUser), maxStreams: Math.max(10_000, streamCount) } } : {}),
});
if (values['server-log']) {
  const log = fs.createWriteStream(values['server-log']);
  service.process.child.stdout!.pipe(log);
  service.process.child.stderr!.pipe(log);
}
const admin = service.client(8);
const expectOk = (what: string, reply: Reply, statuses = [200, 201]) => {
  if (!statuses.includes(reply.status)) throw new Error(`${what} answered ${reply.status}: ${reply.body.subarray(0, 300).toString()}`);
  return json(reply);
};

const orgIds: string[] = [];
for (let o = 0; o < ORGS; o++) orgIds.push(String(expectOk('POST /svcapi/orgs', await admin.postJson('/svcapi/orgs', { name: `fanout-org-${o}` })).id));

const emails = Array.from({ length: userCount }, (_, u) => `fanout-${u}@bench.local`);
const anonymous = new HttpsClient(service.port, service.ca, 8);
await runPool(8, emails.values(), async (email) => {
  expectOk(`register ${email}`, await anonymous.postJson('/svcapi/register', { email, password: PASSWORD, name: email }));
});
const userIds = new Map((expectOk('GET /svcapi/users', await admin.get('/svcapi/users')) as Array<{ id: string; email: string }>).map((u) => [u.email, String(u.id)]));
const tokens: string[] = [];
const orgOfUser: number[] = [];
await runPool(8, emails.entries(), async ([u, email]) => {
  const usersId = userIds.get(email);
  if (!usersId) throw new Error(`${email} is not in GET /svcapi/users`);
  orgOfUser[u] = u % ORGS;
  expectOk('POST /svcapi/userprofiles', await admin.postJson('/svcapi/userprofiles', { usersId, accessAllowed: { orgs: [orgIds[u % ORGS]], sites: [], units: [] } }));
  tokens[u] = String(expectOk(`login ${email}`, await anonymous.postJson('/svcapi/login', { email, password: PASSWORD })).token);
});
anonymous.close();

// ---- client processes and their streams ------------------------------------------------------

interface Client {
  child: ChildProcess;
  /** Stream indexes this client holds, in the order it was given them. */
  streams: number[];
}

const clients: Client[] = Array.from({ length: clientCount }, () => ({
  child: fork(new URL('./fanout-client.js', import.meta.url), [], { serialization: 'advanced', execArgv: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  streams: [],
}));
for (let s = 0; s < streamCount; s++) clients[s % clientCount].streams.push(s);
const userOfStream = (s: number) => s % userCount;

const ask = <Op extends FromClient['op']>(client: Client, message: ToClient, op: Op) => askClient<FromClient, Op>(client.child, message, op);
const askAll = <Op extends FromClient['op']>(message: ToClient, op: Op) => Promise.all(clients.map((c) => ask(c, message, op)));
const clientCpuSeconds = async () => (await askAll({ op: 'cpu' }, 'cpu')).reduce((sum, r) => sum + r.seconds, 0);

process.stderr.write(`opening ${int(streamCount)} streams from ${clientCount} client processes\n`);
const openStart = performance.now();
const opened = await Promise.all(
  clients.map((c) => ask(c, { op: 'open', port: service.port, ca: service.ca, tokens: c.streams.map((s) => tokens[userOfStream(s)]), concurrency: 25, notifications: postCount, firstSteadySeq: Math.ceil(rate) }, 'opened')),
);
const openSeconds = (performance.now() - openStart) / 1000;
const connectMs = opened.flatMap((o) => o.connectMs);
const openFailures = opened.flatMap((o) => o.failures);
const openFailed = opened.reduce((sum, o) => sum + o.failed, 0);
process.stderr.write(`  ${int(connectMs.length)} streams open in ${openSeconds.toFixed(1)} s${openFailed ? `; ${openFailed} failed: ${openFailures[0]}` : ''}\n`);
if (connectMs.length === 0) {
  for (const c of clients) c.child.kill();
  await service.dispose();
  throw new Error(`no stream opened: ${openFailures.slice(0, 3).join('; ')}`);
}

// ---- the measured window: posting at the rate -------------------------------------------------

interface Post {
  seq: number;
  org: number | null;
  status: number;
  ms: number;
}
const posts: Post[] = [];
const poster = service.client(8);
const inFlight: Array<Promise<void>> = [];
let postError: string | undefined;

process.stderr.write(`posting ${int(postCount)} notifications at ${rate}/s (audience: ${audience})\n`);
const serverPid = service.process.pid;
const other = cpuMeter();
const before = { mainSplit: threadCpuSplit(serverPid), mainThread: threadCpuSeconds(serverPid), server: processCpuSeconds(serverPid), clients: await clientCpuSeconds(), self: process.cpuUsage() };
const probe = startHealthProbe(service.port, service.ca, 10, '/svcapi/health');
const windowStart = performance.now();
for (let k = 0; k < postCount; k++) {
  const due = windowStart + (k * 1000) / rate;
  const wait = due - performance.now();
  if (wait > 1) await sleep(wait);
  const org = audience === 'org' ? k % ORGS : null;
  const body = {
    severity: 'info',
    source: 'system',
    title: `fan-out #${k}`,
    body: 'Boiler 1 drum level back in range after the feed pump restart.',
    ...(org === null ? {} : { orgsId: orgIds[org] }),
    payload: { [SENT_AT_FIELD]: clockMs(), seq: k },
  };
  inFlight.push(
    poster.postJson('/svcapi/notifications', body).then(
      (reply) => void posts.push({ seq: k, org, status: reply.status, ms: reply.ms }),
      (err: unknown) => {
        posts.push({ seq: k, org, status: 0, ms: NaN });
        postError ??= err instanceof Error ? err.message : String(err);
      },
    ),
  );
  if (k % Math.max(1, Math.round(rate * 5)) === 0 && k > 0) process.stderr.write(`  ${int(k)} posted\n`);
}
await Promise.all(inFlight);
const windowSeconds = (performance.now() - windowStart) / 1000;
const after = { mainSplit: threadCpuSplit(serverPid), mainThread: threadCpuSeconds(serverPid), server: processCpuSeconds(serverPid), clients: await clientCpuSeconds(), self: process.cpuUsage(before.self) };
const health = await probe.stop();
const otherCores = other();
poster.close();

// ---- drain: wait for the last deliveries ------------------------------------------------------

const created = posts.filter((p) => p.status === 201);
/** Deliveries owed: every stream that opened gets every notification its user may see. */
const openStreams = clients.flatMap((c, i) => c.streams.filter((_, j) => opened[i].open[j] === 1));
const createdPerOrg = new Array<number>(ORGS).fill(0);
for (const p of created) if (p.org !== null) createdPerOrg[p.org]++;
const broadcasts = created.filter((p) => p.org === null).length;
const expected = openStreams.reduce((sum, s) => sum + broadcasts + createdPerOrg[orgOfUser[userOfStream(s)]], 0);
let delivered = 0;
let lastChange = performance.now();
const drainStart = performance.now();
while (performance.now() - lastChange < 5000 && performance.now() - drainStart < 60_000) {
  const now = (await askAll({ op: 'count' }, 'count')).reduce((sum, r) => sum + r.delivered, 0);
  if (now !== delivered) lastChange = performance.now();
  delivered = now;
  if (delivered >= expected) break;
  await sleep(200);
}
const results = await askAll({ op: 'finish' }, 'result');

// ---- figures ----------------------------------------------------------------------------------

const joined = (parts: Float64Array[]) => {
  const out = new Float64Array(parts.reduce((sum, p) => sum + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};
const latency = percentiles(joined(results.map((r) => r.latencies)));
const steady = percentiles(joined(results.map((r) => r.steadyLatencies)));
const connect = percentiles(connectMs);
const postMs = percentiles(created.map((p) => p.ms));
const h = percentiles(health.latencies);
const receivedTotal = results.reduce((sum, r) => sum + r.perStream.reduce((a, b) => a + b, 0), 0);
const outOfOrder = results.reduce((sum, r) => sum + r.outOfOrder, 0);
const malformed = results.reduce((sum, r) => sum + r.malformed, 0);
const cut = results.reduce((sum, r) => sum + r.cut, 0);
const statuses = new Map<number, number>();
for (const p of posts) statuses.set(p.status, (statuses.get(p.status) ?? 0) + 1);
const cores = (cpuSeconds: number) => `${num(cpuSeconds / windowSeconds)} cores (${num(cpuSeconds, 1)} CPU-s in ${num(windowSeconds, 1)} s)`;
const selfSeconds = (after.self.user + after.self.system) / 1e6;
const perUserNote = `${int(userCount)} users × ${perUser} streams, each user granted one of ${ORGS} orgs`;

console.log('# Notification fan-out\n');
console.log(`\`${commandLine()}\`\n`);
console.log(`${machine()}; default settings except a cheap password hash and no login limit for the setup\n`);
console.log(
  markdownTable(
    ['figure', 'value'],
    [
      ['streams open (token in `?access_token=`)', `${int(connectMs.length)} of ${int(streamCount)} (${perUserNote}), from ${clientCount} client processes${openFailed ? `; ${openFailed} failed: ${openFailures[0]}` : ''}`],
      ['connect until replay-complete (25 at a time per client)', `p50 ${ms(connect.p50)}, p99 ${ms(connect.p99)}, max ${ms(connect.max)}; all open in ${num(openSeconds, 1)} s`],
      [
        'notifications posted (admin, one POST each)',
        `${int(created.length)} × 201 of ${int(postCount)} at ${rate}/s over ${num(windowSeconds, 1)} s${[...statuses].filter(([s]) => s !== 201).map(([s, n]) => `; ${int(n)} × ${s === 0 ? `no answer (${postError})` : s}`).join('')}; POST p50 ${ms(postMs.p50)}, p99 ${ms(postMs.p99)}`,
      ],
      ['audience', audience === 'all' ? 'system-wide: every stream receives every notification' : `one org each, in turn: every stream is matched, a tenth receive each`],
      [
        'events delivered',
        `${int(receivedTotal)} of ${int(expected)} (${int(receivedTotal / windowSeconds)}/s)${receivedTotal < expected ? `, ${int(expected - receivedTotal)} missing` : ''}; out of order ${int(outOfOrder)}; streams cut by the server ${int(cut)}${malformed ? `; ${int(malformed)} without a send time` : ''}`,
      ],
      ['**delivery latency** (POST issued → event parsed by the client)', `**p50 ${ms(latency.p50)}, p99 ${ms(latency.p99)}**, max ${ms(latency.max)}`],
      ['delivery latency after the first second (warm-up left out)', `p50 ${ms(steady.p50)}, p99 ${ms(steady.p99)}, max ${ms(steady.max)}`],
      [
        '**server main thread CPU**',
        `**${cores(after.mainThread - before.mainThread)}**: user ${num(after.mainSplit.user - before.mainSplit.user, 1)} s, system ${num(after.mainSplit.system - before.mainSplit.system, 1)} s`,
      ],
      ['server process CPU (all threads)', cores(after.server - before.server)],
      [`**GET /svcapi/health** during the run (every 10 ms)`, `p50 ${ms(h.p50)}, **p99 ${ms(h.p99)}**, max ${ms(h.max)}; ${int(health.latencies.length)} answers${health.failures.length ? `, ${health.failures.length} failures: ${health.failures[0]}` : ''}`],
      ['client processes CPU (TLS, SSE parsing)', cores(after.clients - before.clients)],
      ['this process CPU (poster, health probe)', cores(selfSeconds)],
      ['other processes on the machine', `${num(Math.max(0, otherCores - (after.clients - before.clients) / windowSeconds))} cores`],
      ['server peak RSS (VmHWM)', mib(service.process.peakRssBytes())],
    ],
  ),
);

// Where in the window the slow deliveries were: a stall (a long task on the main thread, a
// checkpoint) shows as a few bad seconds, a server that cannot keep up as a steady climb.
const timelineSeconds = Math.ceil(postCount / rate);
const worstDelivery = new Array<number>(timelineSeconds).fill(NaN);
const worstPost = new Array<number>(timelineSeconds).fill(NaN);
for (const r of results) {
  r.worstBySeq.forEach((latency, seq) => {
    if (Number.isNaN(latency)) return; // none of this client's streams was owed it
    const second = Math.floor(seq / rate);
    if (!(worstDelivery[second] >= latency)) worstDelivery[second] = latency;
  });
}
for (const p of posts) {
  if (Number.isNaN(p.ms)) continue;
  const second = Math.floor(p.seq / rate);
  if (!(worstPost[second] >= p.ms)) worstPost[second] = p.ms;
}
const list = (values: number[]) => values.map((v) => (Number.isFinite(v) ? Math.round(v).toString() : '-')).join(' ');
console.log('');
console.log(`Worst delivery latency of the notifications posted in each second of the window (ms): ${list(worstDelivery)}`);
console.log('');
console.log(`Slowest POST of each second (ms): ${list(worstPost)}`);

for (const c of clients) if (c.child.exitCode === null) c.child.kill();
admin.close();
if (values.keep) process.stderr.write(`data dir kept: ${service.dataDir}\n`);
else await service.dispose();
