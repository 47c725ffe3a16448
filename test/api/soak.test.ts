// The 3-minute form of the soak run of issue 34 (bench/soak.ts runs the long one): every write
// path, every query format, notification streams, live WebSockets, the monitor, backups, entity
// CRUD, logins, slow and vanishing readers and a storage worker killed every minute, at small
// counts, against one service. Asserts states and counts only: no answer the contract does not
// allow, every acknowledged point stored, memory and descriptors bounded after warm-up, and
// every route class succeeding at least once.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runSoak, SOAK_SERVICE_SETTINGS } from '../../bench/soak-driver.js';
import { classesWithoutSuccess, clientErrors, fdFigures, formatReport, growthAfterWarmup, unexpectedAnswers } from '../../bench/soak-report.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startService } from './harness.js';

test('soak: 3 minutes of mixed load with a storage worker killed each minute', { timeout: 15 * 60_000 }, async (t) => {
  const svc = await startService({ config: SOAK_SERVICE_SETTINGS });
  t.after(() => svc.dispose());
  const result = await runSoak(
    { port: svc.port, ca: svc.ca, pid: svc.child.pid!, dataDir: svc.dataDir, adminEmail: ADMIN_EMAIL, adminPassword: ADMIN_PASSWORD },
    {
      minutes: 3,
      // A fixed rate, small enough for a loaded 2-core machine running other tests.
      ratePerPath: 1000,
      tags: 20,
      rows: 50,
      sseStreams: 50,
      webSockets: 20,
      rules: 1000,
      queryConnections: 1,
      backupEveryMinutes: 1,
      crashEveryMinutes: 1,
      sampleSeconds: 5,
      warmupMinutes: 1,
      log: () => {},
    },
  );
  // The verdict and the odd figures in the test's output; bench/soak.ts prints the whole report.
  const report = formatReport(result).split('\n');
  const section = (title: string) => {
    const start = report.indexOf(title);
    const end = report.findIndex((line, i) => i > start && line.startsWith('## '));
    return report.slice(start, end < 0 ? undefined : end);
  };
  for (const line of [...section('## Verdict'), ...section('## The rest')]) t.diagnostic(line);

  assert.deepEqual(unexpectedAnswers(result), [], 'no 5xx other than 503, no hang, no cut connection');
  assert.deepEqual(clientErrors(result), [], 'no 4xx: every request sent is valid');
  for (const path of result.paths) {
    assert.ok(path.acknowledged > 0, `${path.path}: points acknowledged`);
    assert.equal(path.missing, 0, `${path.path}: every acknowledged point stored (${path.acknowledged} acknowledged, ${path.stored} stored)`);
  }
  assert.deepEqual(classesWithoutSuccess(result), [], 'every route class succeeded at least once');
  assert.ok(result.crashes >= 1, 'a storage worker was killed');
  assert.ok(result.backups.done >= 1, `a backup finished (${result.backups.failed.join('; ')})`);
  assert.ok(result.sse.open >= 40 && result.ws.opened >= 15, `streams and sockets open (${result.sse.open} SSE, ${result.ws.opened} WebSockets)`);
  assert.equal(result.sse.ended, 0, 'no notification stream ended by the server');
  assert.equal(result.sse.delivered, result.sse.expected, 'every notification reached every stream');
  assert.equal(result.ws.delivered, result.ws.opened * result.ws.markers, `every acknowledged live marker reached every socket (${result.ws.missed.join('; ')})`);

  const rss = growthAfterWarmup(result.samples, (s) => s.rssKb, 1);
  assert.ok(rss.growth < 0.5, `RSS after warm-up within +50% (${rss.base} kB → ${rss.end} kB)`);
  const fds = fdFigures(result);
  assert.ok(fds.max <= fds.atWarmup * 1.5 + 64, `file descriptors bounded (at most ${fds.atWarmup} until the end of warm-up, ${fds.max} after)`);
  assert.equal((await svc.get('/ingest/health')).status, 200, 'the service still answers');
});
