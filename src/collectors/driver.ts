// The contract between the collectors subsystem (saved definitions, leader-only running, status,
// notifications, the write path) and one kind of collector (OPC UA, MQTT). A driver talks to its
// server or broker and hands values to its sink; it never writes to storage itself, so every
// value goes through the same write path as /svcapi/write (live watches and the monitor see it).

import type { Logger } from '../log.js';

/** WIRE.md part 3 "Plant collectors": the states of GET /svcapi/collectors/{id}/status. */
export type CollectorState = 'connecting' | 'connected' | 'reconnecting' | 'failed' | 'disabled';

/** One value to store: the collector's collection, tag `tag`. */
export interface CollectedValue {
  tag: string;
  /** Epoch ms (the source's timestamp when it gives one). */
  ts: number;
  value: number;
}

/** A saved collector as a driver gets it: secrets in `connection` already opened. */
export interface CollectorDefinition {
  id: string;
  name: string;
  kind: string;
  organization: string;
  site: string;
  unit: string;
  grid: string;
  connection: Record<string, unknown>;
  items: Array<Record<string, unknown>>;
}

export interface CollectorSink {
  /**
   * Stores values (all or nothing per call) through the storage write path and resolves once they
   * are durable (write_fast's durability); rejects when they could not be stored (the driver then
   * keeps what its protocol lets it keep, e.g. does not acknowledge an MQTT QoS 1 message).
   * `backfill`: values recovered after a gap (OPC UA HistoryRead): stored without raising alarms.
   */
  write(values: readonly CollectedValue[], options?: { backfill?: boolean }): Promise<void>;
  /**
   * The newest stored timestamp of each of `tags` in the collector's collection (tags with none
   * are absent): where a collector that just started picks up, to back-fill what it missed.
   */
  lastStored(tags: readonly string[]): Promise<Map<string, number>>;
  /** Values seen and not stored (bad status, a type that is not numeric, an undecodable payload), by reason. */
  skipped(count: number, reason: string): void;
  /** A state change (the subsystem notifies the unit's users and shows it in the status). */
  state(state: Exclude<CollectorState, 'disabled'>, error?: string): void;
  /** Logs with the collector's id; never pass a secret. */
  readonly log: Logger;
}

/** What a running collector gives back. */
export interface RunningCollector {
  /** Disconnects and stops every timer; resolves when nothing of it runs any more. */
  stop(): Promise<void>;
  /** Items it serves now (monitored items, topic filters, browsed variables). */
  itemCount(): number;
}

/** What the subsystem gives every driver besides its definition. */
export interface DriverEnvironment {
  /** `<dataDir>/secrets`: where the service's OPC UA application certificate and key live. */
  secretsDir: string;
  /** `<dataDir>/collectors/<id>`: the collector's own files (made by the driver when it needs it; removed with the collector). */
  stateDir: string;
  /** Epoch ms now (the service clock). */
  now(): number;
}

/** One kind of collector. */
export interface CollectorDriver {
  readonly kind: 'opcua' | 'mqtt';
  /** Fields of `connection` stored sealed and answered as "********". */
  readonly secretFields: readonly string[];
  /**
   * Checks a definition's `connection` and `items` before it is saved; throws a 400 (shared/errors
   * `badRequest`) naming the bad field, e.g. `connection.endpoint_url must be opc.tcp://…`.
   */
  validate(connection: Record<string, unknown>, items: Array<Record<string, unknown>>): void;
  /** The service's own certificate for this kind (OPC UA's application certificate), as PEM; made on first use. */
  applicationCertificatePem?(env: DriverEnvironment): string;
  /** Starts collecting; must not throw for a server that is down (it retries and reports states). */
  start(definition: CollectorDefinition, sink: CollectorSink, env: DriverEnvironment): RunningCollector;
}
