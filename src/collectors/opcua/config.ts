// An OPC UA collector's `connection` and `items` (WIRE.md part 3), checked before they are saved
// and parsed into the shape the driver runs with. Checking needs no node-opcua (it is loaded only
// when a collector starts), so NodeIds are checked by their text form here.

import crypto from 'node:crypto';
import { badRequest } from '../../../shared/errors.js';

export type SecurityMode = 'None' | 'Sign' | 'SignAndEncrypt';
export type AuthKind = 'anonymous' | 'username' | 'certificate';

/**
 * Policies without RSA PKCS#1 v1.5 encryption: Node 20 refuses that padding for decryption
 * (CVE-2023-46809), so Basic128Rsa15 would fail at run time; Basic256 is deprecated by OPC UA.
 */
export const SECURITY_POLICIES = ['None', 'Basic256Sha256', 'Aes128_Sha256_RsaOaep', 'Aes256_Sha256_RsaPss'] as const;
export type SecurityPolicyName = (typeof SECURITY_POLICIES)[number];
const POLICY_URI_PREFIX = 'http://opcfoundation.org/UA/SecurityPolicy#';

export interface OpcuaConnection {
  endpointUrl: string;
  securityMode: SecurityMode;
  securityPolicy: SecurityPolicyName;
  auth: AuthKind;
  username?: string;
  password?: string;
  /** Certificate auth: the user certificate (PEM) and its key. */
  certificatePem?: string;
  privateKeyPem?: string;
  publishingIntervalMs: number;
  /** Lower-case hex, no separators; absent: a secure connection fails quoting what the server presented. */
  serverCertificateSha1?: string;
  keepUncertain: boolean;
}

export interface NodeItem {
  kind: 'node';
  nodeId: string;
  tag: string;
  samplingIntervalMs: number;
  deadbandAbs?: number;
}

export interface BrowseItem {
  kind: 'browse';
  root: string;
  tagPrefix: string;
  samplingIntervalMs: number;
  deadbandAbs?: number;
}

export type OpcuaItem = NodeItem | BrowseItem;

export const LIMITS = {
  minIntervalMs: 10,
  maxIntervalMs: 3_600_000,
  maxItems: 100_000,
  maxTagLength: 1024,
  /** Variables one collector serves, explicit and browsed together. */
  maxMonitored: 100_000,
  maxBrowseDepth: 32,
};

const CONNECTION_FIELDS = new Set([
  'endpoint_url', 'security_mode', 'security_policy', 'auth', 'username', 'password', 'certificate_pem',
  'private_key_pem', 'publishing_interval_ms', 'server_certificate_sha1', 'keep_uncertain',
]);
const NODE_ITEM_FIELDS = new Set(['node_id', 'tag', 'sampling_interval_ms', 'deadband_abs']);
const BROWSE_ITEM_FIELDS = new Set(['browse', 'tag_prefix', 'sampling_interval_ms', 'deadband_abs']);

