// Helpers of the connector API tests (connector.test.ts): the credentials the simulated PI Web API
// accepts, connection bodies aimed at a simulator, connector calls, process-log jobs, reading a
// backfilled tag back, what a backfill should have written (from the simulator's model), and
// searches for credentials where none may be (log lines, answers, files of the data dir).

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { PiSimulator } from '../support/pi-simulator.js';
import type { HttpResult, TestService } from './harness.js';
import type { JobRecord } from '../../src/jobs/job-log.js';

export const C = '/svcapi/connector';

/** Credentials of the simulated PI Web API, random per run so a leak cannot match by chance. */
const salt = crypto.randomBytes(6).toString('hex');
export const PI_USER = `pi-reader-${salt}`;
export const PI_PASSWORD = `Pi-Pass-${salt}-Zq7`;
export const PI_TOKEN = `pi-bearer-${salt}-Kx9`;
/** A password the simulator refuses (sent to provoke upstream 401; it must not leak either). */
export const WRONG_PASSWORD = `Wrong-Pass-${salt}-Jm3`;

/** Every form in which a Basic credential could leak: the password itself and the header value. */
export function basicForms(username: string, password: string): string[] {
  return [password, Buffer.from(`${username}:${password}`).toString('base64'), encodeURIComponent(password)];
}

/** Every credential value these tests send, in the forms it could leak in. */
export function allSecretForms(extra: string[] = []): string[] {
  return [...new Set([...basicForms(PI_USER, PI_PASSWORD), ...basicForms(PI_USER, WRONG_PASSWORD), PI_TOKEN, ...extra.flatMap((p) => basicForms(PI_USER, p))])];
}

export function assertNoSecret(text: string, secrets: readonly string[], what: string): void {
  for (const secret of secrets) assert.ok(!text.includes(secret), `${what} holds a credential (${secret.slice(0, 6)}...): ${text.slice(0, 400)}`);
}

/** An ad-hoc Basic connection to the simulator, trusting its CA. */
export function basicConnection(sim: PiSimulator, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { base_url: sim.baseUrl, auth: 'basic', username: PI_USER, password: PI_PASSWORD, ca_pem: sim.caPem, ...extra };
}

/** POST /svcapi/connector/<route>. */
export function connector(svc: TestService, token: string | undefined, route: string, body: unknown): Promise<HttpResult> {
  return svc.request('POST', `${C}/${route}`, { body, token });
}

/** A browse call that must answer 200 `{items, total}`; returns the items after checking `total`. */
export async function browseOk(svc: TestService, token: string, route: string, body: unknown): Promise<any[]> {
  const res = await connector(svc, token, route, body);
  assert.equal(res.status, 200, `${route}: ${res.text}`);
  assert.ok(Array.isArray(res.body?.items), `${route} answers items: ${res.text.slice(0, 300)}`);
  assert.equal(res.body.total, res.body.items.length, `${route}: total is the number of items after every page`);
  return res.body.items;
}

/** A call that must fail with `status` and an `{error}` matching `pattern`; returns the message. */
export function assertError(res: HttpResult, status: number, pattern: RegExp, what: string): string {
  assert.equal(res.status, status, `${what}: ${res.text}`);
  const message = typeof res.body?.error === 'string' ? res.body.error : typeof res.body?.message === 'string' ? res.body.message : res.text;
  assert.match(message, pattern, `${what}: message`);
  return message;
}

/** Keeps only `keys` of each item (WIRE allows more fields than the documented ones). */
export function project(items: any[], keys: readonly string[]): Array<Record<string, unknown>> {
  return items.map((item) => Object.fromEntries(keys.map((k) => [k, item[k]])));
}

// ---------------------------------------------------------------- process log

export type { JobRecord };

export async function jobOf(svc: TestService, admin: string, id: string): Promise<JobRecord> {
  const res = await svc.get(`/svcapi/process-log/${encodeURIComponent(id)}`, admin);
  assert.equal(res.status, 200, `process-log/${id}: ${res.text}`);
  return res.body as JobRecord;
}

/** Polls the job until `until` holds; `seen` gets every state read on the way. */
export async function untilJob(
  svc: TestService,
  admin: string,
  id: string,
  until: (job: JobRecord) => boolean,
  what: string,
  seen: (job: JobRecord) => void = () => {},
  timeoutMs = 120_000,
): Promise<JobRecord> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const job = await jobOf(svc, admin, id);
    seen(job);
    if (until(job)) return job;
    if (Date.now() > deadline) assert.fail(`${what} (not within ${timeoutMs} ms; the job is now ${JSON.stringify(job)})`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export const finished = (job: JobRecord) => job.status !== 'running';

// ---------------------------------------------------------------- values

export interface Scope {
  organization: string;
  site: string;
  unit: string;
  grid: string;
}

export type Points = Array<[number, number]>;

/** Every point of one tag of the collection in [start, end], through GET /svcapi/fast_query. */
export async function readTag(svc: TestService, token: string, scope: Scope, tag: string, start: number, end: number): Promise<{ res: HttpResult; points: Points | undefined }> {
  const qs = new URLSearchParams({ ...scope, start: String(start), end: String(end) });
  qs.append('tags', tag);
  const res = await svc.get(`/svcapi/fast_query?${qs}`, token);
  return { res, points: res.status === 200 ? (res.body?.[tag] as Points | undefined) : undefined };
}

/** The good numeric values of an attribute in [start, end] as [ts, value]: what a backfill keeps. */
export function goodNumericPoints(sim: PiSimulator, attributePath: string, start: number, end: number): Points {
  const out: Points = [];
  for (const v of sim.recordedValues(attributePath, start, end)) if (v.good && typeof v.value === 'number') out.push([v.timestampMs, v.value]);
  return out;
}

/** Asserts the points are exactly `expected` (same timestamps, same values, same order), naming the first difference. */
export function assertSamePoints(actual: Points | undefined, expected: Points, what: string): void {
  if (!Array.isArray(actual)) assert.fail(`${what}: the tag is not in the answer`);
  const points: Points = actual;
  const seen = new Map<number, number>();
  for (const [ts] of points) seen.set(ts, (seen.get(ts) ?? 0) + 1);
  const twice = [...seen].filter(([, n]) => n > 1);
  assert.deepEqual(twice.slice(0, 5), [], `${what}: every timestamp once (${twice.length} timestamps more than once)`);
  const n = Math.min(points.length, expected.length);
  for (let i = 0; i < n; i++) {
    const [ts, value] = points[i]!;
    const [ets, evalue] = expected[i]!;
    if (ts !== ets || !Object.is(value, evalue)) assert.fail(`${what}: point ${i} is [${ts}, ${value}], expected [${ets}, ${evalue}]`);
  }
  assert.equal(points.length, expected.length, `${what}: number of points`);
}

// ---------------------------------------------------------------- files

/** Files under `dir` whose bytes contain one of `secrets` (as UTF-8), with the secret found. */
export function filesHolding(dir: string, secrets: readonly string[]): string[] {
  const needles = secrets.map((s) => Buffer.from(s, 'utf8'));
  const found: string[] = [];
  const walk = (d: string) => {
    for (const entry of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (entry.isFile()) {
        const bytes = fs.readFileSync(p);
        for (const needle of needles) if (bytes.includes(needle)) found.push(`${path.relative(dir, p)} (${needle.toString().slice(0, 6)}...)`);
      }
    }
  };
  walk(dir);
  return found;
}
