// Blob and attachment routes (WIRE.md part 2 "Blobs and attachments"): uploads are read as they
// arrive (streamBody) into the content store, downloads are streamed from the content file, with
// Range, ETag (the quoted sha256) and If-None-Match. Their body limit is blob.maxBytes.

import type { GrantedRequest as Request, Route } from '../host/plugin.js';
import { downloadReply } from '../http/byte-range.js';
import { S } from '../http/compile.js';
import type { JsonSchema, Reply } from '../http/route.js';
import type { EntityDef, Registry } from '../meta/registry.js';
import { badRequest, notFound } from '../../shared/errors.js';
import { checkKey, contentTypeOf, type BlobService } from './blobs.js';

const BLOB: JsonSchema = S.object(
  { key: S.string(), size_bytes: S.integer(), content_type: S.string(), sha256: S.string(), created_ms: S.integer() },
  ['key', 'size_bytes', 'content_type', 'sha256', 'created_ms'],
);
const ATTACHMENT: JsonSchema = S.object(
  {
    id: S.string(), entity: S.string(), entityId: S.string(), name: S.string(),
    size_bytes: S.integer(), content_type: S.string(), sha256: S.string(), created_ms: S.integer(),
  },
  ['id', 'entity', 'entityId', 'name', 'size_bytes', 'content_type', 'sha256', 'created_ms'],
);
const KEY_PARAMS = S.object({ key: S.string({ description: '`/`-separated segments of `[A-Za-z0-9._-]`, at most 1024 bytes' }) }, ['key']);
const ID_PARAMS = S.object({ id: S.string() }, ['id']);
const CONTENT = { description: 'the bytes (206 with `Range`)', contentType: '*/*' };
const DOWNLOAD_RESPONSES = {
  200: CONTENT,
  206: { description: 'the requested range', contentType: '*/*' },
  304: { description: '`If-None-Match` names the current ETag' },
  404: { description: 'absent' },
  416: { description: 'no byte satisfies the range' },
};

/**
 * Uploaded bytes are anyone's HTML or script: a browser must save them, never render them on the
 * service's origin (stored XSS), nor guess another type, and a sandboxed page could run nothing.
 */
function servedAsFile(fileName?: string): Record<string, string> {
  return {
    'content-disposition': fileName === undefined ? 'attachment' : `attachment; filename*=UTF-8''${encodeURIComponent(fileName)}`,
    'x-content-type-options': 'nosniff',
    'content-security-policy': "default-src 'none'; sandbox",
  };
}

/** The bytes of a content as a reply: whole, one range of it (206), or 304 when the client has it. */
function download(req: Request, blobs: BlobService, content: { sha256: string; size: number; contentType: string; fileName?: string }): Reply {
  return downloadReply(req.headers, {
    size: content.size, contentType: content.contentType, etag: `"${content.sha256}"`, headers: servedAsFile(content.fileName),
    stream: (start, end, out) => blobs.streamContent(content.sha256, start, end, out),
  });
}

