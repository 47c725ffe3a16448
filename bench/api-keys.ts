/**
 * API keys against JWTs on the write path (issue 27: "a key check on the hot path is a hash
 * lookup in memory, not scrypt per request; same throughput within noise"). The same data set
 * goes to /svcapi/write_fast with an admin's JWT and with an admin's API key, in interleaved runs
 * (JWT, key, then key, JWT, and so on, so a drift of the machine falls on both), each run into a
 * collection of its own. Two request shapes: the bench's usual batches (10 tags × 1,000 points a
 * request) and a collector's small requests (1 tag × 10 points), where the credential check is a
 * bigger share of each request. Then, in process, the cost of one credential check of each kind.
 * Prints one markdown table.
 *
 *   npm run bench:api-keys -- [--rounds 3] [--small-tags 10] [--small-points 8640] [size flags] [--quick]
 */

import fs from 'node:fs';
import { AccountStore } from '../src/auth/accounts.js';
import { ApiKeys } from '../src/auth/api-keys.js';
import { CredentialCheck } from '../src/auth/credentials.js';
import { TokenService } from '../src/auth/tokens.js';
import { ServiceClock } from '../src/clock.js';
import { createLogger } from '../src/log.js';
import { MetaStore } from '../src/meta/store.js';
import { Dataset, type Scope } from './dataset.js';
import { createCollection, ingestOurs, scopeFor } from './ours.js';
import { commandLine, int, machine, markdownTable, num, otherLoad, Phases, positiveIntOption, sizeOptions, type IngestResult } from './runner.js';
import { HttpsClient, json, startOurService, tempDir, waitForQuiet } from './service.js';

const { sizes, values } = sizeOptions({ rounds: { type: 'string' }, 'small-tags': { type: 'string' }, 'small-points': { type: 'string' } });
const rounds = positiveIntOption(values, 'rounds', 3);
const shapes = [
  { label: `${sizes.tagsPerRequest} tags × ${sizes.pointsPerRequest} points a request`, dataset: new Dataset(sizes) },
  {
    label: '1 tag × 10 points a request',
    dataset: new Dataset({ ...sizes, tags: positiveIntOption(values, 'small-tags', 10), points: positiveIntOption(values, 'small-points', sizes.quick ? 2000 : 8640), tagsPerRequest: 1, pointsPerRequest: 10 }),
  },
];
type Credential = 'JWT' | 'API key';

const rows: string[][] = [];
const phases = new Phases();
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

await waitForQuiet(sizes.waitIdle);
const service = await startOurService({});
const admin = service.client(1);
const made = await admin.postJson('/svcapi/api_keys', { name: 'bench' });
if (made.status !== 201) throw new Error(`POST /svcapi/api_keys answered ${made.status}: ${made.body.toString()}`);
const clients: Record<Credential, HttpsClient> = { JWT: service.client(sizes.connections), 'API key': new HttpsClient(service.port, service.ca, sizes.connections) };
clients['API key'].headers.authorization = `Bearer ${json(made).key as string}`;

