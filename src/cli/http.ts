// The command's HTTPS calls: JSON in, JSON out, and a refusal turned into one line naming what the
// service said (its `error` or `message`), never a stack trace.

import https from 'node:https';
import type { IncomingMessage } from 'node:http';
import { CommandError } from './target.js';
import type { Target } from './target-types.js';

export interface Reply {
  status: number;
  headers: IncomingMessage['headers'];
  body: any;
}

/** Sends one request and resolves with the open response (the caller reads or pipes its body). */
export function send(target: Target, method: string, path: string, opts: { json?: unknown; headers?: Record<string, string> } = {}): Promise<IncomingMessage> {
  const body = opts.json === undefined ? undefined : Buffer.from(JSON.stringify(opts.json));
  return new Promise((resolve, reject) => {
    const req = https.request(new URL(path, target.baseUrl), {
      method,
      agent: target.agent,
      headers: {
        authorization: target.authorization,
        ...(body ? { 'content-type': 'application/json', 'content-length': String(body.length) } : {}),
        ...opts.headers,
      },
    }, resolve);
    req.on('error', (err) => reject(new CommandError(`${method} ${path}: ${(err as NodeJS.ErrnoException).code ?? err.message} (${target.baseUrl})`)));
    req.end(body);
  });
}

/** One JSON call; a status outside 2xx, or `success: false`, is a CommandError with the service's words. */
export async function call(target: Target, method: string, path: string, json?: unknown): Promise<Reply> {
  const res = await send(target, method, path, { json });
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  let body: any = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: kept as text for the message
  }
  const status = res.statusCode ?? 0;
  if (status < 200 || status >= 300 || (body && typeof body === 'object' && body.success === false)) {
    throw new CommandError(`${method} ${path.split('?')[0]}: ${status} ${refusal(body)}`);
  }
  return { status, headers: res.headers, body };
}

/** What a refusal says, in one line. */
export function refusal(body: unknown): string {
  if (body && typeof body === 'object') {
    const b = body as { error?: unknown; message?: unknown };
    const said = b.error ?? b.message;
    if (said !== undefined) return typeof said === 'string' ? said : JSON.stringify(said);
  }
  return String(body ?? '').slice(0, 300).replace(/\s+/g, ' ');
}
