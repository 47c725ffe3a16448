// What route declarations can ask of the HTTP server beyond the common case (issue 13): a token
// in the `access_token` query parameter where the route allows it, and long-lived streams that
// shutdown ends at once instead of waiting out the grace period. A real HttpServer over TLS with
// real accounts and tokens, and routes declared here for the purpose.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import https from 'node:https';
import { once } from 'node:events';
import { connect as tlsConnect } from 'node:tls';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { TokenService } from '../../src/auth/tokens.js';
import { AccountStore } from '../../src/auth/accounts.js';
import { AccountsTable } from '../../src/meta/tables/accounts.js';
import { ensureCertificates } from '../../src/http/certificates.js';
import type { RouteDef } from '../../src/http/route.js';
import type { Claims } from '../../src/http/caller.js';
import { HttpServer } from '../../src/http/server.js';
import { createLogger } from '../../src/log.js';
import { openMetadataDb } from '../../src/meta/database.js';
import { Registry } from '../../src/meta/registry.js';
import { syncEntitySchema } from '../../src/meta/schema.js';

interface Got {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  complete: boolean;
}

function get(port: number, ca: string, urlPath: string, headers: Record<string, string> = {}, onData?: (chunk: string) => void): Promise<Got> {
  return new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', servername: 'localhost', port, path: urlPath, ca, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        text += c;
        onData?.(c);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text, complete: res.complete }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** The body limit of the two small upload routes. */
const SMALL_LIMIT = 256 << 10;

