// The steps of one connection: client and secure channel (trusting the server by thumbprint),
// session (anonymous, username or user certificate), the item plan (explicit nodes and browsed
// variables), and one subscription with the monitored items grouped by sampling interval and
// deadband. Anything that breaks the connection ends `conn` (collector.ts waits on that).

import crypto from 'node:crypto';
import path from 'node:path';
import type { DataValue, UserIdentityInfo } from 'node-opcua-client';
import type { Logger } from '../../log.js';
import type { AppCertificate } from './app-certificate.js';
import { browseVariables } from './browse.js';
import { ConnectionEnd, describe, type Connection } from './connection.js';
import { LIMITS, type OpcuaConnection, type OpcuaItem } from './config.js';
import type { OpcuaLib } from './library.js';
import { ThumbprintTrust } from './trust.js';

export interface Monitored {
  nodeId: string;
  tag: string;
  samplingIntervalMs: number;
  deadbandAbs?: number;
}

/** Refusals that retrying will not cure: the collector is `failed` until a person acts. */
const FATAL_STATUS = /Bad(UserAccessDenied|IdentityToken\w*|UserSignatureInvalid|CertificateUntrusted|CertificateInvalid|CertificateUseNotAllowed|SecurityChecksFailed|SecurityPolicyRejected|SecurityModeRejected|CertificateUriInvalid|ApplicationSignatureInvalid)/;

export async function openSession(lib: OpcuaLib, conn: Connection, config: OpcuaConnection, cert: AppCertificate, collectorId: string) {
  const trust = new ThumbprintTrust(lib, config.serverCertificateSha1, path.dirname(cert.certFile), cert.keyFile, cert.thumbprint);
  const client = lib.OPCUAClient.create({
    applicationName: 'Historian',
    applicationUri: cert.applicationUri,
    clientName: `historian-collector-${collectorId}`,
    certificateFile: cert.certFile,
    privateKeyFile: cert.keyFile,
    clientCertificateManager: trust as unknown as NonNullable<Parameters<OpcuaLib['OPCUAClient']['create']>[0]['clientCertificateManager']>,
    securityMode: lib.MessageSecurityMode[config.securityMode],
    securityPolicy: lib.SecurityPolicy[config.securityPolicy],
    endpointMustExist: false,
    // No reconnection of node-opcua's own: collector.ts makes every connection from scratch.
    connectionStrategy: { maxRetry: 0, initialDelay: 1000, maxDelay: 2000 },
    keepSessionAlive: true,
    requestedSessionTimeout: 60_000,
  });
  conn.client = client;
  client.on('connection_lost', () => conn.end('connection to the OPC UA server lost'));
  client.on('close', (err?: Error) => conn.end(err ? `connection closed: ${err.message}` : 'connection closed by the server'));
  try {
    await conn.guard(client.connect(config.endpointUrl), 'connect');
  } catch (err) {
    if (trust.problem) throw new ConnectionEnd(trust.problem, true);
    const end = classify(err, cert);
    if (!end.fatal && config.securityMode !== 'None' && /disconnected by third party|rejected by server/i.test(end.message)) {
      // node-opcua servers close the socket without a word when they do not trust the client.
      throw new ConnectionEnd(`the server closed the connection while it was being secured; it may not trust the service's application `
        + `certificate (SHA-1 ${cert.thumbprint}, from GET /svcapi/collectors/opcua/certificate)`, false);
    }
    throw end;
  }
  let session;
  try {
    session = await conn.guard(client.createSession(identity(lib, config)), 'create session');
  } catch (err) {
    throw classify(err, cert);
  }
  conn.session = session;
  session.on('session_closed', () => conn.end('the server closed the session'));
  session.on('keepalive_failure', () => conn.end('the server stopped answering (session keep-alive failed)'));
  return {
    serverTime: () => serverTime(lib, conn),
    plan: (items: OpcuaItem[], log: Logger) => plan(lib, conn, items, log),
  };
}

/**
 * The server's clock (Server_ServerStatus_CurrentTime), read once the items are monitored: a
 * back-fill reads history up to it, and values after it arrive live. Now, if the server will not say.
 */
async function serverTime(lib: OpcuaLib, conn: Connection): Promise<Date> {
  try {
    const dv = await conn.guard(conn.session!.read({ nodeId: 'i=2258', attributeId: lib.AttributeIds.Value }), 'read server time');
    if (dv.statusCode.isGood() && dv.value.value instanceof Date) return dv.value.value;
  } catch (err) {
    if (conn.ended) throw err;
  }
  return new Date();
}

