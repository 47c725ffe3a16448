// A Sparkplug B edge node for tests and the bench, on a real MQTT client: births with aliases,
// data by alias with the node's sequence numbers (0..255, wrapping), NDEATH as its will, and
// the NCMDs it receives (a host asking for a rebirth) kept for assertions.

import mqtt, { type MqttClient } from 'mqtt';
import { decodeSparkplugPayload, encodeSparkplugPayload, SparkplugType, type SparkplugMetricInput, type SparkplugPayload } from '../../native-free-codecs/sparkplug-b.js';

export class EdgeNode {
  private seq = 0;
  readonly commands: SparkplugPayload[] = [];

  private constructor(
    readonly client: MqttClient,
    readonly group: string,
    readonly edge: string,
    readonly bdSeq: number,
  ) {}

  static async connect(url: string, group: string, edge: string, opts: { bdSeq?: number; ca?: string; username?: string; password?: string } = {}): Promise<EdgeNode> {
    const bdSeq = opts.bdSeq ?? 0;
    const client = await mqtt.connectAsync(url, {
      clientId: `edge-${group}-${edge}-${Math.random().toString(36).slice(2, 8)}`,
      clean: true,
      reconnectPeriod: 500,
      username: opts.username,
      password: opts.password,
      ...(opts.ca ? { ca: opts.ca } : {}),
      will: {
        topic: `spBv1.0/${group}/NDEATH/${edge}`,
        payload: Buffer.from(encodeSparkplugPayload({ timestamp: Date.now(), metrics: [{ name: 'bdSeq', datatype: SparkplugType.UInt64, value: bdSeq }] })),
        qos: 1,
        retain: false,
      },
    });
    const node = new EdgeNode(client, group, edge, bdSeq);
    client.on('message', (_topic, payload) => node.commands.push(decodeSparkplugPayload(payload)));
    await client.subscribeAsync(`spBv1.0/${group}/NCMD/${edge}`, { qos: 1 });
    return node;
  }

  /** NCMDs that asked for a rebirth. */
  rebirthRequests(): number {
    return this.commands.filter((c) => c.metrics.some((m) => m.name === 'Node Control/Rebirth' && m.field === 'boolean' && m.number === 1)).length;
  }

  topic(type: string, device?: string): string {
    return `spBv1.0/${this.group}/${type}/${this.edge}${device === undefined ? '' : `/${device}`}`;
  }

  private nextSeq(): number {
    const s = this.seq;
    this.seq = (this.seq + 1) % 256;
    return s;
  }

  /** Skips `n` sequence numbers (to make a gap). */
  skipSeq(n: number): void {
    this.seq = (this.seq + n) % 256;
  }

  async publish(type: string, metrics: readonly SparkplugMetricInput[], opts: { device?: string; timestamp?: number; qos?: 0 | 1; seq?: boolean } = {}): Promise<void> {
    const payload = encodeSparkplugPayload({ timestamp: opts.timestamp ?? Date.now(), metrics, ...(opts.seq === false ? {} : { seq: this.nextSeq() }) });
    await this.client.publishAsync(this.topic(type, opts.device), Buffer.from(payload), { qos: opts.qos ?? 1 });
  }

  /** NBIRTH: sequence restarts at 0; bdSeq and Node Control/Rebirth come first, as the spec has them. */
  async birth(metrics: readonly SparkplugMetricInput[], timestamp?: number): Promise<void> {
    this.seq = 0;
    await this.publish('NBIRTH', [
      { name: 'bdSeq', datatype: SparkplugType.UInt64, value: this.bdSeq },
      { name: 'Node Control/Rebirth', datatype: SparkplugType.Boolean, value: false },
      ...metrics,
    ], { timestamp });
  }

  deviceBirth(device: string, metrics: readonly SparkplugMetricInput[], timestamp?: number): Promise<void> {
    return this.publish('DBIRTH', metrics, { device, timestamp });
  }

  data(metrics: readonly SparkplugMetricInput[], opts: { device?: string; timestamp?: number; qos?: 0 | 1 } = {}): Promise<void> {
    return this.publish(opts.device === undefined ? 'NDATA' : 'DDATA', metrics, opts);
  }

  deviceDeath(device: string): Promise<void> {
    return this.publish('DDEATH', [], { device });
  }

  async death(): Promise<void> {
    const payload = encodeSparkplugPayload({ timestamp: Date.now(), metrics: [{ name: 'bdSeq', datatype: SparkplugType.UInt64, value: this.bdSeq }] });
    await this.client.publishAsync(this.topic('NDEATH'), Buffer.from(payload), { qos: 1 });
  }

  async close(): Promise<void> {
    await this.client.endAsync(true);
  }
}
