import assert from 'node:assert/strict';
import { test } from 'node:test';
import { redactQuery } from '../src/log.js';

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