export function blobRoutes(blobs: BlobService, registry: Registry, maxBytes: number): Route[] {
  const tag = 'Blobs and attachments';
  const limits = { maxBodyBytes: maxBytes, maxBodySetting: 'blob.maxBytes' };
  const keyOf = (req: Request): string => {
    // The router drops a trailing slash; a key never ends with one.
    if (req.path.endsWith('/')) throw badRequest('a blob key never ends with "/"');
    const key = req.params.key;
    checkKey(key);
    return key;
  };
  const entityOf = (name: unknown): EntityDef => {
    const def = typeof name === 'string' ? registry.find(name) : undefined;
    if (!def) throw badRequest(`entity must be an entity URL name (orgs, sites, units, equipment, ...); got ${JSON.stringify(name)}`);
    return def;
  };
  const ENTITY_QUERY = {
    entity: S.string({ description: 'entity URL name: `orgs`, `sites`, `units`, `equipment`, ...' }),
    entityId: S.string({ description: 'id of the entity row' }),
  };

  return [
    {
      method: 'GET', path: '/svcapi/blob', auth: 'jwt', tag,
      summary: 'Blobs whose key starts with `prefix`, in key order',
      query: S.object({ prefix: S.string({ default: '' }), limit: S.integer({ minimum: 1, maximum: 10000, default: 1000 }) }, [], { additionalProperties: true }),
      responses: { 200: { description: 'blobs', schema: S.object({ items: S.array(BLOB) }, ['items']) } },
      handler: (req) => {
        const q = req.query as { prefix: string; limit: number };
        return { body: { items: blobs.list(q.prefix, q.limit) } };
      },
    },
    {
      method: 'PUT', path: '/svcapi/blob/{key+}', auth: 'jwt', tag,
      summary: 'Store the body under a key (streamed to disk; identical content is kept once)',
      description: 'The body is the content, of any type (its `Content-Type` is kept and served back, as a download), up to `blob.maxBytes`. 201 for a new key, 200 when it replaced a blob. Only the uploader of a key (or an admin) may replace it (403). 507 below the free-disk floor (`storage.minFreeBytes`) or past `blob.quotaBytesPerUser`.',
      params: KEY_PARAMS,
      streamBody: { description: 'the content, any type' },
      ...limits,
      responses: {
        200: { description: 'replaced', schema: BLOB }, 201: { description: 'created', schema: BLOB },
        403: { description: 'the key belongs to another account' }, 507: { description: 'free-disk floor or blob.quotaBytesPerUser reached' },
      },
      handler: async (req) => {
        const key = keyOf(req);
        const declared = req.headers['content-length'] === undefined ? undefined : Number(req.headers['content-length']);
        const { created, record } = await blobs.put(req.grant, key, contentTypeOf(req.headers['content-type']), req.bodyStream!, Number.isSafeInteger(declared) ? declared : undefined);
        return { status: created ? 201 : 200, body: record };
      },
    },
    {
      method: 'GET', path: '/svcapi/blob/{key+}', auth: 'jwt', tag,
      summary: 'The content of a blob (also HEAD; Range, ETag, If-None-Match)',
      params: KEY_PARAMS,
      responses: DOWNLOAD_RESPONSES,
      handler: (req) => {
        const record = blobs.get(keyOf(req));
        if (!record) throw notFound(`no blob ${req.params.key}`);
        return download(req, blobs, { sha256: record.sha256, size: record.size_bytes, contentType: record.content_type });
      },
    },
    {
      method: 'DELETE', path: '/svcapi/blob/{key+}', auth: 'jwt', tag,
      summary: 'Delete a blob',
      params: KEY_PARAMS,
      responses: { 204: { description: 'deleted' }, 403: { description: 'the key belongs to another account' }, 404: { description: 'absent' } },
      handler: (req) => {
        if (!blobs.delete(req.grant, keyOf(req))) throw notFound(`no blob ${req.params.key}`);
        return { status: 204 };
      },
    },
    {
      method: 'POST', path: '/svcapi/attachments', auth: 'jwt', tag,
      summary: 'Attach the body to an entity row (streamed to disk)',
      description: 'Follows the row scoping of the entity: a row outside your grant is 404, one you can read but not change is 403. The attachment goes when its entity row is deleted.',
      query: S.object({ ...ENTITY_QUERY, name: S.string({ description: 'file name, 1 to 255 characters' }) }, ['entity', 'entityId', 'name'], { additionalProperties: true }),
      streamBody: { description: 'the content, any type' },
      ...limits,
      responses: { 201: { description: 'attached', schema: ATTACHMENT }, 404: { description: 'no such entity row within your grant' } },
      handler: async (req) => {
        const q = req.query as { entity: string; entityId: string; name: string };
        const record = await blobs.attach(entityOf(q.entity), req.grant, q.entityId, q.name, contentTypeOf(req.headers['content-type']), req.bodyStream!);
        return { status: 201, body: record };
      },
    },
    {
      method: 'GET', path: '/svcapi/attachments', auth: 'jwt', tag,
      summary: 'Attachments of an entity row',
      query: S.object(ENTITY_QUERY, ['entity', 'entityId'], { additionalProperties: true }),
      responses: { 200: { description: 'attachments', schema: S.object({ items: S.array(ATTACHMENT) }, ['items']) }, 404: { description: 'no such entity row within your grant' } },
      handler: (req) => {
        const q = req.query as { entity: string; entityId: string };
        return { body: { items: blobs.listAttachments(entityOf(q.entity), req.grant, q.entityId) } };
      },
    },
    {
      method: 'GET', path: '/svcapi/attachments/{id}', auth: 'jwt', tag,
      summary: 'One attachment record',
      params: ID_PARAMS,
      responses: { 200: { description: 'the attachment', schema: ATTACHMENT }, 404: { description: 'absent, or its entity row is outside your grant' } },
      handler: (req) => ({ body: blobs.readableAttachment(req.grant, req.params.id) }),
    },
    {
      method: 'GET', path: '/svcapi/attachments/{id}/content', auth: 'jwt', tag,
      summary: 'The bytes of an attachment (also HEAD; Range, ETag, If-None-Match)',
      params: ID_PARAMS,
      responses: DOWNLOAD_RESPONSES,
      handler: (req) => {
        const record = blobs.readableAttachment(req.grant, req.params.id);
        return download(req, blobs, { sha256: record.sha256, size: record.size_bytes, contentType: record.content_type, fileName: record.name });
      },
    },
    {
      method: 'DELETE', path: '/svcapi/attachments/{id}', auth: 'jwt', tag,
      summary: 'Delete an attachment',
      params: ID_PARAMS,
      responses: { 204: { description: 'deleted' }, 404: { description: 'absent, or its entity row is outside your grant' } },
      handler: (req) => {
        blobs.deleteAttachment(req.grant, req.params.id);
        return { status: 204 };
      },
    },
  ];
}
