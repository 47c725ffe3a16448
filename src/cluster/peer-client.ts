// Node-to-node HTTPS: keep-alive connections, the cluster's CA (every node's certificate is issued
// by the one CA the operator gave each node), the node credential on every request, a bounded time
// per request, and a bounded answer.

import fs from 'node:fs';
import https from 'node:https';
import { pipeline } from 'node:stream/promises';
import { nodeCredential } from './node-auth.js';

const MAX_ANSWER_BYTES = 256 * 1024 * 1024;

export interface PeerReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export class PeerClient {
  private readonly agent: https.Agent;

  constructor(caFile: string | null, private readonly secret: Buffer, private readonly nodeId: string) {
    this.agent = new https.Agent({ keepAlive: true, maxSockets: 4, ...(caFile ? { ca: fs.readFileSync(caFile) } : {}) });
  }

  request(baseUrl: string, method: 'GET' | 'POST', path: string, opts: { body?: Uint8Array; headers?: Record<string, string>; timeoutMs: number }): Promise<PeerReply> {
    const url = new URL(path, baseUrl);
    return new Promise((resolve, reject) => {
      const req = https.request(url, {
        method,
        agent: this.agent,
        headers: {
          authorization: nodeCredential(this.secret, this.nodeId),
          ...(opts.body ? { 'content-length': String(opts.body.byteLength) } : {}),
          ...opts.headers,
        },
        timeout: opts.timeoutMs,
      });
      const timer = setTimeout(() => req.destroy(new Error(`${method} ${url.href} took longer than ${opts.timeoutMs} ms`)), opts.timeoutMs);
      req.on('timeout', () => req.destroy(new Error(`${method} ${url.href}: no answer for ${opts.timeoutMs} ms`)));
      req.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_ANSWER_BYTES) req.destroy(new Error(`${url.href}: answer larger than ${MAX_ANSWER_BYTES} bytes`));
          else chunks.push(chunk);
        });
        res.on('end', () => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) });
        });
        res.on('error', (err) => {
          clearTimeout(timer);
          reject(err);
        });
      });
      req.end(opts.body);
    });
  }

  /**
   * A large answer (a snapshot) streamed into `file`; gives up when no byte arrives for
   * `idleTimeoutMs`. The status and headers come back; the body is in the file only on a 200.
   */
  download(baseUrl: string, path: string, file: string, idleTimeoutMs: number): Promise<{ status: number; headers: Record<string, string | string[] | undefined> }> {
    const url = new URL(path, baseUrl);
    return new Promise((resolve, reject) => {
      const req = https.request(url, { method: 'POST', agent: this.agent, headers: { authorization: nodeCredential(this.secret, this.nodeId), 'content-length': '0' }, timeout: idleTimeoutMs });
      req.on('timeout', () => req.destroy(new Error(`POST ${url.href}: nothing for ${idleTimeoutMs} ms`)));
      req.on('error', reject);
      req.on('response', (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
          return;
        }
        pipeline(res, fs.createWriteStream(file, { mode: 0o600 })).then(() => resolve({ status: 200, headers: res.headers }), reject);
      });
      req.end();
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
