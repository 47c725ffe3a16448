// The MQTT collector (WIRE.md part 3 "Plant collectors"): one client of the `mqtt` package per
// collector, subscribed with QoS 1 on a persistent session, so messages published while the
// service is away are queued by the broker and arrive after it comes back. Each message goes to
// its items (Sparkplug B, JSON, plain value), its values to the sink, and its PUBACK only after
// the sink stored them (pipeline.ts).

import fs from 'node:fs';
import path from 'node:path';
import type { IClientOptions, IPublishPacket, MqttClient } from 'mqtt';
import { decodeSparkplugPayload, encodeRebirthRequest } from '../../../native-free-codecs/sparkplug-b.js';
import type { CollectedValue, CollectorDefinition, CollectorDriver, CollectorSink, DriverEnvironment, RunningCollector } from '../driver.js';
import { readConnection, readItems, type MqttConnection } from './config.js';
import { WritePipeline, type Entry } from './pipeline.js';
import { parseSparkplugTopic, SparkplugState, type SavedBirths } from './sparkplug-state.js';
import { PayloadProblem, plainValue, TopicMatcher, type MqttItem } from './topics.js';

const RECONNECT_MIN_MS = 500;
const RECONNECT_MAX_MS = 30_000;
/** QoS 1 messages the broker may have in flight to us unacknowledged (MQTT 5 receive maximum). */
const RECEIVE_MAXIMUM = 1000;
/** Filters per SUBSCRIBE packet. */
const SUBSCRIBE_CHUNK = 1000;
/** Saving the birth certificates waits this long after a change (births come in bursts). */
const SAVE_BIRTHS_AFTER_MS = 1000;
/** CONNACK codes that retrying with the same settings will not fix: bad credentials, not authorized, banned, bad auth method. */
const REFUSED_FOR_GOOD = new Set([4, 5, 134, 135, 138, 140]);

export const mqttDriver: CollectorDriver = {
  kind: 'mqtt',
  secretFields: ['password'],
  validate(connection, items) {
    readConnection(connection);
    readItems(items);
  },
  start(definition, sink, env) {
    return new MqttCollector(definition, sink, env);
  },
};

/**
 * The mqtt package, loaded when the first MQTT collector starts: about 20 MB of memory that a
 * service without MQTT collectors does not pay.
 */
let mqttLibrary: typeof import('mqtt') | null = null;
let loadingMqtt: Promise<typeof import('mqtt')> | null = null;
function loadMqtt(): Promise<typeof import('mqtt')> {
  loadingMqtt ??= import('mqtt').then((lib) => (mqttLibrary = lib));
  return loadingMqtt;
}

/** Where a collector keeps the Sparkplug births it saw (so queued data resolves after a restart). */
function birthsFile(env: DriverEnvironment): string {
  return path.join(env.stateDir, 'sparkplug-births.json');
}

/** A TLS or CONNACK failure that the same settings will meet again (the state becomes `failed`). */
function lastingFailure(err: Error & { code?: unknown }): boolean {
  if (typeof err.code === 'number') return REFUSED_FOR_GOOD.has(err.code);
  return typeof err.code === 'string' && /CERT|SELF_SIGNED|UNABLE_TO_|ERR_TLS|ERR_SSL/.test(err.code);
}

class MqttCollector implements RunningCollector {
  private readonly conn: MqttConnection;
  private readonly items: MqttItem[];
  private readonly matcher: TopicMatcher;
  private readonly pipeline: WritePipeline;
  private readonly sparkplug: SparkplugState | null;
  private readonly birthsPath: string;
  private client: MqttClient | null = null;
  private generation = 0;
  private state: 'connecting' | 'connected' | 'reconnecting' | 'failed' = 'connecting';
  private stateError: string | undefined;
  private attempts = 0;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private saveTimer: NodeJS.Timeout | null = null;
  private stopping = false;

  constructor(
    private readonly definition: CollectorDefinition,
    private readonly sink: CollectorSink,
    private readonly env: DriverEnvironment,
  ) {
    this.conn = readConnection(definition.connection, definition.id);
    this.items = readItems(definition.items);
    this.matcher = new TopicMatcher(this.items);
    this.pipeline = new WritePipeline(sink);
    this.birthsPath = birthsFile(env);
    this.sparkplug = this.items.some((i) => i.format === 'sparkplug_b') ? new SparkplugState(this.loadBirths()) : null;
    sink.state('connecting');
    void loadMqtt().then(
      () => {
        if (!this.stopping) this.connect();
      },
      (err: Error) => this.setState('failed', `the mqtt package did not load: ${err.message}`),
    );
  }

