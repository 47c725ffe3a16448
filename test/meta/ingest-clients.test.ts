// Issue 34 item 8: every ingest request looks its client up by clientId. With 50,000
// ingestconfigs rows a scan of the table made every tenant's ingest twenty times slower; the
// lookup must search an index, whatever the table holds. Checked on the store's own statement
// (its query plan), never by timing it.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { ServiceClock } from '../../src/clock.js';
import { createLogger } from '../../src/log.js';
import { MetaStore } from '../../src/meta/store.js';

const dirs: string[] = [];
after(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

function open(dir?: string): MetaStore {
  if (!dir) {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ingest-clients-'));
    dirs.push(dir);
  }
  return MetaStore.open({ dataDir: dir, maxListRows: 1000, regexpBudgetSteps: 100_000 }, new ServiceClock(), createLogger('silent'));
}

test('the clientId lookup searches an index, with many rows, and finds the one row of each name', async () => {
  const store = open();
  try {
    const def = store.registry.table('ingestconfigs');
    const admin = store.grantAll('test');
    store.entities.createMany(def, admin, Array.from({ length: 2000 }, (_, i) => ({ clientId: `plc-${i}`, organization: 'o', site: 's', unit: `u${i % 7}` })));
    store.db.exec('ANALYZE');
    const plan = store.ingestClients.lookupPlan();
    assert.ok(plan.some((step) => /SEARCH ingestconfigs USING (COVERING )?INDEX ingestconfigs_client_id/.test(step)), `an index search: ${JSON.stringify(plan)}`);
    assert.ok(!plan.some((step) => /\bSCAN\b/.test(step)), `no scan: ${JSON.stringify(plan)}`);
    const found = store.ingestClients.named('plc-1234').map((text) => JSON.parse(text) as { unit: string });
    assert.deepEqual(found.map((row) => row.unit), [`u${1234 % 7}`]);
    assert.deepEqual(store.ingestClients.named('plc-none'), []);
  } finally {
    await store.close();
  }
});

test('a second row with a taken clientId is refused with 409 naming the clientId and nothing of the first row', async () => {
  const store = open();
  try {
    const def = store.registry.table('ingestconfigs');
    const admin = store.grantAll('test');
    store.entities.create(def, admin, { clientId: 'plant-opc', organization: 'victim-org', site: 'victim-site', unit: 'victim-unit' });
    assert.throws(
      () => store.entities.create(def, admin, { clientId: 'plant-opc', organization: 'o', site: 's', unit: 'u' }),
      (err: Error & { status?: number }) => {
        assert.equal(err.status, 409);
        assert.match(err.message, /plant-opc/);
        assert.doesNotMatch(err.message, /victim/);
        return true;
      },
    );
    const other = store.entities.create(def, admin, { clientId: 'other', organization: 'o', site: 's', unit: 'u' });
    // Renaming a row onto a taken name is refused as well; keeping one's own name is not.
    assert.throws(() => store.entities.merge(def, admin, String(other.id), { clientId: 'plant-opc' }), /plant-opc/);
    store.entities.merge(def, admin, String(other.id), { clientId: 'other', grid: 'g' });
    assert.equal(store.ingestClients.named('plant-opc').length, 1);
  } finally {
    await store.close();
  }
});
