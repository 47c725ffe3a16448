// What a page of the console gets from the shell, and what it gives back.

import type { Api, Session } from './api.js';

export type PageName = 'trends' | 'alarms' | 'notifications' | 'system';

/** A notification as the stream and the list carry it (SPEC "Notification"). */
export interface Notification {
  /** A string on the wire, as every entity id (SPEC "Flat entity convention"). */
  id: string;
  userId: string | null;
  severity: 'info' | 'warn' | 'error' | 'critical';
  source: string;
  title: string;
  body: string;
  link: string | null;
  payload: Record<string, unknown> | null;
  unitsId: string | null;
  createdAt: number;
  readAt: number | null;
}

export interface AppContext {
  readonly api: Api;
  readonly session: Session;
  /** read-write and admin may change things (acknowledge); read-only sees no such control. */
  readonly canWrite: boolean;
  readonly isAdmin: boolean;
  /** Live notifications of the signed-in user (one stream for the whole console); returns an unsubscribe. */
  onNotification(listener: (n: Notification) => void): () => void;
  /** Puts the page's state in the URL (`#/<page>?<params>`), so a link reopens the same view. */
  setParams(params: URLSearchParams, mode: 'push' | 'replace'): void;
  /** Re-reads the header counts (active alarms, unread notifications). */
  refreshCounts(): void;
  /** Says `text` to screen readers (a polite live region). */
  announce(text: string): void;
}

/** A mounted page. */
export interface View {
  readonly root: HTMLElement;
  /** The URL changed while this page stays (back/forward, a pasted link): follow it. */
  onParams?(params: URLSearchParams): void;
  /** Stops timers, sockets and fetches. */
  dispose(): void;
}

export type OpenPage = (ctx: AppContext, params: URLSearchParams) => View;
