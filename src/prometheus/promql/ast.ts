// The PromQL syntax tree the engine evaluates (WIRE.md part 3 "Prometheus compatibility"): what
// parse.ts makes of the lezer-promql tree, already type-checked as Prometheus 2.x's parser checks
// it. Times are milliseconds; `at` is an absolute time in ms, or `start()`/`end()` of the query.

export type ValueType = 'scalar' | 'vector' | 'matrix' | 'string';

export type MatchType = '=' | '!=' | '=~' | '!~';

export interface LabelMatcher {
  name: string;
  type: MatchType;
  value: string;
}

/** `@ <time>`, `@ start()`, `@ end()`; null when absent. */
export type AtModifier = number | 'start' | 'end' | null;

export interface NumberLiteral {
  kind: 'number';
  value: number;
}

export interface StringLiteral {
  kind: 'string';
  value: string;
}

export interface VectorSelector {
  kind: 'vectorSelector';
  /** The metric name written before the braces, if any (also present as a `__name__` matcher). */
  name: string | null;
  /** Every matcher, the name's `__name__ = name` included. At least one does not match "". */
  matchers: LabelMatcher[];
  offsetMs: number;
  at: AtModifier;
}

export interface MatrixSelector {
  kind: 'matrixSelector';
  vector: VectorSelector;
  rangeMs: number;
}

export interface SubqueryExpr {
  kind: 'subquery';
  expr: Expr;
  rangeMs: number;
  /** 0: the query's default evaluation interval (the engine uses 1 minute, as Prometheus' default). */
  stepMs: number;
  offsetMs: number;
  at: AtModifier;
}

export interface Call {
  kind: 'call';
  func: FunctionDef;
  args: Expr[];
}

export type AggregateOp = 'sum' | 'avg' | 'min' | 'max' | 'count' | 'stddev' | 'stdvar' | 'topk' | 'bottomk' | 'quantile' | 'count_values' | 'group';

export interface AggregateExpr {
  kind: 'aggregate';
  op: AggregateOp;
  expr: Expr;
  /** topk/bottomk/quantile: a scalar; count_values: a string; else null. */
  param: Expr | null;
  grouping: string[];
  without: boolean;
}

export type ArithmeticOp = '+' | '-' | '*' | '/' | '%' | '^';
export type ComparisonOp = '==' | '!=' | '>' | '<' | '>=' | '<=';
export type SetOp = 'and' | 'or' | 'unless';
export type BinaryOp = ArithmeticOp | ComparisonOp | SetOp;

export type Cardinality = 'one-to-one' | 'many-to-one' | 'one-to-many' | 'many-to-many';

export interface VectorMatching {
  card: Cardinality;
  /** `on(...)` when true, `ignoring(...)` (or nothing) when false. */
  on: boolean;
  labels: string[];
  /** group_left/group_right's extra labels. */
  include: string[];
}

export interface BinaryExpr {
  kind: 'binary';
  op: BinaryOp;
  lhs: Expr;
  rhs: Expr;
  /** Comparison with `bool`. */
  returnBool: boolean;
  /** Set when both sides are vectors (set operators: many-to-many). */
  matching: VectorMatching | null;
}

export interface UnaryExpr {
  kind: 'unary';
  op: '+' | '-';
  expr: Expr;
}

export interface ParenExpr {
  kind: 'paren';
  expr: Expr;
}

export type Expr = NumberLiteral | StringLiteral | VectorSelector | MatrixSelector | SubqueryExpr | Call | AggregateExpr | BinaryExpr | UnaryExpr | ParenExpr;

export interface FunctionDef {
  name: string;
  argTypes: ValueType[];
  /** 0: exactly argTypes; n > 0: the last n may be left out; -1: the last repeats any number of times (label_join). */
  variadic: number;
  returnType: ValueType;
}

const f = (name: string, argTypes: ValueType[], returnType: ValueType, variadic = 0): FunctionDef => ({ name, argTypes, variadic, returnType });

/** The functions of WIRE's list (Prometheus 2.42 signatures). Others are a parse error naming them. */
export const FUNCTIONS: ReadonlyMap<string, FunctionDef> = new Map(
  [
    f('abs', ['vector'], 'vector'),
    f('absent', ['vector'], 'vector'),
    f('absent_over_time', ['matrix'], 'vector'),
    f('avg_over_time', ['matrix'], 'vector'),
    f('ceil', ['vector'], 'vector'),
    f('changes', ['matrix'], 'vector'),
    f('clamp', ['vector', 'scalar', 'scalar'], 'vector'),
    f('clamp_max', ['vector', 'scalar'], 'vector'),
    f('clamp_min', ['vector', 'scalar'], 'vector'),
    f('count_over_time', ['matrix'], 'vector'),
    f('delta', ['matrix'], 'vector'),
    f('deriv', ['matrix'], 'vector'),
    f('exp', ['vector'], 'vector'),
    f('floor', ['vector'], 'vector'),
    f('histogram_quantile', ['scalar', 'vector'], 'vector'),
    f('idelta', ['matrix'], 'vector'),
    f('increase', ['matrix'], 'vector'),
    f('irate', ['matrix'], 'vector'),
    f('label_join', ['vector', 'string', 'string', 'string'], 'vector', -1),
    f('label_replace', ['vector', 'string', 'string', 'string', 'string'], 'vector'),
    f('last_over_time', ['matrix'], 'vector'),
    f('ln', ['vector'], 'vector'),
    f('log10', ['vector'], 'vector'),
    f('log2', ['vector'], 'vector'),
    f('max_over_time', ['matrix'], 'vector'),
    f('min_over_time', ['matrix'], 'vector'),
    f('present_over_time', ['matrix'], 'vector'),
    f('quantile_over_time', ['scalar', 'matrix'], 'vector'),
    f('rate', ['matrix'], 'vector'),
    f('resets', ['matrix'], 'vector'),
    f('round', ['vector', 'scalar'], 'vector', 1),
    f('scalar', ['vector'], 'scalar'),
    f('sort', ['vector'], 'vector'),
    f('sort_desc', ['vector'], 'vector'),
    f('sqrt', ['vector'], 'vector'),
    f('stddev_over_time', ['matrix'], 'vector'),
    f('stdvar_over_time', ['matrix'], 'vector'),
    f('sum_over_time', ['matrix'], 'vector'),
    f('time', [], 'scalar'),
    f('timestamp', ['vector'], 'vector'),
    f('vector', ['scalar'], 'vector'),
  ].map((def) => [def.name, def]),
);

/** The type an expression evaluates to. */
export function typeOf(expr: Expr): ValueType {
  switch (expr.kind) {
    case 'number':
      return 'scalar';
    case 'string':
      return 'string';
    case 'vectorSelector':
      return 'vector';
    case 'matrixSelector':
    case 'subquery':
      return 'matrix';
    case 'call':
      return expr.func.returnType;
    case 'aggregate':
      return 'vector';
    case 'binary':
      return typeOf(expr.lhs) === 'scalar' && typeOf(expr.rhs) === 'scalar' ? 'scalar' : 'vector';
    case 'unary':
    case 'paren':
      return typeOf(expr.expr);
  }
}
