// The stock `influx` CLI (Debian's influxdb-client, 1.6) against the service, as a user runs it
// (issue 28): `influx -ssl -unsafeSsl -host 127.0.0.1 -port <ours> -username anything -password
// <API key> -database <ingest client id> -execute "…"`. The CLI pings first (GET /ping, with
// Basic credentials), then sends an INSERT as `POST /write?consistency=all&db=…&precision=…&rp=`
// with no Content-Type and the line after a space, and a query as `POST /query?chunked=true&
// db=…&epoch=ns&q=…` with an empty body. The INSERTs are read back with /svcapi/fast_query.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { INFLUX_CLI_BIN, influxCliSkip } from '../support/influxd.js';
import { PLANT, startOurService, type OurService } from './our-service.js';

const DB = 'cli-plant';

interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

describe('the influx CLI (1.6) against the service', { skip: influxCliSkip }, () => {
  let ours: OurService;

  before(async () => {
    ours = await startOurService(DB);
  });
  after(() => ours?.svc.dispose());

  /** Runs the CLI with -execute; `password` defaults to the API key. */
  function influx(execute: string, opts: { password?: string; extra?: string[] } = {}): Promise<CliRun> {
    const args = [
      '-ssl', '-unsafeSsl', '-host', '127.0.0.1', '-port', String(ours.svc.port),
      '-username', 'anything', '-password', opts.password ?? ours.key, '-database', DB,
      ...(opts.extra ?? []), '-execute', execute,
    ];
    // No INFLUX_* variable of the machine may change what the CLI sends.
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('INFLUX_')));
    return new Promise((resolve) => {
      execFile(INFLUX_CLI_BIN, args, { env, timeout: 60_000 }, (err, stdout, stderr) => {
        const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : -1) : 0;
        resolve({ code, stdout, stderr });
      });
    });
  }

  /** The points of `tag` in the plant's collection between `start` and `end`. */
  async function pointsOf(tag: string, start: number, end: number): Promise<Array<[number, number]>> {
    const qs = new URLSearchParams({ tags: tag, start: String(start), end: String(end), ...PLANT });
    const res = await ours.svc.get(`/svcapi/fast_query?${qs}`, ours.admin);
    assert.equal(res.status, 200, res.text);
    return res.body[tag];
  }

  test('INSERT without a timestamp reaches the root /write and reads back at the server time', async () => {
    const before = Date.now();
    const run = await influx('INSERT cli_insert,host=a,region=eu v=12.5,n=3i');
    const after = Date.now();
    assert.equal(run.code, 0, `influx exited ${run.code}: ${run.stdout} ${run.stderr}`);
    assert.doesNotMatch(run.stdout + run.stderr, /ERR|Failed/, 'the CLI reported no error');
    for (const [field, value] of [['v', 12.5], ['n', 3]] as const) {
      const points = await pointsOf(`cli_insert,host=a,region=eu.${field}`, before - 60_000, after + 60_000);
      assert.equal(points.length, 1, `${field}: ${JSON.stringify(points)}`);
      assert.equal(points[0][1], value);
      assert.ok(points[0][0] >= before && points[0][0] <= after, `${field}: the server time of the request, ${points[0][0]} in ${before}..${after}`);
    }
  });

  test('INSERT with a timestamp, in the default precision (ns) and with -precision s and ms', async () => {
    const t = Date.UTC(2026, 0, 12, 8, 30);
    const cases: Array<[string, string[], string]> = [
      ['ns', [], `${t}000000`],
      ['s', ['-precision', 's'], `${t / 1000}`],
      ['ms', ['-precision', 'ms'], `${t}`],
    ];
    for (const [i, [name, extra, stamp]] of cases.entries()) {
      const run = await influx(`INSERT cli_precision,p=${name} v=${i + 0.25} ${stamp}`, { extra });
      assert.equal(run.code, 0, `${name}: influx exited ${run.code}: ${run.stdout} ${run.stderr}`);
      assert.doesNotMatch(run.stdout + run.stderr, /ERR/, `${name}: ${run.stdout} ${run.stderr}`);
      assert.deepEqual(await pointsOf(`cli_precision,p=${name}.v`, t - 1000, t + 1000), [[t, i + 0.25]], name);
    }
  });

  test('the CLI shows the service\'s 401 and partial-write answers, and they write nothing', async () => {
    const t = Date.UTC(2026, 0, 12, 9);
    const wrongKey = await influx(`INSERT cli_refused v=1 ${t}000000`, { password: `hk_${'q'.repeat(40)}` });
    assert.match(wrongKey.stdout + wrongKey.stderr, /ERR: .*invalid token/, `${wrongKey.stdout} ${wrongKey.stderr}`);
    const badLine = await influx('INSERT cli_refused v=');
    assert.match(badLine.stdout + badLine.stderr, /ERR: .*partial write: line 1: .* dropped=1/, `${badLine.stdout} ${badLine.stderr}`);
    assert.deepEqual(await pointsOf('cli_refused.v', t - 1000, Date.now() + 60_000), []);
  });

  test('SHOW DATABASES and a SELECT', async () => {
    const at = Date.UTC(2026, 0, 12, 10);
    const insert = await influx(`INSERT cli_select,host=b v=7.75 ${at}`, { extra: ['-precision', 'ms'] });
    assert.equal(insert.code, 0, `${insert.stdout} ${insert.stderr}`);

    const dbs = await influx('SHOW DATABASES', { extra: ['-format', 'json'] });
    assert.equal(dbs.code, 0, `${dbs.stdout} ${dbs.stderr}`);
    const listed = JSON.parse(dbs.stdout) as { results: Array<{ series?: Array<{ name: string; columns: string[]; values: string[][] }> }> };
    const series = listed.results[0].series?.[0];
    assert.equal(series?.name, 'databases', dbs.stdout);
    assert.deepEqual(series?.columns, ['name']);
    assert.ok(series?.values.some(([name]) => name === DB), `${DB} among the databases: ${dbs.stdout}`);

    const select = await influx(`SELECT "v" FROM "cli_select" WHERE time >= ${at - 1000}ms AND time <= ${at + 1000}ms`, { extra: ['-format', 'json', '-precision', 'rfc3339'] });
    assert.equal(select.code, 0, `${select.stdout} ${select.stderr}`);
    const answer = JSON.parse(select.stdout);
    assert.deepEqual(answer.results[0].series, [{ name: 'cli_select', columns: ['time', 'v'], values: [[new Date(at).toISOString().replace('.000Z', 'Z'), 7.75]] }]);

    const epoch = await influx(`SELECT "v" FROM "cli_select" WHERE time >= ${at - 1000}ms AND time <= ${at + 1000}ms`, { extra: ['-format', 'csv'] });
    assert.equal(epoch.code, 0, `${epoch.stdout} ${epoch.stderr}`);
    assert.equal(epoch.stdout.trim(), `name,time,v\ncli_select,${at}000000,7.75`, 'the CLI asks epoch=ns by default');
  });
});
