// GET /svcapi/process-log and /{id} (WIRE.md part 2 "Process log"): the jobs of job-log.ts, admin only.

import { S } from '../http/compile.js';
import type { Route } from '../host/plugin.js';
import type { JsonSchema } from '../http/route.js';
import { notFound } from '../../shared/errors.js';
import { JOB_KINDS, JOB_STATUSES, type JobKind, type JobLog, type JobStatus } from './job-log.js';

const JOB: JsonSchema = S.object(
  {
    id: S.string(), kind: S.string(), status: S.string(), started_ms: S.integer(), finished_ms: { type: ['integer', 'null'] },
    progress: { type: 'number' }, message: S.string(), error: { type: ['string', 'null'] },
  },
  ['id', 'kind', 'status', 'started_ms', 'finished_ms', 'progress', 'message', 'error'],
);

export function processLogRoutes(jobs: JobLog): Route[] {
  const tag = 'Process log';
  return [
    {
      method: 'GET', path: '/svcapi/process-log', auth: 'admin', tag,
      summary: 'Long jobs (backup, restore, seal, purge, backfill), newest first',
      query: {
        type: 'object',
        properties: {
          kind: S.string({ enum: [...JOB_KINDS] }),
          status: S.string({ enum: [...JOB_STATUSES] }),
          from_ms: S.integer({ minimum: 0 }),
          limit: S.integer({ minimum: 1, maximum: 1000, default: 100 }),
        },
        additionalProperties: true,
      },
      responses: { 200: { description: 'jobs', schema: S.object({ jobs: S.array(JOB), total_count: S.integer() }, ['jobs', 'total_count']) } },
      handler: (req) => {
        const q = req.query as { kind?: JobKind; status?: JobStatus; from_ms?: number; limit: number };
        return { body: jobs.list({ kind: q.kind, status: q.status, fromMs: q.from_ms, limit: q.limit }) };
      },
    },
    {
      method: 'GET', path: '/svcapi/process-log/{id}', auth: 'admin', tag,
      summary: 'One job',
      params: S.object({ id: S.string() }, ['id']),
      responses: { 200: { description: 'the job', schema: JOB }, 404: { description: 'no such job' } },
      handler: (req) => {
        const job = jobs.get(req.params.id);
        if (!job) throw notFound(`job ${req.params.id} not found`);
        return { body: job };
      },
    },
  ];
}
