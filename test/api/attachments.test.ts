// Attachments (WIRE.md part 2 "Blobs and attachments", issue 20): bytes attached to an entity
// row, following that row's scoping (a caller outside the grant sees 404 and cannot attach), and
// going with the row, also when it goes by cascade (an org deleted with its sites and units).

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { accountHelpers, type Account } from './accounts.js';
import { blobFiles, download, generated, sha256Of, upload } from './blob-support.js';
import { startService, type TestService } from './harness.js';

describe('attachments', () => {
  let svc: TestService;
  let admin: string;
  let acmeUser: Account;
  let otherTenant: Account;
  const ids: Record<string, string> = {};
  const { mk, account } = accountHelpers(() => svc, () => admin);

  const attach = (token: string, entity: string, entityId: string, name: string, body: string | Buffer, contentType = 'application/octet-stream') =>
    svc.request('POST', `/svcapi/attachments?entity=${entity}&entityId=${entityId}&name=${encodeURIComponent(name)}`, { rawBody: body, token, headers: { 'content-type': contentType } });
  const list = (token: string, entity: string, entityId: string) => svc.request('GET', `/svcapi/attachments?entity=${entity}&entityId=${entityId}`, { token });

  before(async () => {
    svc = await startService();
    admin = await svc.adminToken();
    ids.acme = await mk('orgs', { name: 'acme' });
    ids.north = await mk('sites', { name: 'north', orgsId: ids.acme });
    ids.boiler = await mk('units', { name: 'boiler-1', siteId: ids.north });
    ids.pump = await mk('equipment', { name: 'pump', unitsId: ids.boiler });
    ids.evil = await mk('orgs', { name: 'evil' });
    acmeUser = await account('acme-user@plant.test', { orgs: [ids.acme] });
    otherTenant = await account('evil-user@plant.test', { orgs: [ids.evil] });
  });
  after(() => svc?.dispose());

  test('create, list, get, content (byte-exact, Range, ETag), delete', async () => {
    const bytes = Buffer.concat([...generated(2 * 1024 * 1024 + 17, 21)]);
    const created = await attach(acmeUser.token, 'equipment', ids.pump, 'wiring diagram.pdf', bytes, 'application/pdf');
    assert.equal(created.status, 201, created.text);
    const record = created.body;
    assert.deepEqual(Object.keys(record).sort(), ['content_type', 'created_ms', 'entity', 'entityId', 'id', 'name', 'sha256', 'size_bytes']);
    assert.equal(record.entity, 'equipment');
    assert.equal(record.entityId, ids.pump);
    assert.equal(record.name, 'wiring diagram.pdf');
    assert.equal(record.size_bytes, bytes.length);
    assert.equal(record.content_type, 'application/pdf');
    assert.equal(record.sha256, sha256Of([bytes]));
    const listed = await list(acmeUser.token, 'equipment', ids.pump);
    assert.equal(listed.status, 200);
    assert.deepEqual(listed.body.items, [record]);
    assert.deepEqual((await svc.get(`/svcapi/attachments/${record.id}`, acmeUser.token)).body, record);
    const content = await svc.get(`/svcapi/attachments/${record.id}/content`, acmeUser.token);
    assert.equal(content.status, 200);
    assert.equal(content.headers['content-type'], 'application/pdf');
    assert.equal(content.headers.etag, `"${record.sha256}"`);
    // Served as a download under its name, never rendered on the service's origin.
    assert.equal(content.headers['content-disposition'], "attachment; filename*=UTF-8''wiring%20diagram.pdf");
    assert.equal(content.headers['x-content-type-options'], 'nosniff');
    assert.equal(content.headers['content-security-policy'], "default-src 'none'; sandbox");
    assert.ok(content.bytes.equals(bytes), 'byte-exact');
    const streamed = await download(svc, `/svcapi/attachments/${record.id}/content`, { token: admin });
    assert.equal(streamed.sha256, record.sha256);
    const part = await svc.request('GET', `/svcapi/attachments/${record.id}/content`, { token: acmeUser.token, headers: { range: 'bytes=5-9' } });
    assert.equal(part.status, 206);
    assert.ok(part.bytes.equals(bytes.subarray(5, 10)));
    const cached = await svc.request('GET', `/svcapi/attachments/${record.id}/content`, { token: acmeUser.token, headers: { 'if-none-match': `"${record.sha256}"` } });
    assert.equal(cached.status, 304);
    assert.equal((await svc.request('DELETE', `/svcapi/attachments/${record.id}`, { token: acmeUser.token })).status, 204);
    assert.equal((await svc.get(`/svcapi/attachments/${record.id}`, acmeUser.token)).status, 404);
    assert.equal((await svc.get(`/svcapi/attachments/${record.id}/content`, acmeUser.token)).status, 404);
    assert.deepEqual((await list(acmeUser.token, 'equipment', ids.pump)).body.items, []);
    assert.ok(!blobFiles(svc.dataDir).contents.includes(record.sha256), 'the content went with its last attachment');
  });

  test('another tenant gets 404 for the attachments of a row outside its grant, and cannot attach to it or delete them', async () => {
    const created = await attach(acmeUser.token, 'units', ids.boiler, 'manual.txt', 'acme secret manual', 'text/plain');
    assert.equal(created.status, 201, created.text);
    const id = created.body.id;
    assert.equal((await list(otherTenant.token, 'units', ids.boiler)).status, 404);
    assert.equal((await svc.get(`/svcapi/attachments/${id}`, otherTenant.token)).status, 404);
    const content = await svc.get(`/svcapi/attachments/${id}/content`, otherTenant.token);
    assert.equal(content.status, 404);
    assert.ok(!content.text.includes('secret'));
    assert.equal((await svc.request('DELETE', `/svcapi/attachments/${id}`, { token: otherTenant.token })).status, 404);
    const refused = await attach(otherTenant.token, 'units', ids.boiler, 'planted.txt', 'not yours');
    assert.equal(refused.status, 404);
    assert.equal((await attach(otherTenant.token, 'orgs', ids.acme, 'planted.txt', 'not yours')).status, 404);
    assert.deepEqual(blobFiles(svc.dataDir).temporary, []);
    // The owner still sees exactly its own attachment; the other tenant can use its own org.
    assert.deepEqual((await list(acmeUser.token, 'units', ids.boiler)).body.items.map((a: { name: string }) => a.name), ['manual.txt']);
    assert.equal((await attach(otherTenant.token, 'orgs', ids.evil, 'own.txt', 'mine')).status, 201);
    assert.equal((await list(otherTenant.token, 'customers', ids.evil)).body.items.length, 1, 'an alias names the same entity');
    // Unknown entities, ids that do not exist, and a missing name are refused.
    assert.equal((await attach(admin, 'nonsense', '1', 'x', 'x')).status, 400);
    assert.equal((await attach(admin, 'units', '999999', 'x', 'x')).status, 404);
    assert.equal((await svc.request('POST', `/svcapi/attachments?entity=units&entityId=${ids.boiler}`, { rawBody: 'x', token: admin })).status, 400);
    assert.equal((await svc.request('DELETE', `/svcapi/attachments/${id}`, { token: acmeUser.token })).status, 204);
  });

  test('deleting the entity removes its attachments; deleting an org removes those of its sites, units and equipment (cascade)', async () => {
    const org = await mk('orgs', { name: 'doomed' });
    const site = await mk('sites', { name: 'doomed-site', orgsId: org });
    const unit = await mk('units', { name: 'doomed-unit', siteId: site });
    const eq = await mk('equipment', { name: 'doomed-eq', unitsId: unit });
    const lone = await mk('equipment', { name: 'lone', unitsId: ids.boiler });
    const made: Record<string, { id: string; sha256: string }> = {};
    for (const [entity, id] of [['orgs', org], ['sites', site], ['units', unit], ['equipment', eq], ['equipment', lone]] as const) {
      const res = await attach(admin, entity, id, `${entity}-${id}.bin`, `content of ${entity} ${id}`);
      assert.equal(res.status, 201, res.text);
      made[`${entity}/${id}`] = res.body;
    }
    // Shared content: the same bytes on a row that stays keep their file.
    const kept = await attach(admin, 'units', ids.boiler, 'copy.bin', `content of units ${unit}`);
    assert.equal(kept.status, 201);

    assert.equal((await svc.request('DELETE', `/svcapi/equipment/${lone}`, { token: admin })).status, 200);
    assert.equal((await svc.get(`/svcapi/attachments/${made[`equipment/${lone}`].id}`, admin)).status, 404);
    assert.ok(!blobFiles(svc.dataDir).contents.includes(made[`equipment/${lone}`].sha256));

    assert.equal((await svc.request('DELETE', `/svcapi/orgs/${org}`, { token: admin })).status, 200);
    for (const key of ['orgs', 'sites', 'units', 'equipment'].map((e, i) => `${e}/${[org, site, unit, eq][i]}`)) {
      assert.equal((await svc.get(`/svcapi/attachments/${made[key].id}`, admin)).status, 404, `${key}'s attachment goes with the org`);
    }
    const files = blobFiles(svc.dataDir).contents;
    for (const key of [`orgs/${org}`, `sites/${site}`, `equipment/${eq}`]) assert.ok(!files.includes(made[key].sha256), `${key}'s content file is gone`);
    assert.ok(files.includes(made[`units/${unit}`].sha256), 'content another attachment still refers to stays');
    assert.equal((await svc.get(`/svcapi/attachments/${kept.body.id}/content`, admin)).text, `content of units ${unit}`);
  });

  test('a large attachment is streamed in and out byte-exact; read-only callers cannot attach', async () => {
    const size = 12 * 1024 * 1024;
    const expected = sha256Of(generated(size, 33));
    const up = await upload(svc, `/svcapi/attachments?entity=equipment&entityId=${ids.pump}&name=trend.bin`, generated(size, 33), { token: acmeUser.token, method: 'POST', contentLength: null });
    assert.equal(up.status, 201, up.text);
    assert.equal(up.body.sha256, expected);
    const got = await download(svc, `/svcapi/attachments/${up.body.id}/content`, { token: acmeUser.token, pauseEvery: 1024 * 1024, pauseMs: 10 });
    assert.equal(got.size, size);
    assert.equal(got.sha256, expected);
    const made = await svc.request('POST', '/svcapi/users', { token: admin, body: { email: 'ro@plant.test', password: 'ro-password-1', role: 'read-only' } });
    assert.equal(made.status, 200, made.text);
    const ro = await svc.login('ro@plant.test', 'ro-password-1');
    assert.equal((await attach(ro, 'equipment', ids.pump, 'x', 'x')).status, 403);
    assert.equal((await svc.request('DELETE', `/svcapi/attachments/${up.body.id}`, { token: ro })).status, 403);
    assert.equal((await svc.get(`/svcapi/attachments/${up.body.id}`, ro)).status, 404, 'a read-only account without a grant on the row sees nothing');
  });
});
