// The resume checkpoint of an import: which input (path, size, mtime, sha256 of its first MiB),
// into which collection, read how, and the text offset up to which every chunk was
// acknowledged by the service. It lives beside the input as `<input>.import-state` (or in a
// state dir given), is rewritten atomically (temp file + rename) each time that offset
// advances, and is removed when the import completes. A rerun whose input or collection differs
// starts over: re-sending is harmless (the store keeps the last write of a tag and time), a
// wrong offset is not.

import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

export interface InputIdentity {
  path: string;
  size: number;
  mtimeMs: number;
  /** sha256 of the first MiB, hex. */
  head: string;
}

export interface ImportState {
  version: 1;
  input: InputIdentity;
  collection: string;
  /** How the input is read (csv, lp, lp-export) and with which LP precision. */
  format: string;
  precision: string;
  /** Text offset (decompressed, for gzip) up to which every chunk was acknowledged. */
  ackedBytes: number;
  /** Lines before that offset, and the points they gave. */
  lines: number;
  points: number;
}

const HEAD_BYTES = 1 << 20;

export async function identify(file: string): Promise<InputIdentity> {
  const absolute = path.resolve(file);
  const handle = await fs.promises.open(absolute, 'r');
  try {
    const stat = await handle.stat();
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(HEAD_BYTES), 0, HEAD_BYTES, 0);
    return { path: absolute, size: stat.size, mtimeMs: stat.mtimeMs, head: createHash('sha256').update(buffer.subarray(0, bytesRead)).digest('hex') };
  } finally {
    await handle.close();
  }
}

/** `<input>.import-state` beside the input, or in `stateDir` under a name unique to the input's path. */
export function stateFileFor(input: string, stateDir?: string): string {
  const absolute = path.resolve(input);
  if (stateDir === undefined) return `${absolute}.import-state`;
  const tag = createHash('sha256').update(absolute).digest('hex').slice(0, 16);
  return path.join(path.resolve(stateDir), `${path.basename(absolute)}.${tag}.import-state`);
}

export type Loaded = { state: ImportState } | { state: null; why: string | null };

/** The saved state when it belongs to this input and collection; else why not (null: there is none). */
export function loadState(file: string, input: InputIdentity, collection: string): Loaded {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { state: null, why: null };
    throw new Error(`cannot read the import state ${file}: ${(err as Error).message}`);
  }
  let state: ImportState;
  try {
    state = JSON.parse(text) as ImportState;
  } catch {
    return { state: null, why: `the import state ${file} is not JSON` };
  }
  if (state.version !== 1 || typeof state.ackedBytes !== 'number' || !state.input) return { state: null, why: `the import state ${file} is not one this version writes` };
  const i = state.input;
  if (i.path !== input.path || i.size !== input.size || i.mtimeMs !== input.mtimeMs || i.head !== input.head) {
    return { state: null, why: `${input.path} changed since the interrupted import (size, modification time or first MiB)` };
  }
  if (state.collection !== collection) return { state: null, why: `the interrupted import of ${input.path} went to collection ${state.collection}, not ${collection}` };
  return { state };
}

export function saveState(file: string, state: ImportState): void {
  const temp = `${file}.${process.pid}.tmp`;
  try {
    fs.writeFileSync(temp, JSON.stringify(state));
    fs.renameSync(temp, file);
  } catch (err) {
    fs.rmSync(temp, { force: true });
    throw new Error(`cannot write the import state ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); give a writable state dir`, { cause: err });
  }
}

export function removeState(file: string): void {
  fs.rmSync(file, { force: true });
}
