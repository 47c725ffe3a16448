// node-opcua, loaded when the first OPC UA collector starts (it is large: a service without OPC UA
// collectors never pays its start time or memory), with its own console logging turned into the
// service's log lines: node-opcua writes coloured multi-line text to stdout, which would break the
// one-JSON-object-per-line log. Its messages are library-wide (not tied to one collector), so they
// go to the log of the collector that started most recently, with any secret of a running collector
// (a password, a key) replaced first, whatever node-opcua chose to print.

import type { Logger } from '../../log.js';

export type OpcuaLib = typeof import('node-opcua-client');

let loading: Promise<OpcuaLib> | null = null;
let libraryLog: Logger | null = null;
const secrets = new Map<string, number>();

export function loadOpcua(log: Logger): Promise<OpcuaLib> {
  libraryLog = log;
  loading ??= import('node-opcua-client').then((lib) => {
    lib.setWarningLogger((_context: unknown, ...args: unknown[]) => forward('debug', args));
    lib.setErrorLogger((_context: unknown, ...args: unknown[]) => forward('warn', args));
    lib.setDebugLogger((_context: unknown, ...args: unknown[]) => forward('trace', args));
    return lib;
  });
  return loading;
}

/** Secrets to scrub from library messages while a collector holding them runs (reference-counted). */
export function holdSecrets(values: readonly (string | undefined)[]): () => void {
  const held = values.filter((v): v is string => typeof v === 'string' && v.length >= 4);
  for (const v of held) secrets.set(v, (secrets.get(v) ?? 0) + 1);
  return () => {
    for (const v of held) {
      const n = (secrets.get(v) ?? 1) - 1;
      if (n <= 0) secrets.delete(v);
      else secrets.set(v, n);
    }
  };
}

/** Text with every held secret replaced: also used on errors that reach a collector's status. */
export function scrub(text: string): string {
  let out = text;
  for (const secret of secrets.keys()) if (out.includes(secret)) out = out.split(secret).join('[redacted]');
  return out;
}

function forward(level: 'trace' | 'debug' | 'warn', args: unknown[]): void {
  const log = libraryLog;
  if (!log || !log.isLevelEnabled(level)) return;
  const text = args.map((a) => (a instanceof Error ? a.message : typeof a === 'string' ? a : safeString(a))).join(' ');
  // ANSI colours out, long dumps (certificates in base64) cut.
  const plain = scrub(text.replace(/\x1b\[[0-9;]*m/g, '')).slice(0, 1000);
  log[level]({ source: 'node-opcua' }, plain);
}

function safeString(value: unknown): string {
  try {
    return String(value);
  } catch {
    return '[unprintable]';
  }
}
