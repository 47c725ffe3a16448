// Blobs (bytes under a key) and attachments (bytes attached to an entity row), WIRE.md part 2
// "Blobs and attachments". Both keep their bytes in the content store (content-store.ts, one
// file per distinct sha256) and their rows in SQLite (meta/tables/blobs.ts).
//
// A content is kept while a key or an attachment refers to it; whatever drops the last reference
// (a delete, a replace, an entity row deleted with its attachments) removes the row and the file
// in the same synchronous step as the change, so an upload of the same bytes cannot slip in
// between and lose its file. An upload is placed (renamed to its content name) and its rows
// written in one synchronous step too. What a crash leaves between the two (a placed file with no
// row, a content row nothing refers to) is swept at start.

import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { diskFullError, ServiceError, notFound } from '../../shared/errors.js';
import type { RequestBody, ResponseStream } from '../http/route.js';
import type { Logger } from '../log.js';
import type { AccessGrant } from '../meta/access-grant.js';
import type { AttachmentRow, BlobTables } from '../meta/tables/blobs.js';
import type { EntityHooks, EntityStore } from '../meta/entities.js';
import type { EntityDef } from '../meta/registry.js';
import { parseId } from '../meta/wire.js';
import type { Health } from '../host/plugin.js';
import type { DiskFloor } from '../storage/api.js';
import { ContentStore, type Received } from './content-store.js';

export interface BlobRecord {
  key: string;
  size_bytes: number;
  content_type: string;
  sha256: string;
  created_ms: number;
}

export interface AttachmentRecord {
  id: string;
  entity: string;
  entityId: string;
  name: string;
  size_bytes: number;
  content_type: string;
  sha256: string;
  created_ms: number;
}

const KEY_SEGMENT = /^[A-Za-z0-9._-]+$/;
export const MAX_KEY_BYTES = 1024;
const MAX_NAME_LENGTH = 255;
const DEFAULT_TYPE = 'application/octet-stream';
/** Bytes read from a content file per write to the client. */
const READ_CHUNK_BYTES = 256 * 1024;

/** 400 unless `key` is `/`-separated segments of [A-Za-z0-9._-], none `.` or `..`, at most 1024 bytes. */
export function checkKey(key: string): void {
  if (key.length === 0) throw new ServiceError('BAD_REQUEST', 'the blob key is empty');
  if (Buffer.byteLength(key) > MAX_KEY_BYTES) throw new ServiceError('BAD_REQUEST', `the blob key is longer than ${MAX_KEY_BYTES} bytes`);
  for (const segment of key.split('/')) {
    if (!KEY_SEGMENT.test(segment) || segment === '.' || segment === '..') {
      throw new ServiceError('BAD_REQUEST', 'a blob key is /-separated segments of letters, digits, ".", "_" and "-" (no empty, "." or ".." segment, no percent-encoding)');
    }
  }
}

/** The content type to store: the request's, or application/octet-stream; 400 for one no header could carry. */
export function contentTypeOf(header: string | undefined): string {
  if (header === undefined || header.trim() === '') return DEFAULT_TYPE;
  if (header.length > 255 || /[\u0000-\u001f\u007f]/.test(header)) throw new ServiceError('BAD_REQUEST', 'content-type must be at most 255 printable characters');
  return header.trim();
}

export interface BlobServiceOptions {
  tables: BlobTables;
  dataDir: string;
  entities: EntityStore;
  log: Logger;
  now: () => number;
  /** The data volume's free-disk floor (storage.minFreeBytes): every chunk of an upload is reserved against it. */
  disk: DiskFloor;
  /** Bytes of keys and attachments one account may keep (blob.quotaBytesPerUser); 0 for no limit. Admins have none. */
  quotaBytesPerUser: number;
}

export class BlobService {
  readonly files: ContentStore;
  private running = false;
  /** Contents whose last attachments an entity delete is taking away, collected once it commits. */
  private orphanedByDelete: string[] = [];
  private readonly rows: BlobTables;
  /** Backups under way that hold removals (BlobContents.hold), and the contents whose removal waits for them. */
  private holds = 0;
  private readonly removalsHeld = new Set<string>();
  /** Bytes of uploads under way, by account, so concurrent uploads cannot each fit the quota alone. */
  private readonly receiving = new Map<string, number>();

  constructor(private readonly o: BlobServiceOptions) {
    this.rows = o.tables;
    this.files = new ContentStore(o.dataDir);
  }

  start(): void {
    this.files.open();
    this.sweep();
    this.running = true;
  }

