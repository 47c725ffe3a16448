// Leadership as the plugins see it: a single node leads from the start and runs the leading work
// once; a node of a cluster leads only when its cluster says so.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LeadershipState } from '../../src/host/leadership.js';

test('a single node leads, and runs every onLeading work once when the service has started (a failure fails the start)', async () => {
  const single = new LeadershipState(false);
  assert.equal(single.leads(), true);
  const ran: string[] = [];
  single.onLeading(() => void ran.push('admin'));
  single.onLeading(async () => {
    ran.push('connector');
    throw new Error('could not resume');
  });
  single.onLeading(() => void ran.push('after'));
  await assert.rejects(single.serviceStarted(), /could not resume/);
  assert.deepEqual(ran, ['admin', 'connector', 'after'], 'every work ran, the failure told afterwards');
});

test('a node of a cluster leads only by its cluster\'s verdict; the start itself runs no leading work', async () => {
  const node = new LeadershipState(true);
  assert.equal(node.leads(), false);
  const ran: string[] = [];
  node.onLeading(() => void ran.push('lead'));
  node.onFollowing(() => ran.push('follow'));
  await node.serviceStarted();
  assert.deepEqual(ran, []);
  let elected = true;
  node.decideBy(() => elected);
  assert.equal(node.leads(), true);
  await node.leading();
  elected = false;
  assert.equal(node.leads(), false);
  node.following();
  assert.deepEqual(ran, ['lead', 'follow']);
});
