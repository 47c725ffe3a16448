// The syntax tree of the InfluxQL subset (WIRE.md part 3 "InfluxDB 1.x compatibility at the
// root"): what parser.ts builds and executor.ts runs. Plain data, no behaviour. Pure.

/** Where a token starts in the query text (0-based offset; line and char are 1-based, as InfluxDB reports them). */
export interface Position {
  offset: number;
  line: number;
  char: number;
}

export type Statement =
  | SelectStatement
  | ShowDatabases
  | ShowMeasurements
  | ShowTagKeys
  | ShowTagValues
  | ShowFieldKeys
  | ShowSeries
  | ShowRetentionPolicies
  | Unsupported;

export interface SelectStatement {
  kind: 'select';
  fields: Field[];
  sources: Source[];
  /** WHERE, or null. */
  condition: Expr | null;
  /** GROUP BY: at most one time dimension, any number of tag dimensions. */
  dimensions: Dimension[];
  /** fill(...); null when not given (InfluxDB's default is fill(null)). */
  fill: Fill | null;
  /** ORDER BY time DESC. */
  descending: boolean;
  /** LIMIT / OFFSET / SLIMIT / SOFFSET; 0 when not given. */
  limit: number;
  offset: number;
  slimit: number;
  soffset: number;
  /** tz('…'), or null. */
  timezone: string | null;
  /** SELECT ... INTO ...: refused by the executor; the target as written, or null. */
  into: string | null;
}

export interface Field {
  expr: Expr;
  /** AS alias, or null. */
  alias: string | null;
}

export type Expr =
  | { type: 'call'; name: string; args: Expr[]; pos: Position }
  /**
   * A field or tag reference, `::field` / `::tag` kept when written. A cast to a field type
   * (`::float`, `::integer`, `::unsigned`, `::string`, `::boolean`) is a field: dataType 'field'
   * and that type in `valueType` (absent otherwise).
   */
  | { type: 'ref'; name: string; dataType: 'field' | 'tag' | null; valueType?: 'float' | 'integer' | 'unsigned' | 'string' | 'boolean'; pos: Position }
  /** `*`, or `*::field` / `*::tag`. */
  | { type: 'wildcard'; only: 'field' | 'tag' | null; pos: Position }
  | { type: 'number'; value: number; integer: boolean; pos: Position }
  | { type: 'string'; value: string; pos: Position }
  | { type: 'boolean'; value: boolean; pos: Position }
  | { type: 'regex'; source: string; pos: Position }
  /** A duration literal in milliseconds (fractional below 1 ms: `1u`, `500ns`). */
  | { type: 'duration'; ms: number; pos: Position }
  /** now(), as a call would be but kept apart for the time conditions. */
  | { type: 'binary'; op: BinaryOp; left: Expr; right: Expr; pos: Position }
  | { type: 'paren'; expr: Expr; pos: Position };

export type BinaryOp = '+' | '-' | '*' | '/' | '%' | '&' | '|' | '^' | '=' | '!=' | '<>' | '<' | '<=' | '>' | '>=' | '=~' | '!~' | 'AND' | 'OR';

export interface Source {
  /** `"db"."rp"."m"`: each part as written, null when left out. */
  database: string | null;
  retentionPolicy: string | null;
  /** The measurement name, or null when `regex` is given. */
  name: string | null;
  /** FROM /re/: the regular expression source. */
  regex: string | null;
  pos: Position;
}

export type Dimension =
  | { type: 'time'; intervalMs: number; offsetMs: number; pos: Position }
  | { type: 'tag'; name: string; pos: Position }
  | { type: 'regex'; source: string; pos: Position }
  | { type: 'wildcard'; pos: Position };

export type Fill = { kind: 'null' | 'none' | 'previous' | 'linear' } | { kind: 'number'; value: number };

export interface ShowDatabases {
  kind: 'show-databases';
}

export interface ShowMeasurements {
  kind: 'show-measurements';
  /** ON db, or null. */
  database: string | null;
  /** WITH MEASUREMENT = 'm' | =~ /re/, or null. */
  measurement: { op: '=' | '=~'; value: string } | null;
  condition: Expr | null;
  limit: number;
  offset: number;
}

export interface ShowTagKeys {
  kind: 'show-tag-keys';
  database: string | null;
  sources: Source[];
  condition: Expr | null;
  limit: number;
  offset: number;
}

export interface ShowTagValues {
  kind: 'show-tag-values';
  database: string | null;
  sources: Source[];
  /** WITH KEY = "k" | != "k" | =~ /re/ | !~ /re/ | IN ("a", "b"). */
  key: { op: '=' | '!=' | '=~' | '!~'; value: string } | { op: 'in'; values: string[] };
  condition: Expr | null;
  limit: number;
  offset: number;
}

export interface ShowFieldKeys {
  kind: 'show-field-keys';
  database: string | null;
  sources: Source[];
  limit: number;
  offset: number;
}

export interface ShowSeries {
  kind: 'show-series';
  database: string | null;
  sources: Source[];
  condition: Expr | null;
  limit: number;
  offset: number;
}

export interface ShowRetentionPolicies {
  kind: 'show-retention-policies';
  database: string | null;
}

/** A statement InfluxQL has and this subset does not run (INSERT via the CLI is a /write; CREATE, DROP, DELETE, GRANT, ALTER, SHOW USERS, ...): the executor answers a statement error naming it. */
export interface Unsupported {
  kind: 'unsupported';
  /** What it is, upper case: "CREATE DATABASE", "DROP MEASUREMENT", "SHOW USERS", "DELETE", "SUBQUERY", ... */
  what: string;
  /**
   * Set when the statement is one the subset has but InfluxDB refuses it once parsed, when it
   * prepares it (`GROUP BY time(x)`: "time dimension must have duration argument"): InfluxDB's
   * own message, to answer as this statement's error instead of naming `what`.
   */
  error?: string;
}
