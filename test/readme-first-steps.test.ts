// The README's first section is a newcomer's path: this runs its shell block, as written, against
// a real service on a fresh data dir (only the address and the data dir are this test's own), and
// checks every step did what the README says it does.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startService, tempDir, type TestService } from './api/harness.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');

/** The shell block after the first-steps marker. */
function firstStepsBlock(): string {
  const marker = readme.indexOf('<!-- first-steps:');
  assert.ok(marker > 0, 'the README marks its first-steps block');
  const open = readme.indexOf('```sh\n', marker) + '```sh\n'.length;
  return readme.slice(open, readme.indexOf('\n```', open));
}

function bash(script: string, cwd: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-euo', 'pipefail', '-c', script], { cwd, env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

let service: TestService;
let work: string;
before(async () => {
  // The defaults a newcomer gets: the first admin is admin@localhost with a generated password.
  service = await startService({ env: { HISTORIAN_ADMIN_EMAIL: undefined, HISTORIAN_ADMIN_PASSWORD: undefined } });
  work = tempDir('historian-first-steps-');
});
after(async () => {
  await service.dispose();
  fs.rmSync(work, { recursive: true, force: true });
});

test('the README\'s first steps run as written and write, query and rotate what they say', async () => {
  const block = firstStepsBlock();
  assert.match(block, /^H=https:\/\/localhost:3030 /m);
  assert.match(block, /^DATA=\.\/data /m);
  const script = block
    .replace(/^H=https:\/\/localhost:3030 /m, `H=https://localhost:${service.port} `)
    .replace(/^DATA=\.\/data /m, `DATA=${service.dataDir} `);
  // Run from the repository (where `npx historian` finds the package's command), writing the CA file into a temp folder.
  const result = await bash(`cd ${JSON.stringify(work)}; export PATH=${JSON.stringify(path.join(ROOT, 'node_modules/.bin'))}:$PATH; ${script.replace(/npx historian/g, `npx --prefix ${JSON.stringify(ROOT)} historian`)}`, ROOT, {
    ...process.env,
    HISTORIAN_CONFIG: path.join(service.dataDir, '..', `${path.basename(service.dataDir)}.config.json`),
    HISTORIAN_ADMIN_EMAIL: undefined,
    HISTORIAN_ADMIN_PASSWORD: undefined,
  });
  assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
  const lines = result.stdout.split(/\r?\n/);

  // Step 2 printed the admin's email and password; they log in.
  const at = lines.indexOf('admin@localhost');
  assert.ok(at >= 0, result.stdout);
  const password = lines[at + 1]!;
  assert.equal((await service.post('/svcapi/login', { email: 'admin@localhost', password })).status, 200);

  // Steps 4-5: the collection was made and both writes succeeded.
  assert.ok(lines.some((l) => l.startsWith('{"success":true,"message":"collection demo/plant/boiler-1/main created"')), result.stdout);
  assert.ok(lines.includes('{"success":true,"points":2}'), result.stdout);
  assert.ok(lines.some((l) => l.startsWith('{"id":') && l.includes('"clientId":"demo-lp"')), result.stdout);
  // Step 6: the JSON answer holds both points of TI-101 and the line-protocol point, the CSV its header and rows.
  const json = JSON.parse(lines.find((l) => l.startsWith('{"TI-101"'))!);
  assert.deepEqual(json['TI-101'].map((p: [number, number]) => p[1]), [71.25, 71.5]);
  assert.deepEqual(json['boiler.temp'].map((p: [number, number]) => p[1]), [81.5]);
  const csvStart = lines.indexOf('time,tag,value');
  assert.ok(csvStart > 0, result.stdout);
  assert.equal(lines.slice(csvStart + 1).filter((l) => /^\d+,(TI-101|boiler\.temp),/.test(l)).length, 3);
});

test('the README\'s password rotation (step 8) works as written and removes the stale file', async () => {
  const command = /^\s*(npx historian --data-dir \.\/data user passwd admin@localhost --generate)$/m.exec(readme);
  assert.ok(command, 'the README shows the rotation command');
  const file = path.join(service.dataDir, 'secrets', 'admin-password.txt');
  assert.ok(fs.existsSync(file));
  const result = await bash(command[1]!.replace('npx historian', `npx --prefix ${JSON.stringify(ROOT)} historian`).replace('./data', JSON.stringify(service.dataDir)), ROOT, {
    ...process.env,
    HISTORIAN_CONFIG: path.join(service.dataDir, '..', `${path.basename(service.dataDir)}.config.json`),
    HISTORIAN_ADMIN_EMAIL: undefined,
    HISTORIAN_ADMIN_PASSWORD: undefined,
  });
  assert.equal(result.code, 0, result.stderr);
  const password = /^password: (\S+)$/m.exec(result.stdout)?.[1];
  assert.ok(password, result.stdout);
  assert.equal((await service.post('/svcapi/login', { email: 'admin@localhost', password })).status, 200);
  assert.equal(fs.existsSync(file), false);
});