  stop(): void {
    this.running = false;
  }

  health(): Health {
    return this.running ? { status: 'ok' } : { status: 'failed', reason: 'stopped' };
  }

  // ---- blobs ----------------------------------------------------------------

  get(key: string): BlobRecord | undefined {
    return this.rows.blob(key);
  }

  /** Keys starting with `prefix`, in key order. */
  list(prefix: string, limit: number): BlobRecord[] {
    return this.rows.blobsWithPrefix(prefix, limit);
  }

  /**
   * Stores `body` under `key`; `created` is false when it replaced an earlier blob. 403 when the
   * key is someone else's; 507 past the disk floor or the caller's quota (`declaredBytes`, the
   * request's Content-Length when it has one, is refused before any byte is read).
   */
  async put(grant: AccessGrant, key: string, contentType: string, body: RequestBody, declaredBytes?: number): Promise<{ created: boolean; record: BlobRecord }> {
    this.requireKeyOwner(grant, key);
    const received = await this.receive(grant, key, body, declaredBytes);
    const now = this.o.now();
    return this.commit(received, () => {
      // The key may have been made by someone else, or the quota used up, while the bytes arrived.
      this.requireKeyOwner(grant, key);
      this.requireQuota(grant, key, received.size, 0);
      const old = this.rows.contentOfKey(key);
      this.rows.putBlob(key, received.sha256, contentType, now, grant.subject);
      return { result: { created: old === undefined, record: this.get(key)! }, released: old === undefined ? [] : [old] };
    });
  }

  /** False when there was no such key; 403 when it is someone else's. */
  delete(grant: AccessGrant, key: string): boolean {
    const old = this.rows.contentOfKey(key);
    if (old === undefined) return false;
    this.requireKeyOwner(grant, key);
    this.rows.transaction(() => {
      this.rows.deleteBlob(key);
      this.rows.collect(old);
    });
    this.removeUnreferencedFile(old);
    return true;
  }

  // ---- attachments ----------------------------------------------------------

  /** 404 unless the caller can change entity row `entityId` (403 when it can only read it). */
  requireWritable(def: EntityDef, grant: AccessGrant, entityId: string): void {
    const access = this.o.entities.accessTo(def, grant, entityId);
    if (access === 'absent' || access === 'none') throw notFound(`${def.urlNames[0]} ${entityId} not found`);
    if (access === 'read') throw new ServiceError('FORBIDDEN', `${def.urlNames[0]} ${entityId} is outside your access grant for changes`);
  }

  /** 404 unless the caller can read entity row `entityId`. */
  requireReadable(def: EntityDef, grant: AccessGrant, entityId: string): void {
    const access = this.o.entities.accessTo(def, grant, entityId);
    if (access === 'absent' || access === 'none') throw notFound(`${def.urlNames[0]} ${entityId} not found`);
  }

  async attach(def: EntityDef, grant: AccessGrant, rawEntityId: string, name: string, contentType: string, body: RequestBody): Promise<AttachmentRecord> {
    if (name.length === 0 || name.length > MAX_NAME_LENGTH || /[\u0000-\u001f\u007f]/.test(name)) {
      throw new ServiceError('BAD_REQUEST', `name must be 1 to ${MAX_NAME_LENGTH} printable characters`);
    }
    const entityId = String(parseId(def, rawEntityId, 'entityId'));
    this.requireWritable(def, grant, entityId);
    const received = await this.receive(grant, null, body);
    const id = randomUUID();
    const now = this.o.now();
    return this.commit(received, () => {
      // The row may have gone (or left the grant) while the bytes arrived.
      this.requireWritable(def, grant, entityId);
      this.requireQuota(grant, null, received.size, 0);
      this.rows.addAttachment(id, def.table, entityId, name, received.sha256, contentType, now, grant.subject);
      return { result: this.attachment(id)!, released: [] };
    });
  }

  listAttachments(def: EntityDef, grant: AccessGrant, rawEntityId: string): AttachmentRecord[] {
    const entityId = String(parseId(def, rawEntityId, 'entityId'));
    this.requireReadable(def, grant, entityId);
    return this.rows.attachmentsOfRow(def.table, entityId).map((row) => this.toRecord(row));
  }

  /** Attachment `id` if it exists and the caller can read its entity row (else 404, as if absent). */
  readableAttachment(grant: AccessGrant, id: string): AttachmentRecord {
    const record = this.attachment(id);
    if (!record) throw notFound(`attachment ${id} not found`);
    const def = this.o.entities.registry.table(this.rows.tableOf(id));
    const access = this.o.entities.accessTo(def, grant, record.entityId);
    if (access === 'absent' || access === 'none') throw notFound(`attachment ${id} not found`);
    return record;
  }

