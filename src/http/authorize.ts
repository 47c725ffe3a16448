// Who a request runs as, and whether that caller may call the route at all: its credential
// (the `Authorization` header; the `access_token` query parameter on routes that take it; the
// route's own check where it has one), then the route's auth level against the caller's role.
// What the caller's grants open is the handler's business (Request.grant).

import { ServiceError } from '../../shared/errors.js';
import type { Claims } from './caller.js';
import { mutates, type RouteDef } from './route.js';

/** How the server checks a bearer credential (given to it by whoever runs it: auth/ does the checking). */
export interface BearerCheck {
  /** The claims of an `Authorization` header (a bearer token, or a bare one), or throws a 401. */
  verifyToken(authorization: string | undefined): Claims;
}

/** The caller's claims (null on public routes); a promise when the route's own credential check takes time. */
export function authorize<G>(
  def: RouteDef<G>,
  headers: Record<string, string>,
  query: Record<string, unknown>,
  from: { remote: string; path: string },
  tokens: BearerCheck,
): Claims | null | Promise<Claims> {
  if (def.auth === 'public') return null;
  if (def.authenticate) {
    const user = def.authenticate({ headers, query, remoteAddress: from.remote, path: from.path });
    return user instanceof Promise ? user.then((claims) => permit(def, claims)) : permit(def, user);
  }
  const fromQuery = def.tokenInQuery && headers.authorization === undefined && typeof query.access_token === 'string' ? query.access_token : undefined;
  return permit(def, tokens.verifyToken(headers.authorization ?? fromQuery));
}

/**
 * The caller, if its role may call the route: admin routes need an admin, read-only accounts
 * change nothing (but their own credentials, on the routes that declare `openToReadOnly`).
 */
function permit<G>(def: RouteDef<G>, user: Claims): Claims {
  if (def.auth === 'admin' && user.role !== 'admin') throw new ServiceError('FORBIDDEN', 'admin role required');
  if (user.role === 'read-only' && mutates(def) && !def.openToReadOnly) throw new ServiceError('FORBIDDEN', 'read-only account cannot change data');
  return user;
}
