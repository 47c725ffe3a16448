// Operator tokens: what the `historian` command signs for itself when it runs as the account that
// owns the data dir (WIRE.md part 3 "Operations"). Reading the data dir's signing secret is the
// proof; the token names an existing account (the first admin, or the one `--as` names) and runs
// with that account's current role and grants like any token. It carries no password stamp (the
// command never reads password hashes), so it is kept short-lived instead, and every one the
// service sees is written to the log as an audit line.

import jwt from 'jsonwebtoken';

/** The claim that marks an operator token; its value says which command signed it. */
export const OPERATOR_CLAIM = 'operator';

/** Longest lifetime an operator token may have; a longer one is refused as invalid. */
export const MAX_OPERATOR_TOKEN_SECONDS = 600;

export interface OperatorClaim {
  /** The command line that signed it, e.g. "user add". */
  command: string;
  /** The signing process, for the audit line. */
  pid: number;
}

/**
 * The signing secret as a secret file holds it: hex text (the data dir's `secrets/jwt.secret`, or a
 * cluster.secretFile written as hex), else the file's raw bytes. The service (auth/tokens.ts) and
 * the historian command read it through this one function, so both sign with the same bytes.
 */
export function secretFromFile(content: Buffer): Buffer {
  const text = content.toString('utf8').trim();
  return /^[0-9a-fA-F]+$/.test(text) && text.length % 2 === 0 ? Buffer.from(text, 'hex') : content;
}

/** A token for `email`, signed with the data dir's secret, valid for `lifetimeSeconds` (≤ 600). */
export function signOperatorToken(secret: Buffer, email: string, claim: OperatorClaim, lifetimeSeconds = 300): string {
  const seconds = Math.min(lifetimeSeconds, MAX_OPERATOR_TOKEN_SECONDS);
  return jwt.sign({ [OPERATOR_CLAIM]: claim }, secret, { algorithm: 'HS256', subject: email, expiresIn: seconds });
}

/** The operator claim of a verified payload, or null when it has none or a malformed one. */
export function operatorClaimOf(payload: Record<string, unknown>): OperatorClaim | null {
  const claim = payload[OPERATOR_CLAIM] as Partial<OperatorClaim> | undefined;
  if (!claim || typeof claim !== 'object' || typeof claim.command !== 'string' || typeof claim.pid !== 'number') return null;
  return { command: claim.command.slice(0, 200), pid: claim.pid };
}
