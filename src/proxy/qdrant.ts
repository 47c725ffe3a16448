// POST /svcapi/create_qdrant_collection goes to Qdrant through its official REST client
// (@qdrant/js-client-rest, `PUT /collections/{name}` with `{vectors: {size, distance}}`). The
// client reads Qdrant's whole answer (small for this call) within `vector.timeoutMs`, which bounds
// the call from connecting to the last byte. Errors become ours as upstream.ts says.

import { QdrantClient, QdrantClientTimeoutError, QdrantClientUnexpectedResponseError } from '@qdrant/js-client-rest';
import type { Reply } from '../http/route.js';
import { badGateway, networkReason, notConfigured, upstreamMessage, upstreamRefusal } from './upstream.js';

export const DISTANCES = ['Cosine', 'Dot', 'Euclid'] as const;
export type Distance = (typeof DISTANCES)[number];

export interface CollectionSpec {
  name: string;
  vector_size: number;
  distance: Distance;
}

export class QdrantProxy {
  private readonly client: QdrantClient | null = null;
  /** Where Qdrant is, for messages (no path or credentials in it). */
  private readonly origin: string = '';

  constructor(url: string | null, private readonly timeoutMs: number) {
    if (url === null) return;
    const parsed = new URL(url);
    this.origin = parsed.origin;
    // The client ignores a path in `url`; a Qdrant behind a path prefix is given as `prefix`.
    const prefix = parsed.pathname.replace(/\/+$/, '');
    this.client = new QdrantClient({
      url: parsed.origin,
      ...(prefix ? { prefix } : {}),
      timeout: timeoutMs,
      // Otherwise the constructor sends GET / at once and writes to the console when it fails.
      checkCompatibility: false,
    });
  }

  get configured(): boolean {
    return this.client !== null;
  }

  async createCollection(spec: CollectionSpec): Promise<Reply> {
    if (this.client === null) throw notConfigured('vector.qdrantUrl');
    try {
      await this.client.createCollection(spec.name, { vectors: { size: spec.vector_size, distance: spec.distance } });
    } catch (err) {
      return this.failure(err);
    }
    const { name, vector_size, distance } = spec;
    return { body: { success: true, message: `collection ${name} created`, name, vector_size, distance } };
  }

  private failure(err: unknown): Reply {
    // The client's ApiError (not exported): Qdrant answered with a status of 400 or above.
    const answered = err as { status?: unknown; data?: unknown };
    if (typeof answered?.status === 'number') return upstreamRefusal('qdrant', answered.status, upstreamMessage(answered.data));
    if (err instanceof QdrantClientTimeoutError || (err as Error)?.name === 'AbortError') {
      throw badGateway(`qdrant at ${this.origin} did not answer within ${this.timeoutMs} ms (vector.timeoutMs)`);
    }
    if (err instanceof QdrantClientUnexpectedResponseError) throw badGateway(`qdrant at ${this.origin} answered unexpectedly: ${err.message.split('\n')[0]}`);
    if (err instanceof SyntaxError) throw badGateway(`qdrant at ${this.origin} answered with a body that is not JSON`);
    throw badGateway(`qdrant at ${this.origin} unreachable: ${networkReason(err)}`);
  }
}
