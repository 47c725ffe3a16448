// Public utility routes: CA certificate, documentation, discovery, health.
// The OpenAPI document and the docs page are built lazily from the finished
// route table (which includes these routes), then kept.

import fs from 'node:fs';
import type { ServiceInfo } from '../host/builtins.js';
import type { Route } from '../host/plugin.js';
import { hostAddresses } from '../http/certificates.js';
import { S } from '../http/compile.js';
import { buildDocsPage } from '../http/docs-page.js';
import { buildOpenApi, toYaml } from '../http/openapi.js';
import { notFound } from '../../shared/errors.js';

const SUBSYSTEM_HEALTH = S.object(
  {
    status: S.string({ enum: ['ok', 'degraded', 'failed'] }),
    reason: S.string(),
    acceptsWrites: S.boolean(),
    configured: { type: 'object', additionalProperties: S.boolean() },
  },
  ['status'],
);
const HEALTH = S.object(
  {
    status: S.string({ enum: ['ok', 'degraded'] }),
    acceptsWrites: S.boolean(),
    subsystems: { type: 'object', additionalProperties: SUBSYSTEM_HEALTH },
  },
  ['status', 'acceptsWrites', 'subsystems'],
);

export function utilityRoutes(service: ServiceInfo): Route[] {
  let yaml: string | null = null;
  let docsPage: string | null = null;
  const documents = () => {
    if (yaml === null || docsPage === null) {
      const doc = buildOpenApi(service.routes());
      yaml = toYaml(doc);
      docsPage = buildDocsPage(doc);
    }
    return { yaml, docsPage };
  };
  const tag = 'Utility';

  return [
    {
      method: 'GET', path: '/svcapi/ca-cert', auth: 'public', tag,
      summary: 'CA certificate that signed the server certificate (PEM)',
      description: 'Download once and trust it; 404 when the service runs on configured certificates without a CA file.',
      responses: { 200: { description: 'PEM certificate', contentType: 'application/x-pem-file' }, 404: { description: 'no CA file' } },
      handler: () => {
        const caFile = service.caFile;
        if (!caFile) throw notFound('CA certificate is not available');
        let pem: string;
        try {
          pem = fs.readFileSync(caFile, 'utf8');
        } catch {
          throw notFound('CA certificate is not available');
        }
        return { contentType: 'application/x-pem-file', body: pem, headers: { 'content-disposition': 'attachment; filename="ca.crt"' } };
      },
    },
    {
      method: 'GET', path: '/docs', auth: 'public', tag,
      summary: 'Interactive API documentation (HTML, works offline)',
      responses: { 200: { description: 'HTML page', contentType: 'text/html; charset=utf-8' } },
      handler: () => ({ contentType: 'text/html; charset=utf-8', body: documents().docsPage }),
    },
    {
      method: 'GET', path: '/svcapi/openapi.yaml', auth: 'public', tag,
      summary: 'OpenAPI 3 description of every mounted route (YAML)',
      responses: { 200: { description: 'OpenAPI document', contentType: 'application/yaml; charset=utf-8' } },
      handler: () => ({ contentType: 'application/yaml; charset=utf-8', body: documents().yaml }),
    },
    {
      method: 'GET', path: '/svcapi/context/options', auth: 'public', tag,
      summary: 'Context choices for clients (currently always empty lists)',
      responses: {
        200: {
          description: 'option lists',
          schema: S.object(
            { orgs: S.array(S.string()), sites: S.array(S.string()), units: S.array(S.string()) },
            ['orgs', 'sites', 'units'],
          ),
        },
      },
      handler: () => ({ body: { orgs: [], sites: [], units: [] } }),
    },
    {
      method: 'GET', path: '/svcapi/mdns', auth: 'public', tag,
      summary: "This host's local-network HTTPS address",
      responses: { 200: { description: 'address', schema: S.object({ url: S.string() }, ['url']) } },
      handler: () => {
        const { hostname, lanAddress } = hostAddresses();
        return { body: { url: `https://${lanAddress ?? hostname}:${service.port()}` } };
      },
    },
    {
      method: 'GET', path: '/svcapi/health', auth: 'public', tag,
      summary: 'Health of every subsystem; 503 when writes cannot be accepted',
      description:
        'Per subsystem `ok`, `degraded` or `failed`, with the reason (disk guard tripped, a storage shard restarting, a subsystem that ' +
        'failed to start). `status` is `ok` when every subsystem is. Answers 503, with the same body, while writes cannot be accepted ' +
        '(storage failed or stopped, free disk below storage.minFreeBytes). `/ingest/health` stays a plain liveness probe for load balancers.',
      responses: { 200: { description: 'healthy or degraded', schema: HEALTH }, 503: { description: 'writes cannot be accepted', schema: HEALTH } },
      handler: () => {
        const health = service.health();
        return { status: health.acceptsWrites ? 200 : 503, body: health };
      },
    },
    {
      method: 'GET', path: '/ingest/health', auth: 'public', tag: 'Ingest',
      summary: 'Liveness probe',
      responses: { 200: { description: 'alive', schema: S.object({ status: S.string({ enum: ['ok'] }) }, ['status']) } },
      handler: () => ({ body: { status: 'ok' } }),
    },
  ];
}
