// The rows of blobs and attachments (migration 10; files/blobs.ts keeps the bytes):
//
//   blob_contents (sha256, size_bytes, created_ms)    one row per content file
//   blob_keys     (key, sha256, content_type, created_ms)
//   attachments   (id, entity, entity_id, name, sha256, content_type, created_ms)
//   owner columns of both (migration 14): the uploader's token subject, null before it

import type { Db } from '../database.js';

export interface BlobRow {
  key: string;
  size_bytes: number;
  content_type: string;
  sha256: string;
  created_ms: number;
}

export interface AttachmentRow {
  id: string;
  entity: string;
  entity_id: string;
  name: string;
  sha256: string;
  content_type: string;
  created_ms: number;
  size_bytes: number;
}

export class BlobTables {
  private readonly blobByKey;
  private readonly blobsFrom;
  private readonly shaOfKey;
  private readonly putKey;
  private readonly deleteKey;
  private readonly insertAttachment;
  private readonly attachmentsOf;
  private readonly attachmentById;
  private readonly tableOfAttachment;
  private readonly deleteAttachmentRow;
  private readonly shasOfEntity;
  private readonly deleteOfEntity;
  private readonly insertContent;
  private readonly collectContent;
  private readonly contentKnown;
  private readonly unreferenced;
  private readonly ownerOfKey;
  private readonly keyBytesOf;
  private readonly attachmentBytesOf;

