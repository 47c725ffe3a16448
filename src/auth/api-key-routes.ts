// /svcapi/api_keys (WIRE.md part 3 "API keys"): create (the key shown once), list (never the key),
// revoke. Any logged-in user may make keys, a read-only one too (a read-only key: the route is
// declared `openToReadOnly`, since a key is the caller's own credential, not data). A request
// that came with an API key may list keys but neither create nor revoke one, so a leaked key
// cannot mint longer-lived keys or lock its owner's other tools out.

import type { Route } from '../host/plugin.js';
import { ROLES, type Role } from '../http/caller.js';
import { S } from '../http/compile.js';
import type { JsonSchema } from '../http/route.js';
import { MAX_KEYS_PER_ACCOUNT, MAX_NAME_CHARS, type ApiKeys, type NewKeyRequest } from './api-keys.js';

const tag = 'API keys';
const nullableEpochMs = (description: string): JsonSchema => ({ type: ['integer', 'null'], description });
const role = S.string({ enum: [...ROLES], description: "the key's role; never above its creator's, and capped at each use by the creator's current role" });

const KEY_FIELDS = {
  id: S.string(),
  name: S.string(),
  role: S.string({ enum: [...ROLES] }),
  prefix: S.string({ description: 'the first characters of the key, to tell keys apart' }),
  created_ms: S.integer(),
  expires_ms: nullableEpochMs('epoch ms after which the key is refused; null: it does not expire'),
};

export function apiKeyRoutes(keys: ApiKeys): Route[] {
  return [
    {
      method: 'POST', path: '/svcapi/api_keys', auth: 'jwt', tag, openToReadOnly: true,
      summary: 'Make an API key (shown once) for a tool: Grafana, Prometheus, Telegraf, a collector',
      description:
        'The answer holds `key` (`hk_` and 40 letters and digits) this once; only its hash is kept. Send it as `Authorization: Bearer <key>` ' +
        '(or `Token <key>`, Basic with any user name and the key as password, `u`/`p` on the ingest routes, `access_token` where a route takes it). ' +
        "Each use runs as the creator's current account: the lower of the key's role and the creator's role, the creator's grants. " +
        "`role` defaults to the creator's; above it is 403. `expires_ms` must be in the future (omitted or null: no expiry). " +
        `At most ${MAX_KEYS_PER_ACCOUNT} keys an account. A request made with an API key cannot make one (403): log in with your password.`,
      body: S.object(
        {
          name: S.string({ minLength: 1, maxLength: MAX_NAME_CHARS, description: 'what the key is for (shown in lists)' }),
          role,
          expires_ms: { type: ['integer', 'null'], minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'epoch ms after which the key is refused' },
        },
        ['name'],
        { additionalProperties: false },
      ),
      responses: {
        201: { description: 'the key, shown this once', schema: S.object({ ...KEY_FIELDS, key: S.string({ description: 'the API key itself; it is not shown again' }) }, ['id', 'name', 'role', 'key', 'prefix', 'created_ms', 'expires_ms']) },
        400: { description: 'a field is missing or invalid (named), or the account holds the most keys it may' },
        403: { description: 'role above your own, or the request came with an API key' },
      },
      handler: (req) => ({ status: 201, body: keys.create(req.user!, req.body as NewKeyRequest & { role?: Role }) }),
    },
    {
      method: 'GET', path: '/svcapi/api_keys', auth: 'jwt', tag,
      summary: 'Your API keys (an admin: everyone\'s, with their owner); never the keys themselves',
      responses: {
        200: {
          description: 'keys, oldest first',
          schema: S.array(S.object(
            { ...KEY_FIELDS, last_used_ms: nullableEpochMs('last use, written to disk every few seconds; null: never used'), owner: S.string({ description: "the creator's email (admins' lists only)" }) },
            ['id', 'name', 'role', 'prefix', 'created_ms', 'expires_ms', 'last_used_ms'],
          )),
        },
      },
      handler: (req) => ({ body: keys.list(req.user!) }),
    },
    {
      method: 'DELETE', path: '/svcapi/api_keys/{id}', auth: 'jwt', tag, openToReadOnly: true,
      summary: 'Revoke an API key (yours; an admin: anyone\'s): refused from the next request on',
      description: 'A key you cannot see answers 404 like a missing one. A request made with an API key cannot revoke one (403).',
      params: S.object({ id: S.string({ minLength: 1, maxLength: 64 }) }, ['id']),
      responses: {
        200: { description: 'revoked', schema: S.object({ success: S.boolean(), message: S.string() }, ['success', 'message']) },
        403: { description: 'the request came with an API key' },
        404: { description: 'no such key among those you may revoke' },
      },
      handler: (req) => {
        keys.revoke(req.user!, req.params.id!);
        return { body: { success: true, message: 'API key revoked' } };
      },
    },
  ];
}
