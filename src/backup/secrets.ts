// Secrets that travel with a sqlite backup, sealed with a passphrase given at backup time and
// again at restore time (never stored, never logged): what a restore on another host needs so
// the restored rows are usable there.
//
// Which files of <dataDir>/secrets/ go in, and why:
// - connections.key: the key that seals saved connections' and collectors' passwords in the
//   metadata store (src/secret-box.ts). Without it those rows cannot be opened on another host.
// - opcua/application-cert.pem and application-key.pem: the collectors' OPC UA application
//   certificate, which each PLC's administrator trusted once; a new one would have to be
//   trusted again on every PLC.
// Left out:
// - jwt.secret: it signs tokens and keys the account stamps, nothing stored depends on it (API
//   keys are kept as plain sha256 hashes, passwords as scrypt hashes). Without it, tokens of the
//   old host simply end and people log in again; with it, two hosts (production and a test host
//   restored from it) would accept each other's tokens. A cluster signs with cluster.secretFile.
// - admin-password.txt: a first admin's generated password in clear; the restored accounts
//   bring their own password hashes.
// - tls/ (outside secrets/): the server certificate names this host; a new host makes its own.
//
// Sealing: scrypt (random salt, N = 2^17, r = 8: about 128 MiB and a fraction of a second, on
// libuv's thread pool) derives an AES-256-GCM key; the JSON {files: {name: base64}} is sealed
// with a random nonce, the format and KDF parameters bound as associated data. The row goes in
// the backup file itself (meta/backup-secrets.ts), so the backup stays one file.
//
// Restoring: opened and checked before anything live is touched (a wrong passphrase is a 400);
// the files are written beside their targets (0600, fsynced), renamed into place as the last step
// of the restore's transaction (a failed rename rolls the rows back too; the files replaced are
// kept until the commit, so a failed commit puts them back), and the key is reloaded in memory
// right after the commit. A crash exactly between the renames and the commit leaves the old rows
// with the new key; the previous key then stays beside it as `connections.key.before-restore-*`
// and the start log names it.

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Logger } from '../log.js';
import type { SealedSecretsRow } from '../meta/backup-secrets.js';
import { SecretBox, SECRET_BOX_KEY_FILE } from '../secret-box.js';
import { badRequest } from '../../shared/errors.js';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../../shared/file-modes.js';
import { fsyncDir } from '../../shared/fsync-dir.js';
import { failedVerification } from './timeseries.js';

export const MIN_PASSPHRASE_LENGTH = 12;
const MAX_PASSPHRASE_LENGTH = 1024;

const OPCUA_CERT = 'opcua/application-cert.pem';
const OPCUA_KEY = 'opcua/application-key.pem';
/** Paths under <dataDir>/secrets/ that a backup carries (see above). */
const CARRIED = [SECRET_BOX_KEY_FILE, OPCUA_CERT, OPCUA_KEY] as const;

const FORMAT = 1;
const KDF = { name: 'scrypt', N: 2 ** 17, r: 8, p: 1 } as const;
/** Bounds on what a backup's row may ask of scrypt (a crafted file must not take the machine). */
const KDF_MAX = { N: 2 ** 20, r: 16, p: 4 };

const scrypt = promisify(crypto.scrypt) as (password: string, salt: Buffer, keylen: number, options: crypto.ScryptOptions) => Promise<Buffer>;

/** The passphrase of a request, checked: undefined when none was given; 400 naming the field otherwise. */
export function checkPassphrase(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value.length < MIN_PASSPHRASE_LENGTH || value.length > MAX_PASSPHRASE_LENGTH) {
    throw badRequest(`secrets_passphrase must be a string of ${MIN_PASSPHRASE_LENGTH} to ${MAX_PASSPHRASE_LENGTH} characters`);
  }
  return value;
}

function secretsDir(dataDir: string): string {
  return path.join(dataDir, 'secrets');
}

function associatedData(format: number, kdf: string): Buffer {
  return Buffer.from(`historian backup secrets\nformat ${format}\nkdf ${kdf}`);
}

