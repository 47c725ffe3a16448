// Accounts with grants, for API tests that check what each caller sees: an admin makes the
// entity rows and a user's userprofiles grant, then the user logs in (so the token's claims
// show the grant).

import assert from 'node:assert/strict';
import type { HttpResult, TestService } from './harness.js';

export const USER_PASSWORD = 'user-password-1';

export const filterQuery = (filter: unknown) => `filter=${encodeURIComponent(JSON.stringify(filter))}`;

export interface Account {
  email: string;
  id: string;
  token: string;
}

export type Grant = { orgs?: string[]; sites?: string[]; units?: string[] };

/** Calls bound to a service and its admin token (both read when called, so a suite may set them later). */
export function accountHelpers(svcRef: () => TestService, adminRef: () => string) {
  const call = (token: string | undefined, method: string, urlPath: string, body?: unknown): Promise<HttpResult> =>
    svcRef().request(method, urlPath, { body, token });
  /** Creates an entity as admin; returns its id. */
  const mk = async (url: string, body: object): Promise<string> => {
    const res = await call(adminRef(), 'POST', `/svcapi/${url}`, body);
    assert.equal(res.status, 200, `${url}: ${res.text}`);
    return res.body.id as string;
  };
  /** A registered account, with a userprofiles grant when `grant` is given, logged in after the grant. */
  const account = async (email: string, grant?: Grant): Promise<Account> => {
    const svc = svcRef();
    await svc.newUser(email, USER_PASSWORD);
    const user = (await call(adminRef(), 'GET', `/svcapi/users/findOne?${filterQuery({ where: { email } })}`)).body;
    assert.equal(typeof user?.id, 'string', `users/findOne ${email}`);
    if (grant) await mk('userprofiles', { usersId: user.id, accessAllowed: { orgs: [], sites: [], units: [], ...grant } });
    return { email, id: user.id, token: await svc.login(email, USER_PASSWORD) };
  };
  return { call, mk, account };
}