  deleteAttachment(grant: AccessGrant, id: string): void {
    const record = this.readableAttachment(grant, id);
    this.requireWritable(this.o.entities.registry.table(this.rows.tableOf(id)), grant, record.entityId);
    this.rows.transaction(() => {
      this.rows.deleteAttachment(id);
      this.rows.collect(record.sha256);
    });
    this.removeUnreferencedFile(record.sha256);
  }

  /**
   * Attachments go with their entity row, also when it goes by cascade: their rows in the
   * delete's own transaction, content files nothing refers to any more once it commits.
   */
  entityHooks(): EntityHooks {
    return {
      beforeDelete: (def, entity) => {
        const entityId = String(entity.id);
        const shas = this.rows.deleteAttachmentsOfRow(def.table, entityId);
        if (shas.length === 0) return;
        for (const sha of shas) this.rows.collect(sha);
        this.orphanedByDelete.push(...shas);
      },
      afterCommit: () => {
        if (this.orphanedByDelete.length === 0) return;
        const shas = this.orphanedByDelete;
        this.orphanedByDelete = [];
        for (const sha of shas) this.removeUnreferencedFile(sha);
      },
      afterRollback: () => {
        this.orphanedByDelete = [];
      },
    };
  }

  // ---- content ----------------------------------------------------------------

  /**
   * Writes bytes [start, end) of a content to `out`, a read at a time, waiting while the client
   * is behind (out.write's promise), so a slow client holds one read buffer and the stream's
   * high-water mark, never the file.
   */
  async streamContent(sha256: string, start: number, end: number, out: ResponseStream): Promise<void> {
    let file: fs.promises.FileHandle;
    try {
      file = await fs.promises.open(this.files.pathOf(sha256), 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        this.o.log.error({ sha256 }, 'a blob content file is missing from the data dir');
        throw new ServiceError('INTERNAL', 'the content file is missing from the data dir');
      }
      throw err;
    }
    try {
      // One buffer for the whole download: out.write copies only what the socket does not take at once.
      const buffer = Buffer.allocUnsafe(Math.min(READ_CHUNK_BYTES, Math.max(end - start, 1)));
      let position = start;
      while (position < end && !out.aborted) {
        const { bytesRead } = await file.read(buffer, 0, Math.min(buffer.length, end - position), position);
        if (bytesRead === 0) throw new Error(`content ${sha256} is shorter than its recorded size`);
        position += bytesRead;
        const wait = out.write(buffer.subarray(0, bytesRead));
        if (wait) await wait;
      }
    } finally {
      await file.close();
    }
  }

  // ---- internals --------------------------------------------------------------

  /** 403 unless the key is new, the caller's own, or the caller is an admin. */
  private requireKeyOwner(grant: AccessGrant, key: string): void {
    if (grant.isAdmin) return;
    const owner = this.rows.ownerOf(key);
    if (owner === undefined || owner === grant.subject) return;
    throw new ServiceError('FORBIDDEN', `blob ${key} belongs to another account; only its uploader or an admin may replace or delete it`);
  }

  /**
   * 507 when `incoming` more bytes would take the caller past blob.quotaBytesPerUser, counting
   * `used` (what it keeps, from bytesOwnedBy when not given) and its other uploads under way.
   */
  private requireQuota(grant: AccessGrant, replacing: string | null, incoming: number, pending: number, used?: number): void {
    const quota = this.o.quotaBytesPerUser;
    if (quota <= 0 || grant.isAdmin) return;
    // A replaced key's bytes go with the replace, so they do not count.
    const kept = used ?? this.rows.bytesOwnedBy(grant.subject, replacing ?? '');
    if (kept + pending + incoming > quota) {
      throw new ServiceError('INSUFFICIENT_STORAGE', `the upload would take your blobs and attachments past blob.quotaBytesPerUser (${quota} bytes; ${kept} kept); delete some first`);
    }
  }

