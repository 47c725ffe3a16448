// POST /svcapi/create_qdrant_collection goes to Qdrant through its official REST client
// (@qdrant/js-client-rest, `PUT /collections/{name}` with `{vectors: {size, distance}}`). The
// client reads Qdrant's whole answer (small for this call) within `vector.timeoutMs`, which bounds
// the call from connecting to the last byte. Errors become ours as upstream.ts says.

import type { QdrantClient } from '@qdrant/js-client-rest';
import type { Reply } from '../http/route.js';
import { checkedSegment } from '../http/upstream-path.js';
import { badGateway, networkReason, notConfigured, upstreamMessage, upstreamRefusal } from './upstream.js';

export const DISTANCES = ['Cosine', 'Dot', 'Euclid'] as const;
export type Distance = (typeof DISTANCES)[number];

export interface CollectionSpec {
  name: string;
  vector_size: number;
  distance: Distance;
}

type QdrantLibrary = typeof import('@qdrant/js-client-rest');

export class QdrantProxy {
  /** The client library, loaded at the first call: about 15 MB a service that never calls Qdrant does not pay. */
  private library: Promise<{ lib: QdrantLibrary; client: QdrantClient }> | null = null;
  private readonly options: ConstructorParameters<QdrantLibrary['QdrantClient']>[0] | null = null;
  /** Where Qdrant is, for messages (no path or credentials in it). */
  private readonly origin: string = '';

  constructor(url: string | null, private readonly timeoutMs: number) {
    if (url === null) return;
    const parsed = new URL(url);
    this.origin = parsed.origin;
    // The client ignores a path in `url`; a Qdrant behind a path prefix is given as `prefix`.
    const prefix = parsed.pathname.replace(/\/+$/, '');
    this.options = {
      url: parsed.origin,
      ...(prefix ? { prefix } : {}),
      timeout: timeoutMs,
      // Otherwise the constructor sends GET / at once and writes to the console when it fails.
      checkCompatibility: false,
    };
  }

  get configured(): boolean {
    return this.options !== null;
  }

  async createCollection(spec: CollectionSpec): Promise<Reply> {
    // The client puts the name into the URL path (`/collections/{name}`): `..` there climbs out.
    checkedSegment(spec.name, 'name');
    if (this.options === null) throw notConfigured('vector.qdrantUrl');
    const options = this.options;
    this.library ??= import('@qdrant/js-client-rest').then((lib) => ({ lib, client: new lib.QdrantClient(options) }));
    const { lib, client } = await this.library;
    try {
      await client.createCollection(spec.name, { vectors: { size: spec.vector_size, distance: spec.distance } });
    } catch (err) {
      return this.failure(lib, err);
    }
    const { name, vector_size, distance } = spec;
    return { body: { success: true, message: `collection ${name} created`, name, vector_size, distance } };
  }

  private failure(lib: QdrantLibrary, err: unknown): Reply {
    // The client's ApiError (not exported): Qdrant answered with a status of 400 or above.
    const answered = err as { status?: unknown; data?: unknown };
    if (typeof answered?.status === 'number') return upstreamRefusal('qdrant', answered.status, upstreamMessage(answered.data));
    if (err instanceof lib.QdrantClientTimeoutError || (err as Error)?.name === 'AbortError') {
      throw badGateway(`qdrant at ${this.origin} did not answer within ${this.timeoutMs} ms (vector.timeoutMs)`);
    }
    if (err instanceof lib.QdrantClientUnexpectedResponseError) throw badGateway(`qdrant at ${this.origin} answered unexpectedly: ${err.message.split('\n')[0]}`);
    if (err instanceof SyntaxError) throw badGateway(`qdrant at ${this.origin} answered with a body that is not JSON`);
    throw badGateway(`qdrant at ${this.origin} unreachable: ${networkReason(err)}`);
  }
}
