// Secrets at rest (saved connections' password and token, collectors' passwords and keys): AES-256-GCM with a key made on first
// start under <dataDir>/secrets/ (0600, like the token signing secret). A sealed value is the
// string `enc:v1:<iv>:<tag>:<ciphertext>` (base64), so a stored row never holds the plain text.
//
// One box per key file in this process, shared by whoever opens it (the connector, the
// collectors): a restore that brings the key of another host (backup/secrets.ts) calls
// SecretBox.reload, and every holder seals and opens with that key from the next call on.

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { PRIVATE_FILE_MODE } from '../shared/file-modes.js';

/** The key's file name under <dataDir>/secrets/ (a backup with secrets carries it). */
export const SECRET_BOX_KEY_FILE = 'connections.key';
const PREFIX = 'enc:v1:';

const boxes = new Map<string, SecretBox>();

export class SecretBox {
  private constructor(private key: Buffer) {}

  /** The box of a data dir, its key created on first use. */
  static open(dataDir: string): SecretBox {
    const file = keyFileOf(dataDir);
    let box = boxes.get(file);
    if (!box) {
      box = new SecretBox(readKey(file) ?? createKey(file));
      boxes.set(file, box);
    }
    return box;
  }

  /** Reads the key file again (a restore replaced it); no-op when no box of this data dir is open. */
  static reload(dataDir: string): void {
    const file = keyFileOf(dataDir);
    const box = boxes.get(file);
    if (!box) return;
    const key = readKey(file);
    if (!key) throw new Error(`${file} holds no key`);
    box.key = key;
  }

  /** Whether `text` is the content of a key file (64 hex digits). */
  static isKeyText(text: string): boolean {
    return /^[0-9a-fA-F]{64}$/.test(text.trim());
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

function keyFileOf(dataDir: string): string {
  return path.resolve(dataDir, 'secrets', SECRET_BOX_KEY_FILE);
}

/** The key in `file`, or null when there is none yet. */
function readKey(file: string): Buffer | null {
  try {
    const hex = fs.readFileSync(file, 'utf8').trim();
    return SecretBox.isKeyText(hex) ? Buffer.from(hex, 'hex') : null;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    return null;
  }
}

function createKey(file: string): Buffer {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const key = crypto.randomBytes(32);
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, key.toString('hex'), { mode: PRIVATE_FILE_MODE });
  fs.renameSync(tmp, file);
  return key;
}
