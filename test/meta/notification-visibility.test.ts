// The stream matches each new notification in memory (AccessGrant.seesNotification); every other
// route filters with SQL (AccessGrant.predicate). Both must give the same answer for every row
// and grant, or a dashboard would show what the list hides (or the reverse).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { AccessGrant, type NotificationAudienceFields } from '../../src/meta/access-grant.js';
import { Registry } from '../../src/meta/registry.js';
import { syncEntitySchema } from '../../src/meta/schema.js';
import { Hierarchy } from '../../src/meta/tables/hierarchy.js';
import { prng } from '../support/prng.js';

test('in-memory and SQL notification visibility agree on random rows and grants', () => {
  const db = new Database(':memory:');
  const registry = new Registry();
  syncEntitySchema(db, registry);
  const random = prng(2026);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
  // Two orgs, four sites, eight units.
  for (let org = 1; org <= 2; org++) db.prepare('INSERT INTO orgs (id) VALUES (?)').run(org);
  for (let site = 1; site <= 4; site++) db.prepare('INSERT INTO sites (id, orgsId) VALUES (?, ?)').run(site, 1 + ((site - 1) >> 1));
  for (let unit = 1; unit <= 8; unit++) db.prepare('INSERT INTO units (id, siteId) VALUES (?, ?)').run(unit, 1 + ((unit - 1) >> 1));
  const now = 1_800_000_000_000;
  const users = ['a@plant.test', 'b@plant.test'];
  const rows: Array<NotificationAudienceFields & { id: number }> = [];
  const insert = db.prepare('INSERT INTO notifications (id, userId, orgsId, sitesId, unitsId, expiresAt) VALUES (?, ?, ?, ?, ?, ?)');
  for (let id = 1; id <= 400; id++) {
    const row = {
      id,
      userId: random() < 0.3 ? pick(users) : null,
      orgsId: random() < 0.4 ? pick([1, 2, 9]) : null,
      sitesId: random() < 0.4 ? pick([1, 2, 3, 4, 9]) : null,
      unitsId: random() < 0.4 ? pick([1, 2, 3, 5, 8, 9]) : null,
      expiresAt: random() < 0.2 ? pick([now - 1, now, now + 1]) : null,
    };
    insert.run(row.id, row.userId, row.orgsId, row.sitesId, row.unitsId, row.expiresAt);
    rows.push(row);
  }
  const def = registry.table('notifications');
  const grants = [
    { orgs_id: [], sites_id: [], units_id: [] },
    { orgs_id: ['1'], sites_id: [], units_id: [] },
    { orgs_id: [], sites_id: ['3'], units_id: [] },
    { orgs_id: [], sites_id: [], units_id: ['5', '2'] },
    { orgs_id: ['2'], sites_id: ['1'], units_id: ['1'] },
  ];
  let visibleSomewhere = 0;
  for (const sub of users) {
    for (const g of grants) {
      for (const role of ['read-write', 'admin'] as const) {
        const grant = AccessGrant.of(new Hierarchy(db), registry, { sub, role, ...g });
        const p = grant.predicate(def, 'read', now);
        const bySql = new Set(db.prepare(`SELECT id FROM notifications WHERE ${p.sql}`).pluck().all(...p.params) as number[]);
        for (const row of rows) {
          const inMemory = grant.seesNotification(row, now);
          assert.equal(inMemory, bySql.has(row.id), `${role} ${sub} ${JSON.stringify(g)} row ${JSON.stringify(row)}`);
          if (inMemory && role !== 'admin') visibleSomewhere++;
        }
      }
    }
  }
  assert.ok(visibleSomewhere > 0 && visibleSomewhere < rows.length * users.length * grants.length, 'the cases are mixed');
});

test('visibility examples: addressee, most specific scope, system-wide, expiry', () => {
  const db = new Database(':memory:');
  const registry = new Registry();
  syncEntitySchema(db, registry);
  db.prepare('INSERT INTO orgs (id) VALUES (1), (2)').run();
  db.prepare('INSERT INTO sites (id, orgsId) VALUES (10, 1), (20, 2)').run();
  db.prepare('INSERT INTO units (id, siteId) VALUES (100, 10), (200, 20)').run();
  const now = 1_000;
  const none = { userId: null, orgsId: null, sitesId: null, unitsId: null, expiresAt: null };
  const unitUser = AccessGrant.of(new Hierarchy(db), registry, { sub: 'u@x.test', role: 'read-write', orgs_id: [], sites_id: [], units_id: ['100'] });
  const orgUser = AccessGrant.of(new Hierarchy(db), registry, { sub: 'o@x.test', role: 'read-write', orgs_id: ['1'], sites_id: [], units_id: [] });
  assert.equal(unitUser.seesNotification(none, now), true, 'system-wide');
  assert.equal(unitUser.seesNotification({ ...none, unitsId: 100 }, now), true);
  assert.equal(unitUser.seesNotification({ ...none, orgsId: 1, sitesId: 10, unitsId: 100 }, now), true, 'the unit decides, parents are context');
  assert.equal(unitUser.seesNotification({ ...none, orgsId: 1 }, now), false, 'an org-wide broadcast needs the org');
  assert.equal(unitUser.seesNotification({ ...none, unitsId: 200 }, now), false);
  assert.equal(orgUser.seesNotification({ ...none, unitsId: 100 }, now), true, 'units of a granted org');
  assert.equal(orgUser.seesNotification({ ...none, sitesId: 20 }, now), false);
  assert.equal(orgUser.seesNotification({ ...none, userId: 'u@x.test' }, now), false, 'addressed to someone else');
  assert.equal(unitUser.seesNotification({ ...none, userId: 'u@x.test', unitsId: 200 }, now), true, 'addressed to the caller');
  assert.equal(unitUser.seesNotification({ ...none, expiresAt: now }, now), false, 'expired');
  assert.equal(unitUser.seesNotification({ ...none, expiresAt: now + 1 }, now), true);
});
