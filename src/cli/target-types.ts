// The service a command talks to (a running one, or one the CLI started on the data dir itself).
// Declared here so import.ts and export.ts compile on their own; src/cli/target.ts makes one.

import type https from 'node:https';

export interface Target {
  /** e.g. https://127.0.0.1:3030 */
  baseUrl: string;
  /** The Authorization header value to send, e.g. "Bearer <jwt>" or "Bearer hk_<api key>". */
  authorization: string;
  /** Trusts the service's CA; keepAlive. */
  agent: https.Agent;
}
