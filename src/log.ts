// One pino logger for the process. Request lines carry method, path, status
// and duration; query values that could be secrets are replaced before the
// line is built, and pino's redaction is a second net for fields that must
// never be written whatever a caller logs. API keys are recognisable by
// their shape, so a last net replaces them in every finished line, whatever
// field or parameter name carried them.

import pino, { type Logger } from 'pino';
import { prettyLogLine, type LogFormat } from '../shared/log-format.js';
import { LogSink } from './log-sink.js';

export type { Logger };

const SECRET_KEYS = ['password', 'new_password', 'token', 'access_token', 'authorization', 'secret', 'secrets_passphrase', 'passphrase', 'apikey', 'api_key', 'apiKey'];
/**
 * Query parameter names compared in a compact form: lower case, nothing but letters and digits
 * (`api_key`, `apiKey`, `API-Key` and `p[]` all compare as `apikey` and `p`). A name that holds
 * one of these is a secret's.
 */
const SECRET_WORDS = ['password', 'token', 'authorization', 'secret', 'passphrase', 'apikey'];
/** Query parameters that are secrets only under exactly this name: InfluxDB 1.x's password (`p`, /ingest/v2), also as `p[]`, `p[0]`. */
const SECRET_PARAMETERS = ['p'];

/** Lines are written in batches (log-sink.ts), and by flushLogs() before the process exits. */
const sinks = new Map<number, LogSink>([[1, new LogSink(1)]]);

export function flushLogs(): void {
  for (const sink of sinks.values()) sink.flushSync();
}

/** The process logger at `level`; `format` pretty turns each finished (redacted) line into one readable line. */
export function createLogger(level: string, format: LogFormat = 'json', fd = 1): Logger {
  // Standard output by default; the historian command logs a service it starts itself to stderr (fd 2).
  let destination = sinks.get(fd);
  if (!destination) sinks.set(fd, (destination = new LogSink(fd)));
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
    hooks: { streamWrite: format === 'pretty' ? (line) => prettyLogLine(redactApiKeys(line)) : redactApiKeys },
  }, destination);
}

/**
 * An API key (`hk_` and 40 letters and digits, auth/api-keys.ts), or 20 or more of its
 * characters, the underscore percent-encoded or not: a key pasted into a path, a query parameter
 * of any name, a message. A harmless word of that shape may go too; a key never stays.
 */
const API_KEY_TEXT = /hk(?:_|%5f)[0-9a-z]{20,}/gi;

/** `line` with every API key in it replaced (pino calls this with each finished line). */
export function redactApiKeys(line: string): string {
  return line.replace(API_KEY_TEXT, 'hk_[redacted]');
}

/**
 * The query string with the values of secret-looking parameters replaced.
 * Names are compared as a server would read them (percent-decoded, `+` as a
 * space, any case), so `access%5Ftoken`, `%61ccess_token` and `Access_Token`
 * are caught, and by substring, so `refresh_token` and `token ` are too (the
 * whole parameter then goes, since such a name could carry the secret in
 * itself): a log line may lose a harmless value, never keep a secret.
 * Decoding never throws; a malformed escape stays as it is.
 */
export function redactQuery(rawQuery: string): string {
  let changed = false;
  const parts = rawQuery.split('&').map((part) => {
    const redacted = redactParameter(part);
    if (redacted !== part) changed = true;
    return redacted;
  });
  return changed ? parts.join('&') : rawQuery;
}

function redactParameter(part: string): string {
  const eq = part.indexOf('=');
  const rawName = eq < 0 ? part : part.slice(0, eq);
  const name = decodeName(rawName);
  // Array and object forms (`p[]`, `p[0]`, `auth[token]`) name the same parameter to a server that reads them.
  const compact = name.replace(/[^a-z0-9]/g, '');
  const base = name.replace(/\[.*$/s, '').replace(/[^a-z0-9]/g, '');
  if (SECRET_PARAMETERS.includes(base) || SECRET_PARAMETERS.includes(compact)) return `${rawName}=[redacted]`;
  if (!SECRET_WORDS.some((word) => compact.includes(word))) return part;
  // A name that is exactly a secret word is kept (however encoded); any other could carry the secret in itself.
  return SECRET_WORDS.some((word) => compact === word || compact === `access${word}` || compact === `new${word}`) ? `${rawName}=[redacted]` : '[redacted]';
}

/** Lower-cased and percent-decoded up to three times, so a name encoded twice is caught as well. */
function decodeName(rawName: string): string {
  let name = rawName;
  for (let i = 0; i < 3; i++) {
    const decoded = lenientDecode(name.replace(/\+/g, ' '));
    if (decoded === name) break;
    name = decoded;
  }
  return name.toLowerCase();
}

const utf8 = new TextDecoder('utf-8', { fatal: false });

/** Percent-decoding that turns invalid UTF-8 into U+FFFD and leaves a malformed escape as it is, never throwing. */
function lenientDecode(text: string): string {
  if (!text.includes('%')) return text;
  return text.replace(/(?:%[0-9a-f]{2})+/gi, (run) => utf8.decode(Uint8Array.from(run.slice(1).split('%'), (hex) => parseInt(hex, 16))));
}
