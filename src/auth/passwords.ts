// Password hashing with scrypt (memory-hard, in Node's crypto, run on the
// libuv pool so it never blocks the event loop). The stored form carries its
// own parameters so the cost can be raised later without breaking old hashes:
//   scrypt$<N>$<r>$<p>$<salt base64>$<hash base64>

import crypto from 'node:crypto';
import { promisify } from 'node:util';

const scrypt = promisify(crypto.scrypt) as (
  password: string,
  salt: Buffer,
  keylen: number,
  options: crypto.ScryptOptions,
) => Promise<Buffer>;

const KEY_LENGTH = 32;
const BLOCK_SIZE = 8;
const PARALLELISM = 1;

function maxmemFor(cost: number): number {
  // scrypt needs about 128 * N * r bytes; leave headroom over Node's 32 MiB default.
  return 256 * cost * BLOCK_SIZE + 1024 * 1024;
}

export async function hashPassword(password: string, cost: number): Promise<string> {
  const salt = crypto.randomBytes(16);
  const hash = await scrypt(password, salt, KEY_LENGTH, { N: cost, r: BLOCK_SIZE, p: PARALLELISM, maxmem: maxmemFor(cost) });
  return ['scrypt', cost, BLOCK_SIZE, PARALLELISM, salt.toString('base64'), hash.toString('base64')].join('$');
}

/** Constant-time comparison; a malformed stored hash never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [, n, r, p, saltB64, hashB64] = parts;
  const N = Number(n), R = Number(r), P = Number(p);
  if (!Number.isInteger(N) || !Number.isInteger(R) || !Number.isInteger(P)) return false;
  const expected = Buffer.from(hashB64, 'base64');
  const actual = await scrypt(password, Buffer.from(saltB64, 'base64'), expected.length, {
    N, r: R, p: P, maxmem: 256 * N * R + 1024 * 1024,
  });
  return actual.length === expected.length && crypto.timingSafeEqual(actual, expected);
}

/** A hash to verify against when the user does not exist, so timing does not reveal it. */
let decoyHash: Promise<string> | null = null;
export function decoy(cost: number): Promise<string> {
  decoyHash ??= hashPassword(crypto.randomBytes(16).toString('hex'), cost);
  return decoyHash;
}