  itemCount(): number {
    return this.items.length;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    await this.pipeline.stop();
    this.saveBirths();
    const client = this.client;
    this.client = null;
    if (client) {
      // A graceful DISCONNECT keeps the session (MQTT 5: its expiry was set at connect).
      await Promise.race([client.endAsync(false).catch(() => undefined), new Promise((r) => setTimeout(r, 2000))]);
      client.end(true);
      retire(client);
    }
  }

  private connect(): void {
    const c = this.conn;
    const options: IClientOptions = {
      clientId: c.clientId,
      clean: c.clean,
      protocolVersion: c.protocolVersion,
      username: c.username,
      password: c.password,
      // Reconnecting is ours (backoff with jitter); the package's would retry at a fixed period.
      reconnectPeriod: 0,
      connectTimeout: 10_000,
      keepalive: 30,
      resubscribe: false,
      rejectUnauthorized: true,
      ...(c.caPem ? { ca: c.caPem } : {}),
      ...(c.protocolVersion === 5 ? { properties: { sessionExpiryInterval: c.clean ? 0 : c.sessionExpirySeconds, receiveMaximum: RECEIVE_MAXIMUM } } : {}),
    };
    const generation = ++this.generation;
    const client = mqttLibrary!.connect(c.url, options);
    this.client = client;
    client.handleMessage = (packet, callback) => this.onPublish(client, generation, packet, callback);
    client.on('connect', (connack) => {
      this.attempts = 0;
      this.setState('connected');
      this.sink.log.info({ sessionPresent: connack.sessionPresent, clientId: c.clientId }, 'mqtt collector connected');
      void this.subscribe(client);
    });
    client.on('error', (err: Error & { code?: unknown }) => {
      if (this.stopping) return;
      const message = `${err.message}${typeof err.code === 'string' && !err.message.includes(err.code) ? ` (${err.code})` : ''}`;
      if (lastingFailure(err)) {
        this.attempts = Math.max(this.attempts, 16);
        this.setState('failed', message);
      } else this.stateError = message;
    });
    client.on('close', () => {
      if (this.client !== client) return;
      this.pipeline.dropGeneration(generation);
      if (this.stopping) return;
      retire(client);
      client.end(true);
      if (this.state === 'connected') this.setState('reconnecting', this.stateError ?? 'connection lost');
      // Never connected yet: still connecting, and the status says why not (a broker that is not there).
      else if (this.state === 'connecting' && this.stateError) this.sink.state('connecting', this.stateError);
      this.scheduleReconnect();
    });
  }

