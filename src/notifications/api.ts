// What the notification subsystem offers the others: the one producer API (the monitor, backups
// and the connector notify through it), and, for a cluster, the delivery marks its streams write.

import { capability } from '../host/plugin.js';
import { NOTIFICATION_SEVERITIES, NOTIFICATION_SOURCES } from '../meta/entity-rules.js';
import type { Signal } from '../signal.js';
import type { DeliveryMarks } from './stream-hub.js';

export type { DeliveryMarks };

export type NotificationSeverity = (typeof NOTIFICATION_SEVERITIES)[number];
export type NotificationSource = (typeof NOTIFICATION_SOURCES)[number];

/** What a producer gives `notify`. */
export interface NotificationInput {
  severity: NotificationSeverity;
  source: NotificationSource;
  title: string;
  body: string;
  /** Recipient email; absent or null: a broadcast. */
  userId?: string | null;
  orgsId?: number | null;
  sitesId?: number | null;
  unitsId?: number | null;
  link?: string | null;
  redirect?: boolean;
  payload?: Record<string, unknown> | null;
  sourceRef?: string | null;
  expiresAt?: number | null;
}

export interface Notify {
  /** Stores a notification (the same checks as an admin's create; 400 naming a bad field) and fans it out to the streams. */
  notify(input: NotificationInput): void;
  /** The same notification to each admin by name (what concerns no unit, such as a failed backup). */
  notifyAdmins(input: Omit<NotificationInput, 'userId' | 'orgsId' | 'sitesId' | 'unitsId'>): void;
}

/** What the streams of this node delivered, for a cluster's secondary to send to its leader, and the leader to take. */
export interface DeliveryMarking {
  readonly written: Signal<[marks: DeliveryMarks]>;
  merge(marks: DeliveryMarks): void;
}

export const NOTIFY = capability<Notify>('notifications.notify');
export const DELIVERY_MARKS = capability<DeliveryMarking>('notifications.delivery-marks');
