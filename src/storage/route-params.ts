// What the time-series route files share: the schema of the four scope fields
// (as query parameters or body fields) and the Accept check for msgpack.

import { S } from '../http/compile.js';
import type { JsonSchema } from '../http/route.js';
import { SCOPE_FIELDS } from '../../shared/scope.js';

export { SCOPE_FIELDS };

export const SCOPE_PROPS: Record<string, JsonSchema> = Object.fromEntries(SCOPE_FIELDS.map((k) => [k, S.string({ minLength: 1 })]));

export const MSGPACK = 'application/msgpack';

/** Whether the client asked for msgpack instead of JSON. */
export function wantsMsgpack(req: { readonly headers: Readonly<Record<string, string>> }): boolean {
  return /application\/(x-)?msgpack/.test(req.headers.accept ?? '');
}
