// What a command's HTTPS calls need: where the service answers, the credential, and an agent that
// trusts the service's CA (target.ts opens one).

import type https from 'node:https';

export interface Target {
  /** e.g. https://127.0.0.1:3030: a running service, or one the command started on the data dir itself. */
  baseUrl: string;
  /** The Authorization header value: "Bearer <operator token>" or "Bearer hk_<api key>". */
  authorization: string;
  /** Trusts the service's CA; keeps connections alive. */
  agent: https.Agent;
}