describe('HttpServer route options', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'historian-server-'));
  const log = createLogger('silent');
  let server: HttpServer<Claims>;
  let port: number;
  let ca: string;
  let token: string;
  let streamEnded = false;
  /** What the slow streamBody handler saw: bytes, and the most that ever waited for it. */
  const slowUpload = { bytes: 0, peakBuffered: 0 };
  let db: ReturnType<typeof openMetadataDb>;

  before(async () => {
    const tls = ensureCertificates(dataDir, { certFile: null, keyFile: null, caFile: null });
    ca = fs.readFileSync(tls.caFile!, 'utf8');
    db = openMetadataDb(dataDir);
    syncEntitySchema(db, new Registry());
    const secret = Buffer.alloc(48, 7);
    const accounts = new AccountStore(new AccountsTable(db), secret);
    accounts.create('reader@plant.test', 'not-a-hash', 'reader', 'read-write');
    const tokens = new TokenService(secret, 3600, 60, 100, accounts);
    token = tokens.sign(accounts.current('reader@plant.test')!);
    const routes: RouteDef[] = [
      {
        method: 'GET', path: '/t/query-token', auth: 'jwt', tag: 'test', summary: 'accepts access_token', tokenInQuery: true,
        responses: { 200: { description: 'who' } },
        handler: (req) => ({ body: { sub: req.user!.sub } }),
      },
      {
        method: 'GET', path: '/t/header-only', auth: 'jwt', tag: 'test', summary: 'header only',
        responses: { 200: { description: 'who' } },
        handler: (req) => ({ body: { sub: req.user!.sub } }),
      },
      {
        method: 'GET', path: '/t/forever', auth: 'public', tag: 'test', summary: 'streams until the request ends', longLived: true,
        responses: { 200: { description: 'a stream', contentType: 'text/plain' } },
        handler: (req) => ({
          contentType: 'text/plain',
          stream: async (out) => {
            void out.write('hello\n');
            await new Promise<void>((resolve) => req.signal.addEventListener('abort', () => resolve(), { once: true }));
            streamEnded = true;
          },
        }),
      },
      {
        method: 'PUT', path: '/t/slow-upload', auth: 'jwt', tag: 'test', summary: 'reads its streamed body slowly',
        streamBody: { description: 'anything' }, maxBodyBytes: 64 << 20, maxBodySetting: 'test.maxBytes',
        responses: { 200: { description: 'how much' } },
        handler: async (req) => {
          for await (const chunk of req.bodyStream!) {
            slowUpload.bytes += chunk.byteLength;
            slowUpload.peakBuffered = Math.max(slowUpload.peakBuffered, req.bodyStream!.bufferedBytes);
            await new Promise((resolve) => setTimeout(resolve, 2)); // a disk far slower than the network
          }
          return { body: { bytes: slowUpload.bytes } };
        },
      },
      {
        method: 'POST', path: '/t/raw-small', auth: 'jwt', tag: 'test', summary: 'a whole body of at most 256 KiB',
        rawBody: { contentTypes: ['application/octet-stream'], description: 'anything' }, maxBodyBytes: SMALL_LIMIT, maxBodySetting: 'test.rawMax',
        responses: { 200: { description: 'how much' } },
        handler: (req) => ({ body: { bytes: req.rawBody!.byteLength } }),
      },
      {
        method: 'PUT', path: '/t/stream-small', auth: 'jwt', tag: 'test', summary: 'a streamed body of at most 256 KiB',
        streamBody: { description: 'anything' }, maxBodyBytes: SMALL_LIMIT, maxBodySetting: 'test.streamMax',
        responses: { 200: { description: 'how much' } },
        handler: async (req) => {
          let bytes = 0;
          for await (const chunk of req.bodyStream!) bytes += chunk.byteLength;
          return { body: { bytes } };
        },
      },
    ];
    server = new HttpServer({
      routes, verifyToken: (header) => tokens.verifyHeader(header), grantOf: (user) => user, log, tls, streamStallTimeoutMs: 30_000,
      limits: { maxBodyBytes: 1 << 20, maxJsonBodyBytes: 1 << 20, maxPublicBodyBytes: 1 << 14, maxBodyBytesInFlight: 1 << 24, maxUrlBytes: 8192, maxHeaderBytes: 16384 },
    });
    port = await server.listen('127.0.0.1', 0);
  });
  after(() => {
    db.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test('the token may come as access_token only where the route says so; the header wins', async () => {
    const viaQuery = await get(port, ca, `/t/query-token?access_token=${encodeURIComponent(token)}`);
    assert.equal(viaQuery.status, 200);
    assert.deepEqual(JSON.parse(viaQuery.text), { sub: 'reader@plant.test' });
    assert.equal((await get(port, ca, `/t/header-only?access_token=${encodeURIComponent(token)}`)).status, 401);
    assert.equal((await get(port, ca, '/t/query-token?access_token=not-a-token', { authorization: `Bearer ${token}` })).status, 200);
    assert.equal((await get(port, ca, `/t/query-token?access_token=${encodeURIComponent(token)}`, { authorization: 'Bearer bad' })).status, 401);
  });

  test('a streamBody handler slower than its client holds the socket back (uWS pause/resume): what waits for it stays bounded', async () => {
    const size = 24 << 20;
    const status = await new Promise<number>((resolve, reject) => {
      const req = https.request({
        host: '127.0.0.1', servername: 'localhost', port, method: 'PUT', path: '/t/slow-upload', ca, agent: false,
        headers: { authorization: `Bearer ${token}`, 'content-length': String(size) },
      }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      const block = Buffer.alloc(256 << 10, 7);
      let sent = 0;
      const pump = () => {
        while (sent < size) {
          sent += block.length;
          if (!req.write(block)) return void req.once('drain', pump);
        }
        req.end();
      };
      pump();
    });
    assert.equal(status, 200);
    assert.equal(slowUpload.bytes, size);
    // Without pausing, nearly the whole body would pile up in front of the handler.
    assert.ok(slowUpload.peakBuffered < 4 << 20, `${slowUpload.peakBuffered} bytes waited for the handler at most`);
  });

  test('a body past the limit is answered 413 while the client still sends, and a client on a kept-alive connection reads that answer every time', async () => {
    // Closing at once after the 413 resets the connection under the client's writes, and Node's
    // client then fails with EPIPE when a write comes before it read the answer (a race: the next
    // test shows the reset without it).
    const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      for (const [method, urlPath, setting] of [['POST', '/t/raw-small', 'test.rawMax'], ['PUT', '/t/stream-small', 'test.streamMax']]) {
        for (let i = 0; i < 20; i++) {
          const got = await uploadUntilAnswered(agent, method, urlPath);
          assert.equal(got.status, 413, `try ${i} on ${urlPath}: ${got.error ?? got.text}`);
          assert.match(JSON.parse(got.text).error, new RegExp(`larger than ${SMALL_LIMIT} bytes \\(${setting.replace('.', '\\.')}\\)`));
          assert.equal(got.headers.connection, 'close', 'the 413 asks the client to stop and close');
        }
      }
    } finally {
      agent.destroy();
    }

    async function uploadUntilAnswered(via: https.Agent, method: string, urlPath: string): Promise<Got & { error?: string }> {
      return new Promise((resolve) => {
        const req = https.request({
          host: '127.0.0.1', servername: 'localhost', port, method, path: urlPath, ca, agent: via,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream' },
        });
        let answered = false;
        req.on('response', (res) => {
          answered = true;
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => {
            resolve({ status: res.statusCode ?? 0, headers: res.headers, text, complete: res.complete });
            req.destroy();
          });
        });
        req.on('error', (err) => {
          if (!answered) resolve({ status: 0, headers: {}, text: '', complete: false, error: err.message });
        });
        const block = Buffer.alloc(64 << 10, 9);
        let sent = 0;
        const pump = () => {
          // Up to 32 times the limit, chunked and never ended: only an answer mid-body ends this.
          while (!answered && !req.destroyed && sent < 32 * SMALL_LIMIT) {
            sent += block.length;
            if (!req.write(block)) return void req.once('drain', pump);
          }
        };
        pump();
      });
    }
  });

  test('the rest of a refused body is read as body, not as the next request on the connection', async () => {
    // Each refused body carries the text of a request inside it; were it parsed as one, a
    // fourth answer would come. The last request says `Connection: close`, so the server ends
    // the exchange and the count is final.
    const auth = `authorization: Bearer ${token}\r\n`;
    const smuggled = Buffer.from(`GET /t/header-only HTTP/1.1\r\nhost: localhost\r\n${auth}\r\n`);
    const body = Buffer.alloc(SMALL_LIMIT * 3, 0x20);
    smuggled.copy(body, SMALL_LIMIT * 2);
    for (const framing of ['content-length', 'chunked'] as const) {
      const pieces: Buffer[] = [];
      if (framing === 'content-length') {
        pieces.push(Buffer.from(`POST /t/raw-small HTTP/1.1\r\nhost: localhost\r\n${auth}content-type: application/octet-stream\r\ncontent-length: ${body.length}\r\n\r\n`), body);
      } else {
        pieces.push(Buffer.from(`PUT /t/stream-small HTTP/1.1\r\nhost: localhost\r\n${auth}transfer-encoding: chunked\r\n\r\n`));
        for (let at = 0; at < body.length; at += 50_000) {
          const part = body.subarray(at, at + 50_000);
          pieces.push(Buffer.from(`${part.length.toString(16)}\r\n`), part, Buffer.from('\r\n'));
        }
        pieces.push(Buffer.from('0\r\n\r\n'));
      }
      pieces.push(Buffer.from(`GET /t/query-token HTTP/1.1\r\nhost: localhost\r\n${auth}\r\n`));
      pieces.push(Buffer.from(`GET /t/header-only HTTP/1.1\r\nhost: localhost\r\n${auth}connection: close\r\n\r\n`));
      const answer = await exchangeOnOneConnection(pieces);
      const statuses = [...answer.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
      assert.deepEqual(statuses, [413, 200, 200], `${framing}: ${answer.replace(/\r\n/g, ' | ')}`);
    }

    function exchangeOnOneConnection(pieces: Buffer[]): Promise<string> {
      return new Promise((resolve, reject) => {
        const socket = tlsConnect({ host: '127.0.0.1', servername: 'localhost', port, ca }, async () => {
          for (const piece of pieces) {
            if (!socket.write(piece)) await once(socket, 'drain');
          }
        });
        const parts: Buffer[] = [];
        socket.on('data', (c: Buffer) => parts.push(c));
        socket.on('end', () => resolve(Buffer.concat(parts).toString('latin1')));
        socket.on('error', reject);
      });
    }
  });

  test('shutdown ends long-lived streams instead of waiting out a grace period', async () => {
    let started!: () => void;
    const streaming = new Promise<void>((resolve) => (started = resolve));
    const reading = get(port, ca, '/t/forever', {}, () => started());
    await streaming;
    // A grace period far longer than this test's timeout: close() returns only because the stream ended.
    await server.close(10 * 60_000);
    const got = await reading;
    assert.equal(got.status, 200);
    assert.equal(got.text, 'hello\n');
    assert.ok(got.complete, 'the stream was ended cleanly (terminating chunk), not cut');
    assert.ok(streamEnded);
  });
});
