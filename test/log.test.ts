import assert from 'node:assert/strict';
import { test } from 'node:test';
import { redactApiKeys, redactQuery } from '../src/log.js';

const SECRET = 'eyJhbGciOiJIUzI1NiJ9.c2VjcmV0.c2ln';

test('secret parameter values are replaced however the name is encoded', () => {
  const names = [
    'access_token', 'ACCESS_TOKEN', 'Access_Token', 'access%5Ftoken', 'access%5ftoken', '%61ccess_token', '%61ccess%5Ftoken',
    '%2561ccess_token', 'access_token+', '+access_token', 'access+token', 'token', 'refresh_token', 'password', 'new%5Fpassword',
    'PassWord', 'secret', 'authorization', 'acc%ess_token', 'access%5Ftoken%', '%E0%80access_token', 'access_token%3Dx', 'access%00_token',
  ];
  for (const name of names) {
    for (const query of [`${name}=${SECRET}`, `tags=a&${name}=${SECRET}&start=1`, `${name}=${encodeURIComponent(SECRET)}&x=%ZZ`]) {
      const redacted = redactQuery(query);
      assert.ok(!redacted.includes(SECRET) && !redacted.includes(encodeURIComponent(SECRET)), `${query} -> ${redacted}`);
      assert.match(redacted, /\[redacted\]/);
    }
  }
});

test('a secret hidden in the name itself is removed with the name', () => {
  assert.equal(redactQuery(`access_token%3D${SECRET}`), '[redacted]');
  assert.equal(redactQuery(`a=1&token${SECRET}`), 'a=1&[redacted]');
});

test('values that do not decode neither throw nor leak', () => {
  for (const value of ['%E0%A4%A', '%', '%ZZ', '%C0%AF', '%ED%A0%80', '%FF%FE']) {
    const redacted = redactQuery(`access_token=${SECRET}${value}`);
    assert.equal(redacted, 'access_token=[redacted]');
  }
});

test('other parameters are left as they are', () => {
  for (const query of ['tags=a&start=0&end=99', 'filter=%7B%22where%22%3A%7B%7D%7D', 'x=%ZZ', 'a&b&c', '']) {
    assert.equal(redactQuery(query), query);
  }
});

test('an API key is replaced wherever a line holds it, its underscore encoded or not, and a long fragment of one too', () => {
  const key = `hk_${'aB3'.repeat(13)}x`;
  const lines = [
    `{"path":"/ingest/v2/write?db=c&u=${key}","msg":"request"}`,
    `{"path":"/svcapi/api_keys/${key}","status":404}`,
    `{"msg":"refused","detail":"hk%5F${key.slice(3)}"}`,
    `{"path":"/x?k=HK_${key.slice(3)}&p2=${key}"}`,
    `{"msg":"a fragment: ${key.slice(0, 25)}"}`,
  ];
  for (const line of lines) {
    const redacted = redactApiKeys(line);
    assert.ok(!redacted.includes(key.slice(3, 23)), `${line} -> ${redacted}`);
    assert.match(redacted, /hk_\[redacted\]/);
  }
  for (const line of ['{"msg":"chk_temp and hk_ alone","prefix":"hk_AbCdEf1"}', '{"tag":"TI-101","path":"/svcapi/api_keys"}']) {
    assert.equal(redactApiKeys(line), line, 'a list prefix and ordinary words stay');
  }
});
