// Settings come from three layers, later ones winning: config/default.json,
// an optional JSON file named by HISTORIAN_CONFIG (deep-merged), and a few
// environment variables. The merged result is checked against
// config/schema.json so that a typo or a bad value stops the service at start
// with a message naming the setting, instead of surfacing later as odd behaviour.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface Config {
  /** Absolute after loading. */
  readonly dataDir: string;
  readonly server: {
    readonly host: string;
    /** 0 means an ephemeral port. */
    readonly port: number;
    readonly maxBodyBytes: number;
    readonly maxJsonBodyBytes: number;
    readonly maxPublicBodyBytes: number;
    readonly maxBodyBytesInFlight: number;
    readonly maxUrlBytes: number;
    readonly maxHeaderBytes: number;
    readonly maxJsonDepth: number;
    readonly shutdownGraceMs: number;
  };
  readonly tls: {
    readonly certFile: string | null;
    readonly keyFile: string | null;
    readonly caFile: string | null;
  };
  readonly log: {
    readonly level: LogLevel;
    /** `json` (pino lines, for journald and collectors) or `pretty` (one readable line an event, for a terminal). */
    readonly format: 'json' | 'pretty';
    /** Lines go to stderr instead of stdout (the historian command's own service: stdout is its output). Not a setting. */
    readonly toStderr?: boolean;
  };
  readonly storage: {
    readonly shards: number;
    readonly autoCreateCollections: boolean;
    readonly requestRingBytes: number;
    readonly resultRingBytes: number;
    readonly bufferCapacityPoints: number;
    readonly flushIntervalMs: number;
    readonly sealGraceMs: number;
    readonly minFreeBytes: number;
    readonly minTimestampMs: number;
    readonly resultStallTimeoutMs: number;
    readonly writeTimeoutMs: number;
    readonly queryTimeoutMs: number;
    readonly queryMemoryBytes: number;
    readonly maxSeriesPerCollection: number;
    readonly maxDaysPerWrite: number;
    readonly maxUnsealedDaysPerCollection: number;
    readonly dayLogCompactBlocks: number;
    readonly dayLogCompactBytes: number;
    /** Milliseconds between trims of freed native memory (malloc_trim); 0: never. */
    readonly trimFreedMemoryMs: number;
  };
  readonly notifications: {
    readonly keepaliveSeconds: number;
    readonly streamQueueBytes: number;
    readonly maxStreams: number;
    readonly maxStreamsPerUser: number;
    /** Named as in the contract (SPEC "Limits"). */
    readonly retention_days: number;
    readonly retention_interval_seconds: number;
  };
  readonly monitor: {
    readonly defaultTickRateMs: number;
  };
  readonly processLog: {
    readonly retentionDays: number;
  };
  readonly backup: {
    readonly maxRestoreBytes: number;
  };
  readonly connector: {
    readonly allowedHosts: readonly string[];
    readonly recordedPageSize: number;
  };
  readonly blob: {
    /** Largest blob or attachment upload (bytes). */
    readonly maxBytes: number;
    /** Bytes of blobs and attachments one account may keep (admins: no limit); 0 for no limit. */
    readonly quotaBytesPerUser: number;
  };
  readonly ws: {
    readonly batchMs: number;
    readonly maxBufferedBytes: number;
    readonly maxSubscriptionsPerSocket: number;
    readonly maxTagsPerSubscription: number;
    readonly maxSocketsPerUser: number;
    readonly maxWatchedTagsPerUser: number;
  };
  /** Qdrant, behind POST /svcapi/create_qdrant_collection. */
  readonly vector: {
    /** null: the route answers 501 naming this setting. */
    readonly qdrantUrl: string | null;
    readonly timeoutMs: number;
  };
  /** The agent service that /svcapi/adk/* forwards to. */
  readonly adk: {
    /** null: the routes answer 501 naming this setting. */
    readonly baseUrl: string | null;
    readonly timeoutMs: number;
  };
  readonly cluster: {
    readonly enabled: boolean;
    readonly nodeId: string;
    readonly advertiseUrl: string;
    readonly etcd: { readonly endpoints: readonly string[] };
    readonly electionTtlSeconds: number;
    readonly writeAck: 'local' | 'one';
    readonly ackTimeoutMs: number;
    readonly secretFile: string | null;
    readonly queueMaxBytes: number;
    readonly queueMaxAgeHours: number;
  };
  readonly ingest: {
    readonly maxBodyBytes: number;
    readonly rateLimitPerMinute: number;
    readonly tokenCacheSeconds: number;
    readonly tokenCacheMaxEntries: number;
  };
  readonly promql: {
    readonly maxSamples: number;
    readonly maxSeries: number;
    readonly timeoutMs: number;
  };
  readonly compat: {
    readonly openMonitorAndBackup: boolean;
  };
  /** GET /metrics (WIRE.md part 3). */
  readonly metrics: {
    /** Serve it without credentials (a scraper on a trusted network); off, any valid token or API key. */
    readonly public: boolean;
  };
  readonly debug: {
    readonly crashRoute: boolean;
    readonly clockRoute: boolean;
    readonly restoreStepDelayMs: number;
  };
  readonly meta: {
    readonly maxListRows: number;
    readonly regexpBudgetSteps: number;
  };
  readonly auth: {
    readonly adminEmail: string;
    readonly tokenLifetimeSeconds: number;
    readonly tokenCacheSeconds: number;
    readonly tokenCacheMaxEntries: number;
    readonly rateLimitRequests: number;
    readonly rateLimitRequestsPerAddress: number;
    readonly rateLimitWindowSeconds: number;
    readonly lockoutFailures: number;
    readonly lockoutSeconds: number;
    readonly scryptCost: number;
    readonly minPasswordLength: number;
  };
}