  constructor(private readonly db: Db) {
    const blob = 'SELECT k.key, c.size_bytes, k.content_type, k.sha256, k.created_ms FROM blob_keys k JOIN blob_contents c ON c.sha256 = k.sha256';
    this.blobByKey = db.prepare<[string], BlobRow>(`${blob} WHERE k.key = ?`);
    this.blobsFrom = db.prepare<[string, string, number], BlobRow>(`${blob} WHERE k.key >= ? AND k.key < ? ORDER BY k.key LIMIT ?`);
    this.shaOfKey = db.prepare<[string], string>('SELECT sha256 FROM blob_keys WHERE key = ?').pluck();
    // A replaced key keeps its owner (an admin replacing it does not take it over).
    this.putKey = db.prepare<[string, string, string, number, string]>(
      'INSERT INTO blob_keys (key, sha256, content_type, created_ms, owner) VALUES (?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET sha256 = excluded.sha256, content_type = excluded.content_type, created_ms = excluded.created_ms',
    );
    this.ownerOfKey = db.prepare<[string], { owner: string | null }>('SELECT owner FROM blob_keys WHERE key = ?');
    this.keyBytesOf = db.prepare<[string, string], number>('SELECT COALESCE(SUM(c.size_bytes), 0) FROM blob_keys k JOIN blob_contents c ON c.sha256 = k.sha256 WHERE k.owner = ? AND k.key != ?').pluck();
    this.attachmentBytesOf = db.prepare<[string], number>('SELECT COALESCE(SUM(c.size_bytes), 0) FROM attachments a JOIN blob_contents c ON c.sha256 = a.sha256 WHERE a.owner = ?').pluck();
    this.deleteKey = db.prepare<[string]>('DELETE FROM blob_keys WHERE key = ?');
    const attachment = 'SELECT a.id, a.entity, a.entity_id, a.name, a.sha256, a.content_type, a.created_ms, c.size_bytes FROM attachments a JOIN blob_contents c ON c.sha256 = a.sha256';
    this.insertAttachment = db.prepare<[string, string, string, string, string, string, number, string]>(
      'INSERT INTO attachments (id, entity, entity_id, name, sha256, content_type, created_ms, owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    );
    this.attachmentsOf = db.prepare<[string, string], AttachmentRow>(`${attachment} WHERE a.entity = ? AND a.entity_id = ? ORDER BY a.created_ms, a.id`);
    this.attachmentById = db.prepare<[string], AttachmentRow>(`${attachment} WHERE a.id = ?`);
    this.tableOfAttachment = db.prepare<[string], string>('SELECT entity FROM attachments WHERE id = ?').pluck();
    this.deleteAttachmentRow = db.prepare<[string]>('DELETE FROM attachments WHERE id = ?');
    this.shasOfEntity = db.prepare<[string, string], string>('SELECT DISTINCT sha256 FROM attachments WHERE entity = ? AND entity_id = ?').pluck();
    this.deleteOfEntity = db.prepare<[string, string]>('DELETE FROM attachments WHERE entity = ? AND entity_id = ?');
    this.insertContent = db.prepare<[string, number, number]>('INSERT INTO blob_contents (sha256, size_bytes, created_ms) VALUES (?, ?, ?) ON CONFLICT (sha256) DO NOTHING');
    this.collectContent = db.prepare<[string, string, string]>(
      'DELETE FROM blob_contents WHERE sha256 = ? AND NOT EXISTS (SELECT 1 FROM blob_keys WHERE sha256 = ?) AND NOT EXISTS (SELECT 1 FROM attachments WHERE sha256 = ?)',
    );
    this.contentKnown = db.prepare<[string]>('SELECT 1 FROM blob_contents WHERE sha256 = ?').pluck();
    this.unreferenced = db
      .prepare<[], string>('SELECT sha256 FROM blob_contents c WHERE NOT EXISTS (SELECT 1 FROM blob_keys k WHERE k.sha256 = c.sha256) AND NOT EXISTS (SELECT 1 FROM attachments a WHERE a.sha256 = c.sha256)')
      .pluck();
  }

  /** Runs `work` in one transaction. */
  transaction<T>(work: () => T): T {
    return this.db.transaction(work)();
  }

  blob(key: string): BlobRow | undefined {
    return this.blobByKey.get(key);
  }

  /** Keys starting with `prefix`, in key order. */
  blobsWithPrefix(prefix: string, limit: number): BlobRow[] {
    // Keys are ASCII below 0x7f, so every key with the prefix sorts in [prefix, prefix + 0x7f).
    return this.blobsFrom.all(prefix, `${prefix}\u007f`, limit);
  }

  /** The content a key refers to, or undefined. */
  contentOfKey(key: string): string | undefined {
    return this.shaOfKey.get(key);
  }

  /** `owner` is kept only for a new key. */
  putBlob(key: string, sha256: string, contentType: string, now: number, owner: string): void {
    this.putKey.run(key, sha256, contentType, now, owner);
  }

  /** The owner of a key: undefined when there is no such key, null when it predates owners. */
  ownerOf(key: string): string | null | undefined {
    return this.ownerOfKey.get(key)?.owner;
  }

  /** Bytes of the keys and attachments `owner` uploaded, leaving out key `except` (the one being replaced). */
  bytesOwnedBy(owner: string, except: string): number {
    return this.keyBytesOf.get(owner, except)! + this.attachmentBytesOf.get(owner)!;
  }

  deleteBlob(key: string): void {
    this.deleteKey.run(key);
  }

  addAttachment(id: string, table: string, entityId: string, name: string, sha256: string, contentType: string, now: number, owner: string): void {
    this.insertAttachment.run(id, table, entityId, name, sha256, contentType, now, owner);
  }

  attachmentsOfRow(table: string, entityId: string): AttachmentRow[] {
    return this.attachmentsOf.all(table, entityId);
  }

  attachment(id: string): AttachmentRow | undefined {
    return this.attachmentById.get(id);
  }

  /** The entity table of an attachment. */
  tableOf(id: string): string {
    return this.tableOfAttachment.get(id)!;
  }

  deleteAttachment(id: string): void {
    this.deleteAttachmentRow.run(id);
  }

  /** Deletes the attachments of one entity row; the contents they referred to. */
  deleteAttachmentsOfRow(table: string, entityId: string): string[] {
    const shas = this.shasOfEntity.all(table, entityId);
    if (shas.length > 0) this.deleteOfEntity.run(table, entityId);
    return shas;
  }

  /** Records a content file (nothing when it is known). */
  addContent(sha256: string, size: number, now: number): void {
    this.insertContent.run(sha256, size, now);
  }

  /** Inside a transaction: drops the content row of `sha256` when nothing refers to it. */
  collect(sha256: string): void {
    this.collectContent.run(sha256, sha256, sha256);
  }

  hasContent(sha256: string): boolean {
    return this.contentKnown.get(sha256) !== undefined;
  }

  /** Content rows no key or attachment refers to. */
  unreferencedContents(): string[] {
    return this.unreferenced.all();
  }
}
