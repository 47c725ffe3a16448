// AccountStore.current against a real metadata database and entity store: the
// state is cached (a row changed behind the store's back is not seen), and
// every entity-store write to a user or its profiles, cascades included,
// clears it at once.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { AccountStore } from '../../src/auth/accounts.js';
import { hashPassword } from '../../src/auth/passwords.js';
import { ServiceClock } from '../../src/clock.js';
import { createLogger } from '../../src/log.js';
import type { AccessGrant } from '../../src/meta/access-grant.js';
import type { Db } from '../../src/meta/database.js';
import type { EntityStore } from '../../src/meta/entities.js';
import type { Registry } from '../../src/meta/registry.js';
import { MetaStore } from '../../src/meta/store.js';

describe('AccountStore.current', () => {
  let dir: string;
  let meta: MetaStore;
  let db: Db;
  let registry: Registry;
  let entities: EntityStore;
  let accounts: AccountStore;
  let admin: AccessGrant;

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'historian-accounts-'));
    meta = MetaStore.open({ dataDir: dir, maxListRows: 1000, regexpBudgetSteps: 100_000 }, new ServiceClock(), createLogger('silent'));
    db = meta.db;
    registry = meta.registry;
    entities = meta.entities;
    accounts = new AccountStore(meta.accounts, crypto.randomBytes(48));
    entities.addHooks(accounts.entityHooks());
    admin = meta.grantOf({ sub: 'admin@localhost', role: 'admin', orgs_id: [], sites_id: [], units_id: [] });
  });
  after(async () => {
    await meta.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const users = () => registry.table('users');
  const profiles = () => registry.table('userprofiles');

  test('answers from its cache until the account changes', async () => {
    assert.ok(accounts.create('cached@plant.test', await hashPassword('pw-123456', 1024), 'c', 'read-write'));
    const first = accounts.current('cached@plant.test');
    assert.equal(first?.role, 'read-write');
    // Behind the store's back: not seen, so no query ran for the second call.
    db.prepare(`UPDATE users SET meta_data = json_set(meta_data, '$.role', 'admin') WHERE email = 'cached@plant.test'`).run();
    assert.equal(accounts.current('cached@plant.test'), first);
    accounts.setRole('cached@plant.test', 'read-only');
    assert.equal(accounts.current('cached@plant.test')?.role, 'read-only');
  });

  test('role, password, grants and deletion through the entity store take effect at once', () => {
    const user = entities.create(users(), admin, { email: 'hooked@plant.test', password: 'scrypt$1$8$1$AAAA$BBBB', role: 'read-write' });
    const email = 'hooked@plant.test';
    const before = accounts.current(email)!;
    assert.deepEqual([before.role, before.units_id], ['read-write', []]);

    entities.merge(users(), admin, user.id, { role: 'read-only' });
    assert.equal(accounts.current(email)!.role, 'read-only', 'PUT role');
    entities.updateWhere(users(), admin, { email }, { role: 'admin' });
    assert.equal(accounts.current(email)!.role, 'admin', 'update-all role');

    const stamp = accounts.current(email)!.stamp;
    entities.merge(users(), admin, user.id, { password: 'scrypt$1$8$1$CCCC$DDDD' });
    assert.notEqual(accounts.current(email)!.stamp, stamp, 'a new password is a new stamp');

    const profile = entities.create(profiles(), admin, { usersId: user.id, accessAllowed: { units: [7] } });
    assert.deepEqual(accounts.current(email)!.units_id, ['7'], 'profile created');
    entities.merge(profiles(), admin, profile.id, { accessAllowed: { units: [7, 8], sites: [3] } });
    assert.deepEqual([accounts.current(email)!.units_id, accounts.current(email)!.sites_id], [['7', '8'], ['3']], 'profile changed');
    entities.deleteById(profiles(), admin, profile.id);
    assert.deepEqual(accounts.current(email)!.units_id, [], 'profile deleted');

    entities.create(profiles(), admin, { usersId: user.id, accessAllowed: { orgs: [1] } });
    assert.deepEqual(accounts.current(email)!.orgs_id, ['1']);
    entities.deleteWhere(users(), admin, { email });
    assert.equal(accounts.current(email), null, 'deleted (profiles cascaded with it)');
    assert.equal(db.prepare('SELECT count(*) FROM userprofiles WHERE usersId = ?').pluck().get(Number(user.id)), 0);
  });

  test('an email given again to a new account has a new stamp', () => {
    const first = entities.create(users(), admin, { email: 'again@plant.test', password: 'scrypt$1$8$1$AAAA$BBBB' });
    const stamp = accounts.current('again@plant.test')!.stamp;
    entities.deleteById(users(), admin, first.id);
    assert.equal(accounts.current('again@plant.test'), null);
    entities.create(users(), admin, { email: 'again@plant.test', password: 'scrypt$1$8$1$AAAA$BBBB' });
    assert.notEqual(accounts.current('again@plant.test')?.stamp, stamp, 'same password hash, new id: new stamp');
  });

  test('an email change moves the state: the old subject no longer exists', () => {
    const user = entities.create(users(), admin, { email: 'old-name@plant.test', password: 'scrypt$1$8$1$AAAA$BBBB' });
    assert.ok(accounts.current('old-name@plant.test'));
    assert.equal(accounts.current('new-name@plant.test'), null, 'cached as missing');
    entities.merge(users(), admin, user.id, { email: 'new-name@plant.test' });
    assert.equal(accounts.current('old-name@plant.test'), null);
    assert.ok(accounts.current('new-name@plant.test'));
  });
});