export class ConfigError extends Error {
  /** Dotted path of the offending setting, when there is one. */
  readonly setting: string | undefined;

  constructor(message: string, setting?: string) {
    super(message);
    this.name = 'ConfigError';
    this.setting = setting;
  }
}

export interface LoadConfigOptions {
  /** Replaces config/default.json; meant for tests. */
  defaultsPath?: string;
  /** Whether standard output is a terminal (`log.format` auto); process.stdout's by default. */
  stdoutIsTerminal?: boolean;
}

// The compiled file sits in dist/src, so the repository root is two levels up.
const DEFAULTS_PATH = fileURLToPath(new URL('../../config/default.json', import.meta.url));
const SCHEMA_PATH = fileURLToPath(new URL('../../config/schema.json', import.meta.url));

type JsonObject = { [key: string]: unknown };

/** Environment variables that set a single string-valued setting directly. */
const STRING_OVERRIDES = [
  { variable: 'HISTORIAN_DATA_DIR', setting: ['dataDir'] },
  { variable: 'HISTORIAN_LOG_LEVEL', setting: ['log', 'level'] },
  { variable: 'HISTORIAN_LOG_FORMAT', setting: ['log', 'format'] },
  { variable: 'HISTORIAN_ADMIN_EMAIL', setting: ['auth', 'adminEmail'] },
] as const;

export function loadConfig(env: NodeJS.ProcessEnv = process.env, opts: LoadConfigOptions = {}): Config {
  const defaultsPath = opts.defaultsPath ?? DEFAULTS_PATH;
  let settings = readJsonObject(defaultsPath, `defaults file ${defaultsPath}`);

  const overrideFile = nonEmpty(env['HISTORIAN_CONFIG']);
  if (overrideFile !== undefined) {
    const overridePath = path.resolve(overrideFile);
    const overrides = readJsonObject(overridePath, `HISTORIAN_CONFIG file ${overridePath}`);
    settings = mergeSettings(settings, overrides) as JsonObject;
  }

  // Remember which dotted settings came from the environment, so a schema
  // error can point at the variable the operator actually has to fix.
  const envSources = new Map<string, string>();

  const port = nonEmpty(env['HISTORIAN_PORT']);
  if (port !== undefined) {
    if (!/^\s*\d+\s*$/.test(port)) {
      throw new ConfigError(
        `invalid setting server.port (from HISTORIAN_PORT): must be an integer, got ${JSON.stringify(port)}`,
        'server.port',
      );
    }
    setAt(settings, ['server', 'port'], Number(port));
    envSources.set('server.port', 'HISTORIAN_PORT');
  }
  for (const { variable, setting } of STRING_OVERRIDES) {
    const value = nonEmpty(env[variable]);
    if (value === undefined) continue;
    setAt(settings, setting, value);
    envSources.set(setting.join('.'), variable);
  }

  const validate = schemaValidator();
  if (!validate(settings)) {
    throw describeSchemaError(validate.errors?.[0], envSources);
  }

  const config = settings as unknown as Config;
  // Else a write the per-request bound allows could never be stored in an empty collection.
  if (config.storage.maxUnsealedDaysPerCollection < config.storage.maxDaysPerWrite) {
    throw new ConfigError(`storage.maxUnsealedDaysPerCollection (${config.storage.maxUnsealedDaysPerCollection}) must be at least storage.maxDaysPerWrite (${config.storage.maxDaysPerWrite})`);
  }
  // `log.format` auto: readable lines for a person at a terminal, JSON for journald, files and pipes.
  const format = (config.log.format as string) === 'auto' ? ((opts.stdoutIsTerminal ?? process.stdout.isTTY === true) ? 'pretty' : 'json') : config.log.format;
  return deepFreeze({ ...config, log: { ...config.log, format }, dataDir: path.resolve(config.dataDir) });
}

