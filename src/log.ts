// One pino logger for the process. Request lines carry method, path, status
// and duration; query values that could be secrets are replaced before the
// line is built, and pino's redaction is a second net for fields that must
// never be written whatever a caller logs.

import pino, { type Logger } from 'pino';

export type { Logger };

const SECRET_KEYS = ['password', 'new_password', 'token', 'access_token', 'authorization', 'secret'];

/**
 * Lines are buffered and written in batches (a write per request line showed up
 * in the main thread's profile under ingest, bench:ingest): at 8 KiB, at least
 * every 200 ms, and by flushLogs() before the process exits.
 */
const destination = pino.destination({ sync: false, minLength: 8192 });
setInterval(() => destination.flush(), 200).unref();

export function flushLogs(): void {
  try {
    destination.flushSync();
  } catch {
    // nothing buffered, or stdout already gone
  }
}

export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: 'historian' },
    redact: {
      paths: [
        ...SECRET_KEYS,
        ...SECRET_KEYS.map((k) => `*.${k}`),
        'headers.authorization',
        'req.headers.authorization',
      ],
      censor: '[redacted]',
    },
  }, destination);
}

const SECRET_PARAM = new RegExp(`(^|&)(${SECRET_KEYS.join('|')})=[^&]*`, 'gi');

/** The query string with the values of secret-looking parameters replaced. */
export function redactQuery(rawQuery: string): string {
  return rawQuery.replace(SECRET_PARAM, '$1$2=[redacted]');
}
