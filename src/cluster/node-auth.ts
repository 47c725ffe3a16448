// The node credential (WIRE.md part 2 "Cluster": shadow_write "needs an admin token or a node
// credential"): `Authorization: Node <nodeId>.<ms>.<hmac>`, where hmac is HMAC-SHA256 with the
// cluster secret every node reads (cluster.secretFile) over the node id and the time it was made.
// It is good for CREDENTIAL_WINDOW_MS either side of the receiver's clock; the TLS between nodes
// keeps it from being seen.

import crypto from 'node:crypto';
import type { Claims } from '../http/caller.js';
import { ServiceError } from '../../shared/errors.js';

const CREDENTIAL_WINDOW_MS = 5 * 60_000;
const PREFIX = 'Node ';

function mac(secret: Buffer, nodeId: string, ms: number): string {
  return crypto.createHmac('sha256', secret).update(`historian-node\n${nodeId}\n${ms}`).digest('hex');
}

export function nodeCredential(secret: Buffer, nodeId: string, now = Date.now()): string {
  return `${PREFIX}${nodeId}.${now}.${mac(secret, nodeId, now)}`;
}

/** Whether an Authorization header is a node credential at all (else it is a token). */
export function isNodeCredential(header: string | undefined): boolean {
  return header !== undefined && header.startsWith(PREFIX);
}

/** The claims a valid node credential stands for: an administrator named after the node. */
export function verifyNodeCredential(secret: Buffer, header: string, now = Date.now()): Claims {
  const match = /^Node ([A-Za-z0-9._-]{1,64})\.([0-9]{1,15})\.([0-9a-f]{64})$/.exec(header);
  if (!match) throw new ServiceError('UNAUTHORIZED', 'malformed node credential');
  const [, nodeId, msText, given] = match;
  const ms = Number(msText);
  if (Math.abs(now - ms) > CREDENTIAL_WINDOW_MS) throw new ServiceError('UNAUTHORIZED', 'node credential expired (are the nodes\' clocks in step?)');
  const expected = mac(secret, nodeId, ms);
  if (!crypto.timingSafeEqual(Buffer.from(given, 'hex'), Buffer.from(expected, 'hex'))) throw new ServiceError('UNAUTHORIZED', 'node credential does not verify (another cluster secret?)');
  return { sub: `node:${nodeId}`, role: 'admin', units_id: [], sites_id: [], orgs_id: [], exp: Math.floor(now / 1000) + 60 };
}