/** Unset and empty variables are treated alike, so `VAR= cmd` clears an override. */
function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

function readJsonObject(file: string, description: string): JsonObject {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read ${description}: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`${description} is not valid JSON: ${(err as Error).message}`);
  }
  if (!isPlainObject(parsed)) {
    throw new ConfigError(`${description} must contain a JSON object`);
  }
  return parsed;
}

function isPlainObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Objects merge key by key; anything else (scalars, null, arrays) replaces.
 * Keys are defined rather than assigned so a `__proto__` key in a file stays
 * an ordinary (and, by the schema, unknown) setting instead of a prototype.
 */
function mergeSettings(base: unknown, override: unknown): unknown {
  if (!isPlainObject(base) || !isPlainObject(override)) return override;
  const merged: JsonObject = {};
  for (const source of [base, override]) {
    for (const [key, value] of Object.entries(source)) {
      const previous = Object.hasOwn(merged, key) ? merged[key] : undefined;
      Object.defineProperty(merged, key, {
        value: source === override ? mergeSettings(previous, value) : value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
  }
  return merged;
}

function setAt(settings: JsonObject, keys: readonly string[], value: unknown): void {
  let node = settings;
  for (const key of keys.slice(0, -1)) {
    const child = node[key];
    if (!isPlainObject(child)) {
      // The schema will report the malformed parent; give the override a home.
      node[key] = {};
    }
    node = node[key] as JsonObject;
  }
  node[keys[keys.length - 1]!] = value;
}

let cachedValidator: ValidateFunction | undefined;

function schemaValidator(): ValidateFunction {
  if (cachedValidator === undefined) {
    const schema = readJsonObject(SCHEMA_PATH, `schema file ${SCHEMA_PATH}`);
    // Union types (`["string", "null"]`) are deliberate for the TLS paths.
    const ajv = new Ajv({ allErrors: false, allowUnionTypes: true });
    cachedValidator = ajv.compile(schema);
  }
  return cachedValidator;
}

/** `/server/port` -> `server.port` (JSON pointer escapes undone). */
function pointerToDotted(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');
}

function joinSetting(parent: string, key: string): string {
  return parent === '' ? key : `${parent}.${key}`;
}

function describeSchemaError(error: ErrorObject | undefined, envSources: Map<string, string>): ConfigError {
  if (error === undefined) return new ConfigError('invalid configuration');
  const parent = pointerToDotted(error.instancePath);

  if (error.keyword === 'additionalProperties') {
    const setting = joinSetting(parent, String(error.params['additionalProperty']));
    return new ConfigError(`unknown setting ${setting}`, setting);
  }
  if (error.keyword === 'required') {
    const setting = joinSetting(parent, String(error.params['missingProperty']));
    return new ConfigError(`missing setting ${setting}`, setting);
  }

  const source = envSources.get(parent);
  const label = source === undefined ? parent : `${parent} (from ${source})`;
  // ajv's enum message does not list the choices, which is what the operator needs.
  const problem =
    error.keyword === 'enum'
      ? `must be one of ${(error.params['allowedValues'] as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`
      : (error.message ?? 'is invalid');
  if (parent === '') return new ConfigError(`invalid configuration: ${problem}`);
  return new ConfigError(`invalid setting ${label}: ${problem}`, parent);
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
