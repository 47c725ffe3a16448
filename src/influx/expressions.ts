// The field expressions of a SELECT: which aggregate calls they hold (a transform over an
// aggregate counts as its inner call), the column names InfluxDB gives them, and their values
// per row. Pure.

import type { Expr } from './influxql/ast.js';
import { isAggregate, isTransform } from './functions.js';
import type { Cell } from './results.js';
import { StatementError } from './errors.js';

export interface CallInfo {
  fn: string;
  field: string;
  arg: number;
  /** An outer transform applied to this call's column (derivative(mean(x), 1s)). */
  transform: { name: string; unitMs: number } | null;
}

/** The aggregate calls in a field expression (a transform over an aggregate counts as its inner call). */
export function callsIn(expr: Expr): CallInfo[] {
  const found: CallInfo[] = [];
  const visit = (e: Expr): void => {
    if (e.type === 'call') {
      const name = e.name.toLowerCase();
      if (isTransform(name)) {
        const inner = e.args[0];
        const unitMs = e.args[1]?.type === 'duration' ? e.args[1].ms : 1000;
        if (inner?.type === 'call' && isAggregate(inner.name.toLowerCase())) {
          const info = callInfo(inner);
          info.transform = { name, unitMs };
          (e as Expr & { info?: CallInfo }).info = info;
          found.push(info);
          return;
        }
        throw new StatementError(`${name}() over a raw field is not supported here: use it over an aggregate with GROUP BY time, e.g. ${name}(mean("value"), 1s)`);
      }
      if (!isAggregate(name)) throw new StatementError(`function ${e.name}() is not supported here (supported: mean median min max sum count first last spread stddev percentile derivative non_negative_derivative difference)`);
      const info = callInfo(e);
      (e as Expr & { info?: CallInfo }).info = info;
      found.push(info);
      return;
    }
    if (e.type === 'binary') {
      visit(e.left);
      visit(e.right);
    } else if (e.type === 'paren') visit(e.expr);
  };
  visit(expr);
  return found;
}

function callInfo(e: Extract<Expr, { type: 'call' }>): CallInfo {
  const fn = e.name.toLowerCase();
  const target = e.args[0];
  if (!target || target.type !== 'ref') throw new StatementError(`expected field argument in ${fn}()`);
  let arg = 0;
  if (fn === 'percentile') {
    const p = e.args[1];
    if (!p || p.type !== 'number') throw new StatementError('expected float argument in percentile()');
    arg = p.value;
  } else if (e.args.length > 1) throw new StatementError(`invalid number of arguments for ${fn}, expected 1, got ${e.args.length}`);
  return { fn, field: target.name, arg, transform: null };
}

export function refsIn(expr: Expr): Array<Extract<Expr, { type: 'ref' }>> {
  const out: Array<Extract<Expr, { type: 'ref' }>> = [];
  const visit = (e: Expr): void => {
    if (e.type === 'ref') out.push(e);
    else if (e.type === 'binary') {
      visit(e.left);
      visit(e.right);
    } else if (e.type === 'paren') visit(e.expr);
    else if (e.type === 'call') e.args.forEach(visit);
  };
  visit(expr);
  return out;
}

export function columnName(expr: Expr): string {
  if (expr.type === 'call') {
    const name = expr.name.toLowerCase();
    return name;
  }
  if (expr.type === 'paren') return columnName(expr.expr);
  if (expr.type === 'binary') {
    const left = columnName(expr.left);
    const right = columnName(expr.right);
    if (expr.left.type === 'number') return right;
    if (expr.right.type === 'number') return left;
    return `${left}_${right}`;
  }
  if (expr.type === 'ref') return expr.name;
  return 'value';
}

export function uniqueNames(names: string[]): string[] {
  const seen = new Map<string, number>();
  return names.map((n) => {
    const count = seen.get(n) ?? 0;
    seen.set(n, count + 1);
    return count === 0 ? n : `${n}_${count}`;
  });
}

export function evalAggregateExpr(expr: Expr, valueOf: (call: CallInfo) => number | null, calls: CallInfo[]): Cell {
  return evaluate(expr, 'only numbers and aggregate functions may be combined in an aggregate SELECT', (e) =>
    e.type === 'call' ? valueOf((e as Expr & { info?: CallInfo }).info ?? calls[0]!) : undefined,
  );
}

export function evalMath(expr: Expr, fields: Map<string, number>): Cell {
  return evaluate(expr, 'only fields and numbers may be combined in a raw SELECT', (e) => (e.type === 'ref' ? (fields.get(e.name) ?? null) : undefined));
}

/** Arithmetic over numbers and the leaves `leaf` knows (undefined: a leaf it does not take, refused with `refusal`). */
function evaluate(expr: Expr, refusal: string, leaf: (e: Expr) => number | null | undefined): number | null {
  const visit = (e: Expr): number | null => {
    switch (e.type) {
      case 'number':
        return e.value;
      case 'paren':
        return visit(e.expr);
      case 'binary': {
        const l = visit(e.left);
        const r = visit(e.right);
        return l === null || r === null ? null : arithmetic(e.op, l, r);
      }
      default: {
        const value = leaf(e);
        if (value === undefined) throw new StatementError(refusal);
        return value;
      }
    }
  };
  return visit(expr);
}

function arithmetic(op: string, l: number, r: number): number | null {
  switch (op) {
    case '+':
      return l + r;
    case '-':
      return l - r;
    case '*':
      return l * r;
    case '/':
      return r === 0 ? 0 : l / r; // InfluxDB 1.x answers 0 for a division by zero
    case '%':
      return l % r;
    default:
      throw new StatementError(`operator ${op} is not supported between numbers here`);
  }
}

/** Transforms over aggregate columns (derivative, non_negative_derivative, difference): computed between consecutive non-null rows. */