export function parseConnection(c: Record<string, unknown>): OpcuaConnection {
  if (c === null || typeof c !== 'object' || Array.isArray(c)) throw badRequest('connection must be an object');
  for (const key of Object.keys(c)) {
    if (!CONNECTION_FIELDS.has(key)) throw badRequest(`connection.${key} is not a field of an OPC UA connection`);
  }
  const endpointUrl = c.endpoint_url;
  if (typeof endpointUrl !== 'string' || !validEndpoint(endpointUrl)) {
    throw badRequest('connection.endpoint_url must be opc.tcp://host[:port][/path]');
  }
  const securityMode = oneOf(c.security_mode ?? 'None', ['None', 'Sign', 'SignAndEncrypt'] as const, 'connection.security_mode');
  const policyText = typeof c.security_policy === 'string' && c.security_policy.startsWith(POLICY_URI_PREFIX)
    ? c.security_policy.slice(POLICY_URI_PREFIX.length) : c.security_policy;
  const securityPolicy = oneOf(policyText ?? (securityMode === 'None' ? 'None' : 'Basic256Sha256'), SECURITY_POLICIES, 'connection.security_policy');
  if ((securityMode === 'None') !== (securityPolicy === 'None')) {
    throw badRequest('connection.security_policy must be None exactly when connection.security_mode is None');
  }
  const auth = oneOf(c.auth ?? 'anonymous', ['anonymous', 'username', 'certificate'] as const, 'connection.auth');
  const out: OpcuaConnection = {
    endpointUrl,
    securityMode,
    securityPolicy,
    auth,
    publishingIntervalMs: interval(c.publishing_interval_ms, 'connection.publishing_interval_ms', 1000),
    keepUncertain: false,
  };
  if (c.keep_uncertain !== undefined) {
    if (typeof c.keep_uncertain !== 'boolean') throw badRequest('connection.keep_uncertain must be true or false');
    out.keepUncertain = c.keep_uncertain;
  }
  if (c.server_certificate_sha1 !== undefined && c.server_certificate_sha1 !== null && c.server_certificate_sha1 !== '') {
    const hex = typeof c.server_certificate_sha1 === 'string' ? c.server_certificate_sha1.replace(/[\s:]/g, '').toLowerCase() : '';
    if (!/^[0-9a-f]{40}$/.test(hex)) throw badRequest('connection.server_certificate_sha1 must be 40 hex digits (the SHA-1 thumbprint of the server certificate)');
    out.serverCertificateSha1 = hex;
  }
  if (auth === 'username') {
    if (typeof c.username !== 'string' || c.username.length === 0 || c.username.length > 256) {
      throw badRequest('connection.username must be a non-empty string for auth "username"');
    }
    if (typeof c.password !== 'string' || c.password.length > 1024) throw badRequest('connection.password must be a string for auth "username"');
    out.username = c.username;
    out.password = c.password;
  }
  if (auth === 'certificate') {
    if (securityMode === 'None') throw badRequest('connection.auth "certificate" needs connection.security_mode Sign or SignAndEncrypt');
    const { certificatePem, privateKeyPem } = userCertificate(c.certificate_pem, c.private_key_pem);
    out.certificatePem = certificatePem;
    out.privateKeyPem = privateKeyPem;
  }
  return out;
}

export function parseItems(items: Array<Record<string, unknown>>, defaultSamplingMs: number): OpcuaItem[] {
  if (!Array.isArray(items) || items.length === 0) throw badRequest('items must be a non-empty array');
  if (items.length > LIMITS.maxItems) throw badRequest(`items may hold at most ${LIMITS.maxItems} entries`);
  const tags = new Map<string, number>();
  return items.map((item, i) => {
    const at = `items[${i}]`;
    if (item === null || typeof item !== 'object' || Array.isArray(item)) throw badRequest(`${at} must be an object`);
    const browse = 'browse' in item;
    const fields = browse ? BROWSE_ITEM_FIELDS : NODE_ITEM_FIELDS;
    for (const key of Object.keys(item)) {
      if (!fields.has(key)) throw badRequest(`${at}.${key} is not a field of ${browse ? 'a browse root' : 'a node item'}`);
    }
    const samplingIntervalMs = interval(item.sampling_interval_ms, `${at}.sampling_interval_ms`, defaultSamplingMs);
    let deadbandAbs: number | undefined;
    if (item.deadband_abs !== undefined && item.deadband_abs !== null) {
      if (typeof item.deadband_abs !== 'number' || !Number.isFinite(item.deadband_abs) || item.deadband_abs < 0) {
        throw badRequest(`${at}.deadband_abs must be a number >= 0`);
      }
      deadbandAbs = item.deadband_abs;
    }
    if (browse) {
      if (typeof item.browse !== 'string' || !validNodeId(item.browse)) throw badRequest(`${at}.browse must be a NodeId such as ns=2;s=Plant or i=85`);
      if (typeof item.tag_prefix !== 'string' || item.tag_prefix.length > LIMITS.maxTagLength / 2) {
        throw badRequest(`${at}.tag_prefix must be a string (it may be empty)`);
      }
      return { kind: 'browse', root: item.browse, tagPrefix: item.tag_prefix, samplingIntervalMs, ...(deadbandAbs === undefined ? {} : { deadbandAbs }) };
    }
    if (typeof item.node_id !== 'string' || !validNodeId(item.node_id)) throw badRequest(`${at}.node_id must be a NodeId such as ns=2;s=Boiler.Temp or ns=3;i=1001`);
    if (typeof item.tag !== 'string' || item.tag.length === 0 || item.tag.length > LIMITS.maxTagLength) {
      throw badRequest(`${at}.tag must be a non-empty string of at most ${LIMITS.maxTagLength} characters`);
    }
    const earlier = tags.get(item.tag);
    if (earlier !== undefined) throw badRequest(`${at}.tag ${JSON.stringify(item.tag)} is already the tag of items[${earlier}]`);
    tags.set(item.tag, i);
    return { kind: 'node', nodeId: item.node_id, tag: item.tag, samplingIntervalMs, ...(deadbandAbs === undefined ? {} : { deadbandAbs }) };
  });
}

