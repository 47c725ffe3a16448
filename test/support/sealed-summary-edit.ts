// Sealed files rewritten for tests: a summary forged with every checksum made to match (format 3
// raw pairs or format 4 coded columns), and a file resealed the way older builds wrote it.
import fs from 'node:fs';
import { ByteReader, ByteWriter, decodeValues, encodeValues } from '../../native-free-codecs/columns.js';
import { crc32c } from '../../workers/crc32.js';
import { SealedFileWriter, SealedIndex } from '../../workers/sealed-file.js';
import { parseDay } from '../../workers/utc-day.js';

/** Calls `edit(tagId, mins, maxs)` for each tag (its present slots' values, editable in place). */
export function editSummary(file: string, edit: (tagId: number, mins: Float64Array, maxs: Float64Array) => void): void {
  const bytes = fs.readFileSync(file);
  const version = bytes.readUInt16LE(4);
  const n = bytes.length;
  const footerBytes = bytes.readUInt32LE(n - 12);
  const footerAt = n - 20 - footerBytes;
  const summaryAt = footerAt - bytes.readUInt32LE(n - 20);
  const tags = bytes.readUInt32LE(summaryAt + 8);
  const head = Buffer.from(bytes.subarray(summaryAt, summaryAt + 16 + tags * 16));
  const values: Buffer[] = [];
  let at = summaryAt + head.length;
  for (let i = 0; i < tags; i++) {
    const entry = 16 + i * 16;
    let slots = 0;
    for (let s = 0; s < 48; s++) slots += s < 32 ? (head.readUInt32LE(entry + 4) >>> s) & 1 : (head.readUInt16LE(entry + 8) >>> (s - 32)) & 1;
    const mins = new Float64Array(slots);
    const maxs = new Float64Array(slots);
    const length = version >= 4 ? head.readUInt16LE(entry + 10) : slots * 16;
    const own = bytes.subarray(at, at + length);
    if (version >= 4) {
      const r = new ByteReader(own);
      decodeValues(r, slots, mins);
      decodeValues(r, slots, maxs);
    } else {
      for (let k = 0; k < slots; k++) {
        mins[k] = own.readDoubleLE(k * 16);
        maxs[k] = own.readDoubleLE(k * 16 + 8);
      }
    }
    at += length;
    edit(head.readUInt32LE(entry), mins, maxs);
    let out: Buffer;
    if (version >= 4) {
      const w = new ByteWriter();
      encodeValues(mins, slots, w);
      encodeValues(maxs, slots, w);
      out = Buffer.from(w.bytes());
      head.writeUInt16LE(out.length, entry + 10);
    } else {
      out = Buffer.alloc(slots * 16);
      for (let k = 0; k < slots; k++) {
        out.writeDoubleLE(mins[k]!, k * 16);
        out.writeDoubleLE(maxs[k]!, k * 16 + 8);
      }
    }
    head.writeUInt32LE(crc32c(out), entry + 12);
    values.push(out);
  }
  const section = Buffer.concat([head, ...values]);
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(section.length, 0);
  trailer.writeUInt32LE(crc32c(head), 4);
  fs.writeFileSync(file, Buffer.concat([bytes.subarray(0, summaryAt), section, bytes.subarray(footerAt, footerAt + footerBytes), trailer, bytes.subarray(n - 12)]));
}

/**
 * A sealed file written again as the builds before issue 33 wrote it (format 3, column codec 3):
 * the same points, blocks and summaries, raw summary values, no value mode 5.
 */
export function resealWithCodec3(file: string): void {
  const index = SealedIndex.read(file, parseDay(/sealed-(\d+)\.hsd$/.exec(file)![1]!)!);
  const writer = new SealedFileWriter(file, index.day, 3);
  for (let e = 0; e < index.entryCount; ) {
    const end = index.endOf(e);
    let total = 0;
    for (let i = e; i < end; i++) total += index.counts[i]!;
    const ts = new Float64Array(total);
    const values = new Float64Array(total);
    for (let at = 0; e < end; at += index.counts[e]!, e++) index.decode(e, ts.subarray(at), values.subarray(at));
    writer.addTag(index.tagIds[end - 1]!, ts, values, total);
  }
  writer.finish();
}