function identity(lib: OpcuaLib, config: OpcuaConnection): UserIdentityInfo {
  if (config.auth === 'username') return { type: lib.UserTokenType.UserName, userName: config.username!, password: config.password! };
  if (config.auth === 'certificate') {
    return { type: lib.UserTokenType.Certificate, certificateData: new crypto.X509Certificate(config.certificatePem!).raw, privateKey: config.privateKeyPem! };
  }
  return { type: lib.UserTokenType.Anonymous };
}

function classify(err: unknown, cert: AppCertificate): ConnectionEnd {
  if (err instanceof ConnectionEnd) return err;
  // node-opcua's messages span lines and number their transports; a status shows one tidy line.
  const message = describe(err).replace(/ClientTCP_transport\d+:\s*/g, '').replace(/\s+/g, ' ').trim();
  const status = FATAL_STATUS.exec(message)?.[0];
  if (status === 'BadSecurityChecksFailed' || status === 'BadCertificateUntrusted') {
    return new ConnectionEnd(`the server refused the connection (${status}): it may not trust the service's application certificate `
      + `(SHA-1 ${cert.thumbprint}, from GET /svcapi/collectors/opcua/certificate) or refused the user`, true);
  }
  if (status) return new ConnectionEnd(`the server refused the session (${status})`, true);
  if (/cannot find endpoint/i.test(message)) return new ConnectionEnd(`the server offers no endpoint with this security mode and policy (${message})`, true);
  return new ConnectionEnd(message, false);
}

/** The items to monitor now: explicit nodes first, then each browse root's numeric variables. */
async function plan(lib: OpcuaLib, conn: Connection, items: OpcuaItem[], log: Logger): Promise<{ monitored: Monitored[]; browsed: number }> {
  const monitored: Monitored[] = [];
  const tags = new Set<string>();
  for (const item of items) {
    if (item.kind !== 'node') continue;
    tags.add(item.tag);
    monitored.push({ nodeId: item.nodeId, tag: item.tag, samplingIntervalMs: item.samplingIntervalMs, ...opt(item.deadbandAbs) });
  }
  let browsed = 0;
  for (const item of items) {
    if (item.kind !== 'browse') continue;
    const room = LIMITS.maxMonitored - monitored.length;
    if (room <= 0) break;
    const found = await conn.guard(browseVariables(lib, conn.session!, item.root, { maxDepth: LIMITS.maxBrowseDepth, maxNodes: LIMITS.maxMonitored }), `browse ${item.root}`, 120_000);
    if (found.truncated) log.warn({ root: item.root }, 'OPC UA browse stopped at its bounds (depth or node count); some variables are not collected');
    if (found.variables.length === 0) log.warn({ root: item.root }, 'OPC UA browse root has no numeric variable below it (or does not exist)');
    for (const v of found.variables.slice(0, room)) {
      const tag = `${item.tagPrefix}${v.path}`;
      if (tags.has(tag) || tag.length === 0 || tag.length > LIMITS.maxTagLength) continue;
      tags.add(tag);
      browsed++;
      monitored.push({ nodeId: v.nodeId, tag, samplingIntervalMs: item.samplingIntervalMs, ...opt(item.deadbandAbs) });
    }
  }
  return { monitored, browsed };
}

function opt(deadbandAbs: number | undefined): { deadbandAbs?: number } {
  return deadbandAbs === undefined ? {} : { deadbandAbs };
}

const ITEMS_PER_CALL = 1000;
/** Statuses that mean "this node takes no deadband" (a Boolean): such items are monitored without one. */
const FILTER_REFUSED = new Set(['BadFilterNotAllowed', 'BadMonitoredItemFilterUnsupported', 'BadMonitoredItemFilterInvalid', 'BadDeadbandFilterInvalid']);

/**
 * One subscription; items created many per call, grouped by sampling interval and deadband (one
 * set of monitoring parameters per group). Returns how many items the server accepted.
 */