for (const [s, shape] of shapes.entries()) {
  const results: Record<Credential, IngestResult[]> = { JWT: [], 'API key': [] };
  const ratios: number[] = [];
  for (let round = 1; round <= rounds; round++) {
    // JWT first in odd rounds, the key first in even ones.
    const order: Credential[] = round % 2 ? ['JWT', 'API key'] : ['API key', 'JWT'];
    const pair: Partial<Record<Credential, IngestResult>> = {};
    for (const credential of order) {
      const scope: Scope = scopeFor(`keys-${s}-${round}-${credential === 'JWT' ? 'jwt' : 'key'}`);
      process.stderr.write(`${shape.label}, round ${round}: ${credential}\n`);
      const result = await phases.run(`${shape.label} round ${round} ${credential}`, async () => {
        await createCollection(admin, scope);
        return ingestOurs({ label: `${credential} ${shape.label}`, client: clients[credential], connections: sizes.connections, dataset: shape.dataset, scope, encoding: 'json' });
      });
      if (result) {
        results[credential].push(result);
        pair[credential] = result;
      }
    }
    if (pair.JWT && pair['API key']) ratios.push(pair['API key'].pointsPerSecond / pair.JWT.pointsPerSecond);
  }
  for (const credential of ['JWT', 'API key'] as const) {
    const runs = results[credential];
    if (runs.length === 0) {
      rows.push([`${shape.label}, ${credential}`, 'FAILED', '']);
      continue;
    }
    const rps = runs.map((r) => r.requests / r.seconds);
    rows.push([
      `/svcapi/write_fast, ${shape.label}, ${credential}`,
      `${int(median(runs.map((r) => r.pointsPerSecond)))} points/s`,
      `median of ${runs.length} runs: ${runs.map((r) => int(r.pointsPerSecond)).join(', ')} points/s; ${int(median(rps))} requests/s; ${int(shape.dataset.totalPoints)} points, ${int(runs[0]!.requests)} requests a run${otherLoad(Math.max(...runs.map((r) => r.otherCores)))}`,
    ]);
  }
  if (ratios.length > 0) {
    rows.push([
      `/svcapi/write_fast, ${shape.label}: API key ÷ JWT`,
      `${num(median(ratios))}×`,
      `median of the ${ratios.length} rounds' ratios (each round one run of each, back to back); range ${num(Math.min(...ratios))}-${num(Math.max(...ratios))}`,
    ]);
  }
}
const exit = await service.stop();
if (exit.code !== 0) phases.failures.push({ phase: 'shutdown', error: new Error(`service exited with ${exit.code ?? exit.signal}`) });

// In process: one credential check of each kind, as every request makes it (the account state is cached, as in the service).
await phases.run('credential check in process', async () => {
  const dataDir = tempDir('historian-bench-keys-');
  const clock = new ServiceClock();
  const meta = MetaStore.open({ dataDir, maxListRows: 1000, regexpBudgetSteps: 1000 }, clock, createLogger('silent'));
  try {
    const accounts = new AccountStore(meta.accounts, Buffer.alloc(48, 7));
    accounts.create('bench@plant.test', 'not-a-hash', 'bench', 'admin');
    const tokens = new TokenService(Buffer.alloc(48, 9), 43_200, 60, 10_000, accounts, clock);
    const keys = new ApiKeys(meta.apiKeys, accounts, clock);
    keys.reload();
    const check = new CredentialCheck(tokens, keys);
    const token = tokens.sign(accounts.current('bench@plant.test')!);
    const key = keys.create(check.verify(token), { name: 'bench' }).key;
    const checks = sizes.quick ? 100_000 : 1_000_000;
    const timed = (credential: string) => {
      const started = process.hrtime.bigint();
      for (let i = 0; i < checks; i++) check.verifyHeader(`Bearer ${credential}`);
      return Number(process.hrtime.bigint() - started) / checks;
    };
    const times: Record<Credential, number[]> = { JWT: [], 'API key': [] };
    for (let round = 0; round < 5; round++) {
      times.JWT.push(timed(token));
      times['API key'].push(timed(key));
    }
    for (const credential of ['JWT', 'API key'] as const) {
      rows.push([`credential check in process, ${credential}`, `${num(median(times[credential]) / 1000, 2)} µs`, `median of 5 rounds of ${int(checks)} checks (Authorization header parsed, ${credential === 'JWT' ? 'signature cached, account looked up' : 'SHA-256, map lookup, account looked up'}); rounds ${times[credential].map((t) => num(t / 1000, 2)).join(', ')} µs`]);
    }
  } finally {
    await meta.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});

console.log('# API keys against JWTs on the write path\n');
console.log(`\`${commandLine()}\`\n`);
console.log(`${machine()}; ${rounds} rounds, ${sizes.connections} connections, tag-keyed JSON, default settings; each run writes its data set into a new collection\n`);
console.log(markdownTable(['figure', 'value', 'detail'], rows));
console.log(phases.report(() => service.process.logTail(30)));
await service.dispose();
process.exitCode = phases.failures.length > 0 ? 1 : 0;