/** The text forms of OPC UA Part 6 5.3.1.10: [ns=<n>;|nsu=<uri>;](i=<uint32>|s=<string>|g=<guid>|b=<base64>). */
export function validNodeId(text: string): boolean {
  if (text.length === 0 || text.length > 4096) return false;
  const m = /^(?:ns=(\d{1,5});|nsu=[^;]+;)?(i|s|g|b)=(.+)$/s.exec(text);
  if (!m) return false;
  if (m[1] !== undefined && Number(m[1]) > 65535) return false;
  const value = m[3]!;
  switch (m[2]) {
    case 'i': return /^\d{1,10}$/.test(value) && Number(value) <= 0xffffffff;
    case 'g': return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);
    case 'b': return /^[A-Za-z0-9+/]+={0,2}$/.test(value);
    default: return true;
  }
}

function validEndpoint(text: string): boolean {
  if (text.length > 2048 || !text.startsWith('opc.tcp://')) return false;
  try {
    const url = new URL(text);
    return url.hostname.length > 0 && url.username === '' && url.password === '';
  } catch {
    return false;
  }
}

function oneOf<T extends string>(value: unknown, allowed: readonly T[], field: string): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw badRequest(`${field} must be one of ${allowed.join(', ')}`);
  }
  return value as T;
}

function interval(value: unknown, field: string, fallback: number): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < LIMITS.minIntervalMs || value > LIMITS.maxIntervalMs) {
    throw badRequest(`${field} must be an integer from ${LIMITS.minIntervalMs} to ${LIMITS.maxIntervalMs} (milliseconds)`);
  }
  return value;
}

/** The user certificate and its key must parse and belong together; an error names the field, never the key. */
function userCertificate(certPem: unknown, keyPem: unknown): { certificatePem: string; privateKeyPem: string } {
  if (typeof certPem !== 'string' || certPem.length > 65536) throw badRequest('connection.certificate_pem must be the user certificate (PEM) for auth "certificate"');
  if (typeof keyPem !== 'string' || keyPem.length > 65536) throw badRequest('connection.private_key_pem must be the user certificate\'s private key (PEM) for auth "certificate"');
  let x509: crypto.X509Certificate;
  try {
    x509 = new crypto.X509Certificate(certPem);
  } catch {
    throw badRequest('connection.certificate_pem is not a PEM certificate');
  }
  let key: crypto.KeyObject;
  try {
    key = crypto.createPrivateKey(keyPem);
  } catch {
    throw badRequest('connection.private_key_pem is not a PEM private key');
  }
  if (key.asymmetricKeyType !== 'rsa') throw badRequest('connection.private_key_pem must be an RSA key (OPC UA user certificates are RSA)');
  if (!x509.checkPrivateKey(key)) throw badRequest('connection.private_key_pem does not belong to connection.certificate_pem');
  return { certificatePem: certPem, privateKeyPem: keyPem };
}