  /**
   * Receives an upload into a temporary file, reserving each chunk against the disk floor and
   * the caller's quota before it is written: a refusal removes what was written and throws 507,
   * as does a full volume (ENOSPC). The commit checks the quota again, exactly.
   */
  private async receive(grant: AccessGrant, replacing: string | null, body: RequestBody, declaredBytes?: number): Promise<Received> {
    const quotaApplies = this.o.quotaBytesPerUser > 0 && !grant.isAdmin;
    const used = quotaApplies ? this.rows.bytesOwnedBy(grant.subject, replacing ?? '') : 0;
    const others = () => this.receiving.get(grant.subject) ?? 0;
    if (declaredBytes !== undefined) {
      this.requireQuota(grant, replacing, declaredBytes, others(), used);
      this.o.disk.reserve(0);
    }
    let mine = 0;
    const admit = (bytes: number) => {
      if (quotaApplies) this.requireQuota(grant, replacing, mine + bytes, others() - mine, used);
      this.o.disk.reserve(bytes);
      mine += bytes;
      this.receiving.set(grant.subject, others() + bytes);
    };
    try {
      return await this.files.receive(body, admit);
    } catch (err) {
      throw diskFullError(err) ?? err;
    } finally {
      // Written and fsynced, or removed: statfs has them now.
      this.o.disk.release(mine);
      const left = (this.receiving.get(grant.subject) ?? 0) - mine;
      if (left > 0) this.receiving.set(grant.subject, left);
      else this.receiving.delete(grant.subject);
    }
  }

  private attachment(id: string): AttachmentRecord | undefined {
    const row = this.rows.attachment(id);
    return row ? this.toRecord(row) : undefined;
  }

  private toRecord(row: AttachmentRow): AttachmentRecord {
    const def = this.o.entities.registry.find(row.entity);
    return {
      id: row.id,
      entity: def?.urlNames[0] ?? row.entity,
      entityId: row.entity_id,
      name: row.name,
      size_bytes: row.size_bytes,
      content_type: row.content_type,
      sha256: row.sha256,
      created_ms: row.created_ms,
    };
  }

  /**
   * Places a received upload and runs `write` (its rows) in one transaction, all synchronously.
   * `write` names the contents it stopped referring to (a replaced key's); those left with no
   * reference go. When the rows cannot be written, the upload's own content goes again unless
   * something else refers to it.
   */
  private commit<T>(received: Received, write: () => { result: T; released: string[] }): T {
    if (!this.running) {
      this.files.discard(received);
      throw new ServiceError('UNAVAILABLE', 'the blobs subsystem is stopping');
    }
    try {
      this.files.place(received);
    } catch (err) {
      this.files.discard(received);
      throw diskFullError(err) ?? err;
    }
    let outcome: { result: T; released: string[] };
    try {
      outcome = this.rows.transaction(() => {
        this.rows.addContent(received.sha256, received.size, this.o.now());
        const done = write();
        for (const sha of done.released) if (sha !== received.sha256) this.rows.collect(sha);
        return done;
      });
    } catch (err) {
      try {
        this.rows.transaction(() => this.rows.collect(received.sha256));
        this.removeUnreferencedFile(received.sha256);
      } catch (cleanup) {
        // A full volume can refuse this too: the file is swept at the next start.
        this.o.log.warn({ sha256: received.sha256, err: String(cleanup) }, 'could not remove an upload whose rows were not written');
      }
      throw diskFullError(err) ?? err;
    }
    for (const sha of outcome.released) this.removeUnreferencedFile(sha);
    return outcome.result;
  }

  /** Removals of content files wait until the function returned runs (a backup is taking them). */
  hold(): () => void {
    this.holds++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.holds > 0) return;
      const due = [...this.removalsHeld];
      this.removalsHeld.clear();
      for (const sha of due) this.removeUnreferencedFile(sha);
    };
  }

  /** After the commit: removes the file of a content whose row is gone. */
  private removeUnreferencedFile(sha256: string): void {
    if (this.rows.hasContent(sha256)) return;
    if (this.holds > 0) {
      this.removalsHeld.add(sha256);
      return;
    }
    try {
      this.files.remove(sha256);
    } catch (err) {
      this.o.log.warn({ sha256, err: String(err) }, 'could not remove an unreferenced blob content file; the next start removes it');
    }
  }

  /** At start: content rows nothing refers to, and content files with no row, go. */
  private sweep(): void {
    const orphans = this.rows.unreferencedContents();
    if (orphans.length > 0) this.rows.transaction(() => orphans.forEach((sha) => this.rows.collect(sha)));
    let removed = 0;
    for (const sha of [...this.files.stored()]) {
      if (this.rows.hasContent(sha)) continue;
      this.files.remove(sha);
      removed++;
    }
    if (removed > 0) this.o.log.warn({ removed }, 'removed blob content files no key or attachment refers to');
  }
}