async function deriveKey(passphrase: string, salt: Buffer, kdf: { N: number; r: number; p: number }): Promise<Buffer> {
  return scrypt(passphrase.normalize('NFC'), salt, 32, { N: kdf.N, r: kdf.r, p: kdf.p, maxmem: 256 * kdf.N * kdf.r + (1 << 20) });
}

/** The carried files of this data dir sealed with `passphrase`: the row a sqlite backup gets. */
export async function sealSecrets(dataDir: string, passphrase: string): Promise<{ row: SealedSecretsRow; names: string[] }> {
  const files: Record<string, string> = {};
  for (const name of CARRIED) {
    try {
      files[name] = fs.readFileSync(path.join(secretsDir(dataDir), name)).toString('base64');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  if (files[SECRET_BOX_KEY_FILE] === undefined) throw new Error(`secrets/${SECRET_BOX_KEY_FILE} is missing: there is nothing to carry`);
  // The certificate is of use only with its key: both or neither.
  if ((files[OPCUA_CERT] === undefined) !== (files[OPCUA_KEY] === undefined)) {
    delete files[OPCUA_CERT];
    delete files[OPCUA_KEY];
  }
  const kdf = JSON.stringify(KDF);
  const salt = crypto.randomBytes(32);
  const nonce = crypto.randomBytes(12);
  const key = await deriveKey(passphrase, salt, KDF);
  const cipher = crypto.createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(associatedData(FORMAT, kdf));
  const ciphertext = Buffer.concat([cipher.update(JSON.stringify({ files }), 'utf8'), cipher.final()]);
  return { row: { format: FORMAT, kdf, salt, nonce, ciphertext, tag: cipher.getAuthTag() }, names: Object.keys(files) };
}

/**
 * The files a backup's row holds, opened with `passphrase` and checked: 400 for a wrong
 * passphrase (or a row that was altered: GCM cannot tell the two apart) and for content that is
 * not what a backup writes.
 */
export async function openSecrets(row: SealedSecretsRow, passphrase: string, backupName: string): Promise<Map<string, Buffer>> {
  if (row.format !== FORMAT) throw failedVerification(backupName, `its secrets are in format ${row.format}, this build reads ${FORMAT}`);
  let kdf: { name?: unknown; N?: unknown; r?: unknown; p?: unknown };
  try {
    kdf = JSON.parse(row.kdf) as typeof kdf;
  } catch {
    throw failedVerification(backupName, 'the key derivation of its secrets is not JSON');
  }
  const whole = (v: unknown, max: number) => typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= max;
  if (kdf.name !== 'scrypt' || !whole(kdf.N, KDF_MAX.N) || !whole(kdf.r, KDF_MAX.r) || !whole(kdf.p, KDF_MAX.p) || ((kdf.N as number) & ((kdf.N as number) - 1)) !== 0) {
    throw failedVerification(backupName, 'its secrets name a key derivation this build does not use');
  }
  const key = await deriveKey(passphrase, Buffer.from(row.salt), kdf as { N: number; r: number; p: number });
  let plain: Buffer;
  try {
    const decipher = crypto.createDecipheriv('aes-256-gcm', key, Buffer.from(row.nonce));
    decipher.setAAD(associatedData(row.format, row.kdf));
    decipher.setAuthTag(Buffer.from(row.tag));
    plain = Buffer.concat([decipher.update(Buffer.from(row.ciphertext)), decipher.final()]);
  } catch {
    throw badRequest(`secrets_passphrase does not open the secrets of backup ${backupName} (a wrong passphrase, or the file was altered); nothing was restored`);
  }
  let files: Record<string, unknown>;
  try {
    files = (JSON.parse(plain.toString('utf8')) as { files: Record<string, unknown> }).files;
  } catch {
    throw failedVerification(backupName, 'its secrets are not the JSON a backup writes');
  }
  const out = new Map<string, Buffer>();
  for (const [name, value] of Object.entries(files ?? {})) {
    if (!(CARRIED as readonly string[]).includes(name) || typeof value !== 'string') throw failedVerification(backupName, `its secrets hold ${JSON.stringify(name)}, not a file a backup carries`);
    out.set(name, Buffer.from(value, 'base64'));
  }
  const keyText = out.get(SECRET_BOX_KEY_FILE)?.toString('utf8');
  if (keyText === undefined || !SecretBox.isKeyText(keyText)) throw failedVerification(backupName, `its secrets hold no usable ${SECRET_BOX_KEY_FILE}`);
  if (out.has(OPCUA_CERT) !== out.has(OPCUA_KEY)) throw failedVerification(backupName, 'its secrets hold the OPC UA certificate without its key, or the other way round');
  return out;
}

/** Restored secrets written beside their targets, to be renamed into place inside the restore's transaction. */
export class StagedSecrets {
  /** Per file: where it is written first, where it goes, where the file it replaces is kept until the commit. */
  private readonly files: Array<{ staged: string; target: string; before: string }> = [];
  private installed: Array<{ target: string; before: string | null }> = [];

  constructor(private readonly dataDir: string, files: ReadonlyMap<string, Buffer>, id: string) {
    const tag = id.replace(/[^A-Za-z0-9-]/g, '');
    try {
      for (const [name, content] of files) {
        const target = path.join(secretsDir(dataDir), name);
        fs.mkdirSync(path.dirname(target), { recursive: true, mode: PRIVATE_DIR_MODE });
        const staged = `${target}.restore-${tag}`;
        this.files.push({ staged, target, before: `${target}.before-restore-${tag}` });
        const fd = fs.openSync(staged, 'w', PRIVATE_FILE_MODE);
        try {
          fs.writeSync(fd, content);
          fs.fsyncSync(fd);
        } finally {
          fs.closeSync(fd);
        }
      }
    } catch (err) {
      this.discard();
      throw err;
    }
  }

  /** Renames every file into place (the old one kept beside it until finish); undoes what it did when one fails. */
  install(): void {
    try {
      for (const f of this.files) {
        const hadOld = fs.existsSync(f.target);
        if (hadOld) fs.linkSync(f.target, f.before);
        fs.renameSync(f.staged, f.target);
        this.installed.push({ target: f.target, before: hadOld ? f.before : null });
      }
      this.syncDirs();
    } catch (err) {
      this.undo();
      throw err;
    }
  }

  /** Puts back what install replaced (the rows were not committed). */
  undo(): void {
    for (const f of this.installed.reverse()) {
      if (f.before) fs.renameSync(f.before, f.target);
      else fs.rmSync(f.target, { force: true });
    }
    this.installed = [];
    this.syncDirs();
  }

  /** After the commit: the old files go, and the key is read again by every holder of it. */
  finish(): void {
    for (const f of this.installed) if (f.before) fs.rmSync(f.before, { force: true });
    this.installed = [];
    this.syncDirs();
    SecretBox.reload(this.dataDir);
  }

  /** Removes whatever is left (staged files of a restore that did not get as far as install). */
  discard(): void {
    for (const f of this.files) fs.rmSync(f.staged, { force: true });
  }

  private syncDirs(): void {
    for (const dir of new Set(this.files.map((f) => path.dirname(f.target)))) fsyncDir(dir);
  }
}

/** At start: staged files of a restore that never finished go; a kept old file (a crash in the one window) is named in the log. */
export function cleanSecretLeftovers(dataDir: string, log: Pick<Logger, 'warn'>): void {
  for (const dir of [secretsDir(dataDir), path.join(secretsDir(dataDir), 'opcua')]) {
    let names: string[];
    try {
      names = fs.readdirSync(dir);
    } catch {
      continue;
    }
    for (const name of names) {
      if (/\.restore-[A-Za-z0-9-]+$/.test(name)) fs.rmSync(path.join(dir, name), { force: true });
      else if (/\.before-restore-[A-Za-z0-9-]+$/.test(name)) {
        log.warn({ file: path.join(dir, name) }, 'a restore with secrets was interrupted; if saved connection or collector passwords no longer open, this is the key the live rows were sealed with: put it back in place of the file it is named after');
      }
    }
  }
}
