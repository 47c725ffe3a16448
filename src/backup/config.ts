// The backup configuration (WIRE.md part 2 "Backup"): kept in <dataDir>/backup-config.json,
// not in the metadata store, so restoring that store does not move where backups go or stop
// the schedule. PUT merges; every field is checked and a bad one is a 400 naming it.

import fs from 'node:fs';
import path from 'node:path';
import { badRequest } from '../../shared/errors.js';
import { PRIVATE_FILE_MODE } from '../../shared/file-modes.js';

export interface BackupConfig {
  enabled: boolean;
  interval_hours: number;
  directory: string;
  keep_sqlite: number;
  keep_timeseries: number;
}

export const DEFAULT_BACKUP_CONFIG: BackupConfig = { enabled: true, interval_hours: 24, directory: 'backups', keep_sqlite: 7, keep_timeseries: 7 };

const FILE = 'backup-config.json';

export class BackupConfigStore {
  private current: BackupConfig;

  constructor(private readonly dataDir: string) {
    this.current = this.read();
  }

  get(): BackupConfig {
    return { ...this.current };
  }

  /** The configured directory as an absolute path. */
  directory(config: BackupConfig = this.current): string {
    return path.resolve(this.dataDir, config.directory);
  }

  /** Merges `change` into the configuration, checks it whole, makes the directory, persists it. */
  update(change: unknown): BackupConfig {
    if (typeof change !== 'object' || change === null || Array.isArray(change)) throw badRequest('the backup config must be an object');
    const next = { ...this.current, ...validate(change as Record<string, unknown>) };
    try {
      fs.mkdirSync(this.directory(next), { recursive: true, mode: 0o700 });
    } catch (err) {
      throw badRequest(`directory: cannot be created (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
    const file = path.join(this.dataDir, FILE);
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, `${JSON.stringify(next, null, 2)}\n`, { mode: PRIVATE_FILE_MODE });
    fs.renameSync(tmp, file);
    this.current = next;
    return this.get();
  }

  private read(): BackupConfig {
    let stored: unknown;
    try {
      stored = JSON.parse(fs.readFileSync(path.join(this.dataDir, FILE), 'utf8'));
    } catch {
      return { ...DEFAULT_BACKUP_CONFIG };
    }
    try {
      return { ...DEFAULT_BACKUP_CONFIG, ...validate(stored as Record<string, unknown>) };
    } catch {
      return { ...DEFAULT_BACKUP_CONFIG };
    }
  }
}

/** The fields of `change`, each checked; 400 naming the first bad or unknown one. */
function validate(change: Record<string, unknown>): Partial<BackupConfig> {
  const out: Partial<BackupConfig> = {};
  for (const [key, value] of Object.entries(change)) {
    switch (key) {
      case 'enabled':
        if (typeof value !== 'boolean') throw badRequest('enabled must be true or false');
        out.enabled = value;
        break;
      case 'interval_hours':
        if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > 8760) throw badRequest('interval_hours must be a number of hours above 0, at most 8760');
        out.interval_hours = value;
        break;
      case 'directory':
        if (typeof value !== 'string' || value.trim() === '' || value.includes('\0')) throw badRequest('directory must be a non-empty path (relative to the data dir, or absolute)');
        out.directory = value;
        break;
      case 'keep_sqlite':
      case 'keep_timeseries':
        if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 100_000) throw badRequest(`${key} must be a whole number from 1`);
        out[key] = value;
        break;
      default:
        throw badRequest(`unknown field ${JSON.stringify(key)} (the backup config has enabled, interval_hours, directory, keep_sqlite, keep_timeseries)`);
    }
  }
  return out;
}
