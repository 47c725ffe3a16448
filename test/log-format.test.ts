// log.format pretty (shared/log-format.ts): the formatter on its own, and the real service
// writing every line of its own and of its storage workers that way, redacted as in JSON.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { prettyLogLine } from '../shared/log-format.js';
import fs from 'node:fs';
import path from 'node:path';
import { startService, tempDir } from './api/harness.js';

test('a pino line becomes time, level name, message and key=value fields; anything else is kept', () => {
  const line = `${JSON.stringify({ level: 40, time: Date.UTC(2026, 10, 26, 17, 20, 1, 123), service: 'historian', pid: 7, msg: 'disk low', free: 1024, path: '/data dir', ok: false, shard: { id: 2 } })}\n`;
  assert.equal(prettyLogLine(line), '2026-11-26T17:20:01.123Z WARN  disk low free=1024 path="/data dir" ok=false shard={"id":2}\n');
  assert.equal(prettyLogLine('{"level":30,"time":0,"msg":"x"}'), '1970-01-01T00:00:00.000Z INFO  x');
  for (const other of ['not json\n', '[1,2]\n', 'null\n', '']) assert.equal(prettyLogLine(other), other);
  assert.equal(prettyLogLine('{"level":35,"msg":"custom"}\n'), '- 35    custom\n');
});

test('the service with log.format pretty: every line readable, workers too, secrets still redacted', async () => {
  // A folder that is no encoded scope name: the storage worker warns about it at start.
  const dataDir = tempDir();
  fs.mkdirSync(path.join(dataDir, 'ts', 'not encoded!'), { recursive: true });
  const svc = await startService({ dataDir, config: { log: { level: 'info', format: 'pretty' } } });
  try {
    const admin = await svc.adminToken();
    assert.equal((await svc.get('/svcapi/me?access_token=a-secret-token-value', admin)).status, 200);
    const lines = () => svc.logLines.filter((l) => l.trim() !== '');
    await new Promise((resolve) => setTimeout(resolve, 500)); // the log sink writes in batches: nothing shows the moment a batch is out
    const all = lines();
    assert.ok(all.length > 5, `lines: ${all.length}`);
    for (const l of all) assert.match(l, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (TRACE|DEBUG|INFO |WARN |ERROR|FATAL) /, l);
    assert.ok(all.some((l) => / INFO  request .*path="\/svcapi\/me\?access_token=\[redacted\]"/.test(l)), 'the request line, its token redacted');
    assert.ok(!all.some((l) => l.includes('a-secret-token-value')));
    assert.ok(all.some((l) => / WARN  folder name is not an encoded scope name shard=0 /.test(l)), 'the storage worker\'s line, in the same format');
  } finally {
    await svc.dispose();
  }
});