  private scheduleReconnect(): void {
    const base = Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** Math.min(this.attempts, 16));
    this.attempts++;
    // Jitter: collectors cut off together do not all come back in the same instant.
    const delay = Math.round(base * (0.75 + Math.random() * 0.5));
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      if (!this.stopping) this.connect();
    }, delay);
  }

  private setState(state: MqttCollector['state'], error?: string): void {
    if (state === this.state && error === this.stateError) return;
    this.state = state;
    this.stateError = error;
    this.sink.state(state, error);
  }

  private async subscribe(client: MqttClient): Promise<void> {
    // Always, also when the broker kept the session: a changed definition may have new filters.
    const filters = [...new Set(this.items.map((i) => i.topic))];
    for (let at = 0; at < filters.length; at += SUBSCRIBE_CHUNK) {
      const chunk = Object.fromEntries(filters.slice(at, at + SUBSCRIBE_CHUNK).map((f) => [f, { qos: 1 as const }]));
      try {
        const granted = await client.subscribeAsync(chunk);
        const refused = granted.filter((g) => g.qos > 2);
        if (refused.length > 0) this.setState('failed', `broker refused the subscription to ${refused.map((g) => g.topic).slice(0, 5).join(', ')}${refused.length > 5 ? ` and ${refused.length - 5} more` : ''}`);
      } catch (err) {
        if (!this.stopping && this.client === client) this.sink.log.warn({ err: (err as Error).message }, 'mqtt collector: subscribe failed');
        return;
      }
    }
  }

  private onPublish(client: MqttClient, generation: number, packet: IPublishPacket, callback: (err?: Error) => void): void {
    const entry: Entry = { values: [], historical: [], ack: null, generation, done: false, alone: false };
    if (packet.qos > 0 && packet.messageId !== undefined) {
      const messageId = packet.messageId;
      entry.ack = () => {
        // An acknowledgement for a connection that is gone would confirm the redelivered copy instead.
        if (this.client === client && this.generation === generation && client.connected) {
          (client as unknown as { _sendPacket(p: object, cb?: () => void, storeCb?: () => void, noStore?: boolean): void })._sendPacket({ cmd: 'puback', messageId, reasonCode: 0 }, undefined, undefined, true);
        }
      };
    }
    try {
      this.decode(client, packet, entry);
    } catch (err) {
      this.sink.log.warn({ err: (err as Error).message, topic: packet.topic }, 'mqtt collector: message not handled');
      this.sink.skipped(1, 'message not handled');
    }
    this.pipeline.push(entry);
    // An error keeps the package from acknowledging the message itself; the pipeline does once stored.
    const next = () => callback(entry.ack ? new Error('acknowledged once stored') : undefined);
    const wait = this.pipeline.backpressure();
    if (wait) void wait.then(next);
    else next();
  }

  private decode(client: MqttClient, packet: IPublishPacket, entry: Entry): void {
    const topic = packet.topic;
    const payload = packet.payload as Uint8Array;
    const now = this.env.now();
    for (const item of this.matcher.match(topic)) {
      if (item.format !== 'sparkplug_b') {
        const v = plainValue(item, topic, payload, now);
        if (v instanceof PayloadProblem) this.sink.skipped(1, v.reason);
        else entry.values.push(v);
        continue;
      }
      const t = parseSparkplugTopic(topic);
      if (!t || !this.sparkplug) continue;
      let decoded;
      try {
        decoded = decodeSparkplugPayload(payload);
      } catch (err) {
        this.sink.skipped(1, 'sparkplug payload does not decode');
        this.sink.log.warn({ topic, err: (err as Error).message }, 'mqtt collector: sparkplug payload does not decode');
        continue;
      }
      const r = this.sparkplug.handle(t, decoded, now);
      pushAll(entry.values, r.values);
      pushAll(entry.historical, r.historical);
      for (const [reason, n] of r.skipped) this.sink.skipped(n, reason);
      if (r.gap) this.sink.log.warn({ topic, seq: decoded.seq }, 'mqtt collector: sparkplug sequence gap');
      if (r.rebirth) {
        const ncmd = `spBv1.0/${r.rebirth.group}/NCMD/${r.rebirth.edge}`;
        client.publish(ncmd, Buffer.from(encodeRebirthRequest(now)), { qos: 0 }, () => undefined);
        this.sink.log.info({ topic: ncmd }, 'mqtt collector: asked for a sparkplug rebirth');
      }
      if (r.birthsChanged) this.scheduleSaveBirths();
      // One sparkplug item is enough: overlapping filters must not handle the message twice.
      break;
    }
  }

  private loadBirths(): SavedBirths | undefined {
    try {
      return JSON.parse(fs.readFileSync(this.birthsPath, 'utf8')) as SavedBirths;
    } catch {
      return undefined;
    }
  }

  private scheduleSaveBirths(): void {
    this.saveTimer ??= setTimeout(() => {
      this.saveTimer = null;
      this.saveBirths();
    }, SAVE_BIRTHS_AFTER_MS);
  }

  private saveBirths(): void {
    if (this.saveTimer) {
      clearTimeout(this.saveTimer);
      this.saveTimer = null;
    }
    if (!this.sparkplug) return;
    try {
      fs.mkdirSync(path.dirname(this.birthsPath), { recursive: true });
      const tmp = `${this.birthsPath}.tmp`;
      fs.writeFileSync(tmp, JSON.stringify(this.sparkplug.save()));
      fs.renameSync(tmp, this.birthsPath);
    } catch (err) {
      this.sink.log.warn({ err: (err as Error).message }, 'mqtt collector: could not save the sparkplug births');
    }
  }
}

/** A client done with: its late events (a CONNACK timeout after end) go nowhere, and throw nowhere. */
function retire(client: MqttClient): void {
  client.removeAllListeners();
  client.on('error', () => undefined);
}

function pushAll(to: CollectedValue[], from: readonly CollectedValue[]): void {
  for (const v of from) to.push(v);
}
