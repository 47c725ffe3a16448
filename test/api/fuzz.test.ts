// The short form of the fuzz run that issue 12 ("Done when") asks for: bench/fuzz.ts against the
// real service, a fixed seed, 5,000 requests over every route group of the service's own OpenAPI
// document, valid and mutated, with the bodies the document cannot describe (line protocol, remote
// write, InfluxQL, PromQL, blobs, collectors) and WebSocket sessions on the live data socket. No 5xx (bar the backpressure the contract allows), no hang, the
// service still answers /ingest/health at the end, no token or password in any log line.
// `npm run bench:fuzz -- --requests 50000 --seed N` is the long form.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FUZZ_SERVICE_SETTINGS, formatReport, MUTATION_NAMES, runFuzz, UNKNOWN_METHOD, UNKNOWN_ROUTE, type Failure } from '../../bench/fuzz.js';
import { PROTOCOL_GROUP } from '../../bench/fuzz-protocols.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startService } from './harness.js';

const SEED = 20260112;
const REQUESTS = 5000;

/**
 * HTTP_LAYER_LIMITS: what the HTTP layer in use (uWebSockets.js 20.30) does before the service
 * sees a request, so no fix in this repository can answer it; each is in the README (Operating).
 * Every other failure class fails the test. Issue 12's own failure classes (deep bodies, stored
 * rows SQLite cannot read, half-done renames, HEAD, long URLs that reach the service, tokens in
 * percent-encoded names, wedged shards) are fixed and held here by their absence.
 */
const HTTP_LAYER_LIMITS: Array<{ why: string; matches: (f: Failure) => boolean }> = [
  {
    why: 'a request head over 4 KiB that arrives in more than one piece (the fuzzer sends 64 KiB and 70 KB ones) is cut off by uWS closing the connection',
    matches: (f) => f.kind === 'connection' && (f.route === 'raw-huge-header (raw HTTP)' || f.route.startsWith('any route (URL over')),
  },
  {
    why: 'a method token uWS does not know (PROPFIND, PURGE, LINK, M-SEARCH, FOO) never reaches a handler',
    matches: (f) => f.kind === 'connection' && /^(PROPFIND|PURGE|LINK|M-SEARCH|FOO) \(any route\)$/.test(f.route),
  },
  {
    why: 'an HTTP/1.0 request never reaches a handler; uWS closes the connection after its idle timeout',
    matches: (f) => f.route === 'raw-http10 (raw HTTP)',
  },
];

test(`fuzz: ${REQUESTS} seeded requests over every route group answer without 5xx or hang, and leak no token`, { timeout: 240_000 }, async (t) => {
  const svc = await startService({ config: FUZZ_SERVICE_SETTINGS });
  t.after(() => svc.dispose());

  const report = await runFuzz(
    { port: svc.port, ca: svc.ca, logLines: () => svc.logLines, dataDir: svc.dataDir, adminEmail: ADMIN_EMAIL, adminPassword: ADMIN_PASSWORD },
    {
      seed: SEED,
      requests: REQUESTS,
      concurrency: 6,
      timeoutMs: 20_000,
      maxResponseBytes: 1024 * 1024,
      // Large results read and abandoned at random: a wedged shard would show as hangs and 503s.
      bigTagPoints: 100_000,
    },
  );

  // The run did what it claims: every request built, every operation of the document and every
  // route group and mutation reached.
  assert.equal(report.generatorErrors, 0, report.generatorError ?? '');
  assert.equal(report.requests, REQUESTS);
  assert.equal(report.operationsExercised, report.operations, 'every operation of the OpenAPI document got a request');
  for (const group of ['Authentication', 'Utility', 'Ingest', 'entities generic', 'entities nested', 'Entities', 'Time series', 'Time series queries', 'Tag mappings', PROTOCOL_GROUP, UNKNOWN_ROUTE, UNKNOWN_METHOD]) {
    assert.ok((report.byGroup[group] ?? 0) >= 100, `group ${group}: ${report.byGroup[group] ?? 0} requests`);
  }
  for (const mutation of MUTATION_NAMES) assert.ok((report.byMutation[mutation] ?? 0) > 0, `mutation ${mutation} was applied`);

  assert.ok(report.ws.sessions > 0 && report.ws.messages > 0, `the live data socket was fuzzed: ${JSON.stringify(report.ws)}`);
  assert.ok(report.healthOk, '/ingest/health answers at the end');
  const unexpected = report.failures.filter((f) => !HTTP_LAYER_LIMITS.some((known) => known.matches(f)));
  const unused = HTTP_LAYER_LIMITS.filter((known) => !report.failures.some((f) => known.matches(f)));
  if (report.failures.length > 0) for (const line of formatReport(report).split('\n')) t.diagnostic(line);
  for (const known of unused) t.diagnostic(`HTTP-layer limit not hit in this run: ${known.why}`);
  assert.deepEqual(
    unexpected.map((f) => `${f.key} ×${f.count}: ${f.messages.join('; ')} | ${f.example.slice(0, 400)}`),
    [],
    'failure classes other than the documented HTTP-layer limits',
  );
});
