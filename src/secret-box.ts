// Secrets at rest (saved connections' password and token, collectors' passwords and keys): AES-256-GCM with a key made on first
// start under <dataDir>/secrets/ (0600, like the token signing secret). A sealed value is the
// string `enc:v1:<iv>:<tag>:<ciphertext>` (base64), so a stored row never holds the plain text.

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { PRIVATE_FILE_MODE } from '../shared/file-modes.js';

const KEY_FILE = 'connections.key';
const PREFIX = 'enc:v1:';

export class SecretBox {
  private constructor(private readonly key: Buffer) {}

  /** The box of a data dir, its key created on first use. */
  static open(dataDir: string): SecretBox {
    const file = path.join(dataDir, 'secrets', KEY_FILE);
    try {
      const hex = fs.readFileSync(file, 'utf8').trim();
      if (hex.length === 64) return new SecretBox(Buffer.from(hex, 'hex'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    const key = crypto.randomBytes(32);
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, key.toString('hex'), { mode: PRIVATE_FILE_MODE });
    fs.renameSync(tmp, file);
    return new SecretBox(key);
  }

  static isSealed(value: unknown): value is string {
    return typeof value === 'string' && value.startsWith(PREFIX);
  }

  seal(plain: string): string {
    const iv = crypto.randomBytes(12);
    const cipher = crypto.createCipheriv('aes-256-gcm', this.key, iv);
    const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return `${PREFIX}${iv.toString('base64')}:${cipher.getAuthTag().toString('base64')}:${data.toString('base64')}`;
  }

  /** The plain text of a sealed value; throws when it was not sealed with this key or was altered. */
  unseal(sealed: string): string {
    const [iv, tag, data] = sealed.slice(PREFIX.length).split(':');
    if (iv === undefined || tag === undefined || data === undefined) throw new Error('not a sealed secret');
    const decipher = crypto.createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64'));
    decipher.setAuthTag(Buffer.from(tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64')), decipher.final()]).toString('utf8');
  }
}
