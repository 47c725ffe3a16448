// The short form of the fuzz run that issue 12 ("Done when") asks for: bench/fuzz.ts against the
// real service, a fixed seed, 5,000 requests over every route group of the service's own OpenAPI
// document, valid and mutated. No 5xx (bar the backpressure the contract allows), no hang, the
// service still answers /ingest/health at the end, no token or password in any log line.
// `npm run bench:fuzz -- --requests 50000 --seed N` is the long form.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FUZZ_SERVICE_SETTINGS, formatReport, MUTATION_NAMES, runFuzz, UNKNOWN_METHOD, UNKNOWN_ROUTE, type Failure } from '../../bench/fuzz.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startService } from './harness.js';

const SEED = 20260112;
const REQUESTS = 5000;

/**
 * KNOWN_FAILURES_ISSUE_12: the failure classes today's code has, each with the item of issue 12
 * that fixes it. A class listed here does not fail the test; every other one does. Delete an
 * entry when its fix lands: from then on the fuzz run holds the fix. Entries marked "found by the
 * fuzz run" are not numbered items of issue 12 yet; they were reported with this run's findings.
 */
const KNOWN_FAILURES_ISSUE_12: Array<{ item: string; why: string; matches: (f: Failure) => boolean }> = [
  {
    item: 'issue 12 item 6',
    why: 'a body nested thousands of levels deep passes the door and overflows the stack later (JSON.stringify): 500 on entity writes and POST queries',
    matches: (f) => f.kind === 'server-error' && f.messages.some((m) => m.includes('Maximum call stack size exceeded')),
  },
  {
    item: 'issue 12 item 6',
    why: 'a stored row nested more than 1,000 levels deep makes SQLite JSON functions fail: filtered lists, counts and updates of that table answer 500 "malformed JSON"',
    matches: (f) => f.kind === 'server-error' && f.messages.some((m) => m.includes('malformed JSON')),
  },
  {
    item: 'issue 12 item 10',
    why: 'renaming an org or site onto a name whose folder exists fails half way: 500 ENOTEMPTY',
    matches: (f) => f.kind === 'server-error' && f.messages.some((m) => m.includes('ENOTEMPTY')),
  },
  {
    item: 'issue 12 item 13',
    why: 'HEAD answers 405 with a body, which the client cannot parse (and which breaks keep-alive)',
    matches: (f) => f.route === 'HEAD (any route)',
  },
  {
    item: 'issue 12 item 13',
    why: 'request heads (URL or headers) larger than uWS reads reset the connection instead of 414/431',
    matches: (f) => f.kind === 'connection' && (f.route === 'raw-huge-header (raw HTTP)' || f.route.startsWith('any route (URL over')),
  },
  {
    item: 'issue 12 item 14',
    why: 'log redaction misses percent-encoded names of secret query parameters (access%5Ftoken, %61ccess_token)',
    matches: (f) => f.kind === 'token-in-log' && f.route.includes('%'),
  },
  {
    item: 'issue 12 item 13 (found by the fuzz run)',
    why: 'a method token uWS does not know (PROPFIND, PURGE, LINK, M-SEARCH, FOO) gets the connection closed without a status, not 405/501',
    matches: (f) => f.kind === 'connection' && /^(PROPFIND|PURGE|LINK|M-SEARCH|FOO) \(any route\)$/.test(f.route),
  },
  {
    item: 'issue 12 item 13 (found by the fuzz run)',
    why: 'an HTTP/1.0 request is never answered; uWS closes the connection after its 10 s idle timeout',
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
      // Today a client that vanishes half way through a large result can wedge its shard (issue 12
      // item 1), and every later write to it then waits storage.writeTimeoutMs: with a large tag the
      // run would take minutes. Set to 100_000 when item 1 lands; bench:fuzz writes 400,000 already.
      bigTagPoints: 0,
    },
  );

  // The run did what it claims: every request built, every operation of the document and every
  // route group and mutation reached.
  assert.equal(report.generatorErrors, 0, report.generatorError ?? '');
  assert.equal(report.requests, REQUESTS);
  assert.equal(report.operationsExercised, report.operations, 'every operation of the OpenAPI document got a request');
  for (const group of ['Authentication', 'Utility', 'Ingest', 'entities generic', 'entities nested', 'Entities', 'Time series', 'Time series queries', 'Tag mappings', UNKNOWN_ROUTE, UNKNOWN_METHOD]) {
    assert.ok((report.byGroup[group] ?? 0) >= 100, `group ${group}: ${report.byGroup[group] ?? 0} requests`);
  }
  for (const mutation of MUTATION_NAMES) assert.ok((report.byMutation[mutation] ?? 0) > 0, `mutation ${mutation} was applied`);

  assert.ok(report.healthOk, '/ingest/health answers at the end');
  const unexpected = report.failures.filter((f) => !KNOWN_FAILURES_ISSUE_12.some((known) => known.matches(f)));
  const unused = KNOWN_FAILURES_ISSUE_12.filter((known) => !report.failures.some((f) => known.matches(f)));
  if (report.failures.length > 0) for (const line of formatReport(report).split('\n')) t.diagnostic(line);
  // A known class that did not show up may be fixed: say so, so the entry can go once that is sure.
  for (const known of unused) t.diagnostic(`allow-list entry not hit in this run (fixed?): ${known.item}: ${known.why}`);
  assert.deepEqual(
    unexpected.map((f) => `${f.key} ×${f.count}: ${f.messages.join('; ')} | ${f.example.slice(0, 400)}`),
    [],
    'failure classes not in KNOWN_FAILURES_ISSUE_12',
  );
});
