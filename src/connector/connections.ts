// Connections to a PI Web API: the fields of every connector body (WIRE.md part 2), either given
// ad hoc (admins only) or named by `connection_id`, a saved row of /svcapi/connections usable by
// anyone who can read it. Saved rows keep `password` and `token` sealed (src/secret-box.ts), read
// back as "********"; only admins may create them or change where they point and how they log
// in, so no one else can aim a saved credential at a server of their choosing.

import { badRequest, forbidden, notFound } from '../../shared/errors.js';
import type { AccessGrant } from '../meta/access-grant.js';
import type { EntityStore } from '../meta/entities.js';
import { MASK, type EntityRules } from '../meta/entity-rules.js';
import type { PiConnection } from './pi-client.js';
import { SecretBox } from '../secret-box.js';

/** Fields of a connection as a body gives them. */
export const CONNECTION_FIELDS = ['base_url', 'auth', 'username', 'password', 'token', 'verify_tls', 'ca_pem', 'timeout_ms'] as const;
const SECRET_FIELDS = ['password', 'token'] as const;
const DEFAULT_TIMEOUT_MS = 10_000;
const MAX_TIMEOUT_MS = 300_000;

export class Connections {
  constructor(
    private readonly entities: EntityStore,
    private readonly box: SecretBox,
    private readonly allowedHosts: readonly string[],
  ) {}

  /** The rules of the `connections` table: its secrets sealed with this connector's key, its checks (registered by the connector plugin). */
  entityRules(): EntityRules {
    return {
      adminCreatesOnly: true,
      adminOnlyFields: CONNECTION_FIELDS,
      maskedFields: SECRET_FIELDS,
      prepare: (split) => {
        for (const field of SECRET_FIELDS) {
          const value = split.meta[field];
          if (value === MASK) delete split.meta[field]; // written back as read: keep the stored secret
          else if (typeof value === 'string' && value !== '' && !SecretBox.isSealed(value)) split.meta[field] = this.box.seal(value);
          else if (SecretBox.isSealed(value)) throw badRequest(`${field} must be the secret itself, not a sealed value`);
        }
      },
      validate: (row) => {
        // A saved connection must be usable: the same checks as an ad-hoc one (secrets are sealed by now).
        if (row.base_url !== undefined) this.parse({ ...row, password: undefined, token: undefined }, true, 'saved connection');
      },
    };
  }

  /** The connection a connector body names: its own fields (admins only) or a saved row the caller can read. */
  resolve(body: Record<string, unknown>, grant: AccessGrant): PiConnection {
    if (body.connection_id !== undefined && body.connection_id !== null) {
      const adHoc = CONNECTION_FIELDS.filter((f) => body[f] !== undefined);
      if (adHoc.length > 0) throw badRequest(`give either connection_id or the connection's fields, not both (${adHoc.join(', ')})`);
      const def = this.entities.registry.table('connections');
      const id = String(body.connection_id);
      let row: Record<string, unknown>;
      try {
        row = this.entities.storedMeta(def, grant, id);
      } catch {
        throw notFound(`connection ${id} not found`);
      }
      for (const field of SECRET_FIELDS) {
        if (SecretBox.isSealed(row[field])) {
          try {
            row[field] = this.box.unseal(row[field] as string);
          } catch {
            throw badRequest(`connection ${id}: its ${field} cannot be decrypted (made with another key?); save it again`);
          }
        }
      }
      return this.parse(row, true, `connection ${id}`);
    }
    if (!grant.isAdmin) throw forbidden('an ad-hoc connection (base_url) needs the admin role; use a saved connection_id');
    return this.parse(body, false, 'body');
  }

  /** Checks connection fields; 400 naming the bad one, 403 for a host outside connector.allowedHosts. */
  private parse(fields: Record<string, unknown>, saved: boolean, what: string): PiConnection {
    const named = (field: string) => (saved ? `${what}: ${field}` : field);
    const raw = fields.base_url;
    if (typeof raw !== 'string' || raw === '') throw badRequest(`${named('base_url')} is required (the PI Web API root, e.g. https://pi.example/piwebapi)`);
    let baseUrl: URL;
    try {
      baseUrl = new URL(raw);
    } catch {
      throw badRequest(`${named('base_url')} is not a URL`);
    }
    if (baseUrl.protocol !== 'https:' && baseUrl.protocol !== 'http:') throw badRequest(`${named('base_url')} must be http or https`);
    if (baseUrl.username || baseUrl.password) throw badRequest(`${named('base_url')} must not carry credentials; use auth, username and password`);
    if (baseUrl.search || baseUrl.hash) throw badRequest(`${named('base_url')} must not have a query or fragment`);
    if (this.allowedHosts.length > 0 && !this.allowedHosts.includes(baseUrl.hostname.toLowerCase())) {
      throw forbidden(`host ${baseUrl.hostname} is not in connector.allowedHosts`);
    }
    const auth = fields.auth ?? 'anonymous';
    if (auth !== 'basic' && auth !== 'bearer' && auth !== 'anonymous') throw badRequest(`${named('auth')} must be basic, bearer or anonymous`);
    const text = (field: string): string | undefined => {
      const v = fields[field];
      if (v === undefined || v === null) return undefined;
      if (typeof v !== 'string') throw badRequest(`${named(field)} must be a string`);
      return v;
    };
    const username = text('username');
    const password = text('password');
    const token = text('token');
    if (auth === 'basic' && !saved && (username === undefined || password === undefined)) throw badRequest('auth basic needs username and password');
    if (auth === 'bearer' && !saved && token === undefined) throw badRequest('auth bearer needs token');
    const verify = fields.verify_tls ?? true;
    if (typeof verify !== 'boolean') throw badRequest(`${named('verify_tls')} must be true or false`);
    const caPem = text('ca_pem');
    if (caPem !== undefined && !caPem.includes('-----BEGIN CERTIFICATE-----')) throw badRequest(`${named('ca_pem')} must be PEM certificates`);
    const timeout = fields.timeout_ms ?? DEFAULT_TIMEOUT_MS;
    if (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout < 100 || timeout > MAX_TIMEOUT_MS) {
      throw badRequest(`${named('timeout_ms')} must be a whole number of ms from 100 to ${MAX_TIMEOUT_MS}`);
    }
    return { baseUrl, auth, username, password, token, verifyTls: verify, caPem, timeoutMs: timeout };
  }
}
