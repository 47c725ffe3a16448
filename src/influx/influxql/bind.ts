/**
 * InfluxQL bound parameters (`$name`, InfluxDB's `params`): the token a parameter value stands
 * for, as InfluxDB's BindValue makes it while the parser scans. Values that cannot be bound
 * become a BOUNDPARAM token holding InfluxDB's error text, which the parser reports as
 * `missing parameter: <text>` where the token is used, as InfluxDB does. Pure TypeScript.
 */

import { formatDuration, INT64_MAX, INT64_MIN } from './duration.js';
import type { TokenKind } from './tokens.js';

/** A number as Go's FormatFloat(v, 'f', -1, 64) writes it: shortest digits, no exponent. */
function formatFloat(v: number): string {
  const text = String(v);
  const e = text.indexOf('e');
  if (e < 0) return text;
  const negative = text.startsWith('-');
  const mantissa = text.slice(negative ? 1 : 0, e);
  const exponent = Number(text.slice(e + 1));
  const point = mantissa.indexOf('.');
  const digits = mantissa.replace('.', '');
  const intDigits = (point < 0 ? mantissa.length : point) + exponent;
  const body =
    intDigits <= 0 ? `0.${'0'.repeat(-intDigits)}${digits}` : intDigits >= digits.length ? digits + '0'.repeat(intDigits - digits.length) : `${digits.slice(0, intDigits)}.${digits.slice(intDigits)}`;
  return negative ? `-${body}` : body;
}

/** The token a bound parameter value stands for (InfluxDB's BindValue); errors are BOUNDPARAM tokens holding the text. */
export function bindValue(value: unknown): [TokenKind, string] {
  const failed = (text: string): [TokenKind, string] => ['BOUNDPARAM', text];
  const integer = (n: number | bigint): [TokenKind, string] | null => {
    const big = BigInt(n);
    return big > INT64_MAX || big < INT64_MIN ? null : ['INTEGER', big.toString()];
  };
  switch (typeof value) {
    case 'string':
      return ['STRING', value];
    case 'boolean':
      return [value ? 'TRUE' : 'FALSE', ''];
    case 'bigint':
      return integer(value) ?? failed(`strconv.ParseInt: parsing "${value}": value out of range`);
    case 'number':
      if (!Number.isFinite(value)) return failed('unable to bind parameter with type float64');
      if (Number.isInteger(value)) return integer(value) ?? failed(`strconv.ParseInt: parsing "${BigInt(value)}": value out of range`);
      return ['NUMBER', formatFloat(value)];
    case 'object':
      if (value === null) return failed('unable to bind parameter with type <nil>');
      if (Array.isArray(value)) return failed('unable to bind parameter with type []interface {}');
      break;
    default:
      return failed('unable to bind parameter with type <nil>');
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length !== 1) return failed('bound object parameter value must have exactly one entry');
  const [type, inner] = entries[0]!;
  switch (type) {
    case 'ident':
    case 'identifier':
      return typeof inner === 'string' ? ['IDENT', inner] : failed('identifier must be a string value');
    case 'regex':
      return typeof inner === 'string' ? ['REGEX', inner] : failed('regex literal must be a string value');
    case 'string':
      return typeof inner === 'string' ? ['STRING', inner] : failed('string literal must be a string value');
    case 'float':
    case 'number':
      return typeof inner === 'number' && Number.isFinite(inner) ? ['NUMBER', formatFloat(inner)] : failed('number literal must be a float value');
    case 'int':
    case 'integer':
      return typeof inner === 'number' && Number.isInteger(inner) ? (integer(inner) ?? failed('integer literal must be an integer value')) : failed('integer literal must be an integer value');
    case 'duration':
      if (typeof inner === 'string') return ['DURATIONVAL', inner];
      if (typeof inner === 'number' && Number.isInteger(inner)) return ['DURATIONVAL', formatDuration(BigInt(inner))];
      return failed('duration literal must be a string or integer value');
    default:
      return failed(`unknown bind object type: ${type}`);
  }
}
