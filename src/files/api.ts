// What the blobs subsystem offers the others: its content files as a backup takes them and a
// restore brings them back (the time-series backup archive carries them, backup/timeseries.ts).

import { capability } from '../host/plugin.js';

/** A content file, by its path relative to the data dir (`blobs/sha256/<2 hex>/<sha256>`). */
export interface ContentFile {
  path: string;
  sha256: string;
  size: number;
}

export interface BlobContents {
  /**
   * Keeps every content file on disk until the returned function runs: removals wait (and are
   * made then, if still due), so a backup taken meanwhile finds every content that any state of
   * the metadata store since the hold refers to.
   */
  hold(): () => void;
  /** Hard-links every content file on disk into `dir` under its own relative path (a copy across file systems). */
  linkInto(dir: string): Promise<ContentFile[]>;
  /**
   * Moves into the live store the content files under `dir` (same layout) that it lacks; the
   * number moved. A content file is whole and named by its bytes, so adding one is harmless:
   * one nothing refers to goes at the next start.
   */
  adopt(dir: string): number;
}

export const BLOB_CONTENTS = capability<BlobContents>('files.blob-contents');