export async function monitorAll(
  lib: OpcuaLib,
  conn: Connection,
  config: OpcuaConnection,
  items: Monitored[],
  onValue: (item: Monitored, dv: DataValue) => void,
  log: Logger,
): Promise<number> {
  const session = conn.session!;
  const publishing = config.publishingIntervalMs;
  // A keep-alive at least every ~3 s, so a silent server (a black-holed network: no FIN, no RST)
  // is noticed by the watchdog below within three keep-alive periods (10 s at least).
  const keepAliveCount = Math.max(1, Math.ceil(3000 / publishing));
  const subscription = await conn.guard(session.createSubscription2({
    requestedPublishingInterval: publishing,
    requestedMaxKeepAliveCount: keepAliveCount,
    requestedLifetimeCount: keepAliveCount * 6,
    maxNotificationsPerPublish: 0,
    publishingEnabled: true,
    priority: 1,
  }), 'create subscription');
  conn.subscription = subscription;
  let lastActivity = Date.now();
  subscription.on('keepalive', () => (lastActivity = Date.now()));
  subscription.on('received_notifications', () => (lastActivity = Date.now()));
  subscription.on('terminated', () => conn.end('the subscription ended'));
  subscription.on('status_changed', (status: { name?: string; isGood?: () => boolean }) => {
    // GoodSubscriptionTransferred and the like are news, not an end.
    if (status?.isGood?.()) return;
    conn.end(`the server ended the subscription (${status?.name ?? 'status change'})`);
  });
  const revised = Math.max(publishing, subscription.publishingInterval || publishing) * Math.max(1, subscription.maxKeepAliveCount || keepAliveCount);
  const silence = Math.max(10_000, 3 * revised);
  conn.timers.push(setInterval(() => {
    if (Date.now() - lastActivity > silence) conn.end(`no answer from the server for ${Math.round((Date.now() - lastActivity) / 1000)} s`);
  }, 1000).unref());

  const groups = new Map<string, Monitored[]>();
  for (const item of items) {
    const key = `${item.samplingIntervalMs}|${item.deadbandAbs ?? ''}`;
    let group = groups.get(key);
    if (!group) groups.set(key, (group = []));
    group.push(item);
  }
  let accepted = 0;
  const unknown: string[] = [];
  for (const group of groups.values()) {
    const { samplingIntervalMs, deadbandAbs } = group[0]!;
    for (let i = 0; i < group.length; i += ITEMS_PER_CALL) {
      const chunk = group.slice(i, i + ITEMS_PER_CALL);
      const refused = await monitorChunk(lib, conn, chunk, samplingIntervalMs, publishing, deadbandAbs, onValue);
      accepted += chunk.length - refused.length;
      if (deadbandAbs !== undefined) {
        const retry = refused.filter((r) => FILTER_REFUSED.has(r.status)).map((r) => r.item);
        if (retry.length > 0) {
          const again = await monitorChunk(lib, conn, retry, samplingIntervalMs, publishing, undefined, onValue);
          accepted += retry.length - again.length;
          unknown.push(...again.map((r) => `${r.item.tag}: ${r.status}`));
        }
        unknown.push(...refused.filter((r) => !FILTER_REFUSED.has(r.status)).map((r) => `${r.item.tag}: ${r.status}`));
      } else unknown.push(...refused.map((r) => `${r.item.tag}: ${r.status}`));
    }
  }
  if (unknown.length > 0) log.warn({ count: unknown.length, first: unknown.slice(0, 10) }, 'OPC UA items the server did not accept (not collected)');
  return accepted;
}

async function monitorChunk(
  lib: OpcuaLib,
  conn: Connection,
  chunk: Monitored[],
  samplingIntervalMs: number,
  publishingMs: number,
  deadbandAbs: number | undefined,
  onValue: (item: Monitored, dv: DataValue) => void,
): Promise<Array<{ item: Monitored; status: string }>> {
  const valid: Monitored[] = [];
  const refused: Array<{ item: Monitored; status: string }> = [];
  for (const item of chunk) {
    try {
      lib.resolveNodeId(item.nodeId);
      valid.push(item);
    } catch {
      refused.push({ item, status: 'BadNodeIdInvalid' });
    }
  }
  if (valid.length === 0) return refused;
  const filter = deadbandAbs === undefined ? null : new lib.DataChangeFilter({
    trigger: lib.DataChangeTrigger.StatusValue,
    deadbandType: lib.DeadbandType.Absolute,
    deadbandValue: deadbandAbs,
  });
  const group = await conn.guard(conn.subscription!.monitorItems(
    valid.map((item) => ({ nodeId: item.nodeId, attributeId: lib.AttributeIds.Value })),
    {
      samplingInterval: samplingIntervalMs,
      // Room for every sample of one publishing interval, so none is lost between two publishes.
      queueSize: Math.min(100, Math.max(1, Math.ceil(publishingMs / samplingIntervalMs) + 1)),
      discardOldest: true,
      filter,
    },
    lib.TimestampsToReturn.Both,
  ), 'create monitored items', 120_000);
  const accepted = new Set<number>();
  group.monitoredItems.forEach((mi, index) => {
    if (mi.statusCode.isGood()) accepted.add(index);
    else refused.push({ item: valid[index]!, status: mi.statusCode.name });
  });
  group.on('changed', (_mi: unknown, dv: DataValue, index: number) => {
    if (accepted.has(index)) onValue(valid[index]!, dv);
  });
  return refused;
}
