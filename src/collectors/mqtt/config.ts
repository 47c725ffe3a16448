// An MQTT collector's `connection` and `items` (WIRE.md part 3 "Plant collectors"): checked before
// a definition is saved (400 naming the field) and read into the settings the client uses.

import { badRequest } from '../../../shared/errors.js';
import { topicFilterProblem, type ItemFormat, type MqttItem } from './topics.js';

export interface MqttConnection {
  url: string;
  username: string | undefined;
  password: string | undefined;
  /** Empty: `historian-<collector id>`. */
  clientId: string;
  clean: boolean;
  /** MQTT 5 (default) or 3.1.1 (4). */
  protocolVersion: 4 | 5;
  /** PEM of the CA that signs the broker's certificate (mqtts); the system's CAs otherwise. */
  caPem: string | undefined;
  /** MQTT 5: how long the broker keeps the session (and queues QoS 1 messages) while we are away. */
  sessionExpirySeconds: number;
}

const FORMATS: readonly ItemFormat[] = ['sparkplug_b', 'json', 'value'];
const CONNECTION_FIELDS = new Set(['url', 'username', 'password', 'client_id', 'clean', 'ca_pem', 'protocol_version', 'session_expiry_s']);
const ITEM_FIELDS = new Set(['topic', 'format', 'tag', 'value_path', 'time_path']);
/** A week: a collector down longer than that has its queued messages dropped by the broker. */
const DEFAULT_SESSION_EXPIRY_S = 7 * 24 * 3600;
/** MQTT client identifiers are UTF-8 strings of at most 65535 bytes; brokers often accept only 23. */
const MAX_CLIENT_ID_BYTES = 65535;

function optionalString(o: Record<string, unknown>, key: string, field: string): string | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw badRequest(`${field} must be a string`);
  return v;
}

/** Checks `connection` and reads it (without opening any secret: the subsystem does). */
export function readConnection(connection: Record<string, unknown>, collectorId = ''): MqttConnection {
  if (connection === null || typeof connection !== 'object' || Array.isArray(connection)) throw badRequest('connection must be an object');
  for (const key of Object.keys(connection)) if (!CONNECTION_FIELDS.has(key)) throw badRequest(`connection.${key} is not a field of an MQTT connection`);
  const url = connection.url;
  if (typeof url !== 'string') throw badRequest('connection.url must be mqtt://host[:port] or mqtts://host[:port]');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw badRequest('connection.url must be mqtt://host[:port] or mqtts://host[:port]');
  }
  if ((parsed.protocol !== 'mqtt:' && parsed.protocol !== 'mqtts:') || parsed.hostname === '') {
    throw badRequest('connection.url must be mqtt://host[:port] or mqtts://host[:port]');
  }
  // Credentials in the URL would be shown and logged with it.
  if (parsed.username !== '' || parsed.password !== '') throw badRequest('connection.url must not carry credentials: use connection.username and connection.password');
  if ((parsed.pathname !== '' && parsed.pathname !== '/') || parsed.search !== '' || parsed.hash !== '') throw badRequest('connection.url must be mqtt://host[:port] or mqtts://host[:port] with no path or query');
  const username = optionalString(connection, 'username', 'connection.username');
  const password = optionalString(connection, 'password', 'connection.password');
  if (password !== undefined && password !== '' && (username === undefined || username === '')) throw badRequest('connection.password needs connection.username');
  const clientId = optionalString(connection, 'client_id', 'connection.client_id') ?? '';
  if (Buffer.byteLength(clientId) > MAX_CLIENT_ID_BYTES) throw badRequest(`connection.client_id must be at most ${MAX_CLIENT_ID_BYTES} bytes`);
  const clean = connection.clean ?? false;
  if (typeof clean !== 'boolean') throw badRequest('connection.clean must be a boolean');
  const version = connection.protocol_version ?? 5;
  if (version !== 4 && version !== 5) throw badRequest('connection.protocol_version must be 5 (MQTT 5) or 4 (MQTT 3.1.1)');
  const caPem = optionalString(connection, 'ca_pem', 'connection.ca_pem');
  if (caPem !== undefined && caPem !== '' && !caPem.includes('-----BEGIN CERTIFICATE-----')) throw badRequest('connection.ca_pem must be a PEM certificate (-----BEGIN CERTIFICATE-----)');
  if (caPem && parsed.protocol !== 'mqtts:') throw badRequest('connection.ca_pem needs an mqtts:// connection.url');
  const expiry = connection.session_expiry_s ?? DEFAULT_SESSION_EXPIRY_S;
  if (typeof expiry !== 'number' || !Number.isInteger(expiry) || expiry < 0 || expiry > 0xffffffff) throw badRequest('connection.session_expiry_s must be an integer in 0..4294967295');
  return {
    url,
    username: username || undefined,
    password: password || undefined,
    clientId: clientId || `historian-${collectorId}`,
    clean,
    protocolVersion: version,
    caPem: caPem || undefined,
    sessionExpirySeconds: expiry,
  };
}

/** Checks `items` and reads them. */
export function readItems(items: Array<Record<string, unknown>>): MqttItem[] {
  if (!Array.isArray(items) || items.length === 0) throw badRequest('items must be a non-empty array');
  return items.map((item, i) => {
    const at = `items[${i}]`;
    if (item === null || typeof item !== 'object' || Array.isArray(item)) throw badRequest(`${at} must be an object`);
    for (const key of Object.keys(item)) if (!ITEM_FIELDS.has(key)) throw badRequest(`${at}.${key} is not a field of an MQTT item`);
    const topic = item.topic;
    if (typeof topic !== 'string') throw badRequest(`${at}.topic must be an MQTT topic filter`);
    const problem = topicFilterProblem(topic);
    if (problem) throw badRequest(`${at}.topic ${problem}`);
    const format = item.format;
    if (typeof format !== 'string' || !FORMATS.includes(format as ItemFormat)) throw badRequest(`${at}.format must be one of ${FORMATS.join(', ')}`);
    const tag = optionalString(item, 'tag', `${at}.tag`);
    if (tag === '') throw badRequest(`${at}.tag must not be empty`);
    const valuePath = optionalString(item, 'value_path', `${at}.value_path`);
    const timePath = optionalString(item, 'time_path', `${at}.time_path`);
    for (const [name, path] of [['value_path', valuePath], ['time_path', timePath]] as const) {
      if (path === undefined) continue;
      if (format !== 'json') throw badRequest(`${at}.${name} is only for format json`);
      if (path === '' || path.split('.').some((part) => part === '')) throw badRequest(`${at}.${name} must be a dot path such as data.value`);
    }
    if (format === 'sparkplug_b') {
      if (!(topic === 'spBv1.0/#' || topic.startsWith('spBv1.0/'))) throw badRequest(`${at}.topic must start with spBv1.0/ for format sparkplug_b`);
      if (tag !== undefined) throw badRequest(`${at}.tag is not for format sparkplug_b (tags are <group>/<edge node>[/<device>]/<metric name>)`);
    }
    const out: MqttItem = { topic, format: format as ItemFormat };
    if (tag !== undefined) out.tag = tag;
    if (valuePath !== undefined) out.valuePath = valuePath.split('.');
    if (timePath !== undefined) out.timePath = timePath.split('.');
    return out;
  });
}
