// How two answers of Prometheus' query API are compared in the differential test: the same
// status (and errorType for an error), the same resultType, the same series (label sets), and
// for each the same timestamps and values, floats to 1e-9 relative. Series order counts only
// where PromQL defines it (sort, sort_desc: the values' order).

export interface ApiAnswer {
  status: number;
  body: any;
}

const RELATIVE = 1e-9;

function parseValue(text: string): number {
  if (text === '+Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  return Number(text);
}

function close(a: number, b: number): boolean {
  if (Number.isNaN(a) || Number.isNaN(b)) return Number.isNaN(a) && Number.isNaN(b);
  if (a === b) return true;
  return Math.abs(a - b) <= RELATIVE * Math.max(Math.abs(a), Math.abs(b));
}

function key(metric: Record<string, string>): string {
  return JSON.stringify(Object.entries(metric).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

type Points = Array<[number, string]>;

function seriesOf(data: any): Map<string, Points> {
  const out = new Map<string, Points>();
  for (const s of data.result as Array<{ metric: Record<string, string>; value?: [number, string]; values?: Points }>) {
    out.set(key(s.metric), s.values ?? [s.value!]);
  }
  return out;
}

/** The differences between `ours` and the reference's answer `theirs` (empty when they agree). */
export function differences(ours: ApiAnswer, theirs: ApiAnswer, ordered = false): string[] {
  const problems: string[] = [];
  if (ours.status !== theirs.status) return [`status ${ours.status} (${JSON.stringify(ours.body).slice(0, 300)}) vs ${theirs.status} (${JSON.stringify(theirs.body).slice(0, 300)})`];
  if (theirs.body.status !== 'success') {
    if (ours.body.errorType !== theirs.body.errorType) problems.push(`errorType ${ours.body.errorType} vs ${theirs.body.errorType}`);
    return problems;
  }
  const a = ours.body.data;
  const b = theirs.body.data;
  if (a.resultType !== b.resultType) return [`resultType ${a.resultType} vs ${b.resultType}`];
  if (a.resultType === 'scalar' || a.resultType === 'string') {
    if (a.result[0] !== b.result[0]) problems.push(`time ${a.result[0]} vs ${b.result[0]}`);
    const same = a.resultType === 'string' ? a.result[1] === b.result[1] : close(parseValue(a.result[1]), parseValue(b.result[1]));
    if (!same) problems.push(`value ${a.result[1]} vs ${b.result[1]}`);
    return problems;
  }
  const mine = seriesOf(a);
  const ref = seriesOf(b);
  for (const k of ref.keys()) if (!mine.has(k)) problems.push(`missing series ${k}`);
  for (const k of mine.keys()) if (!ref.has(k)) problems.push(`extra series ${k}`);
  for (const [k, points] of ref) {
    const got = mine.get(k);
    if (!got) continue;
    if (got.length !== points.length) {
      problems.push(`${k}: ${got.length} points vs ${points.length}; first times ${got[0]?.[0]} vs ${points[0]?.[0]}, last ${got.at(-1)?.[0]} vs ${points.at(-1)?.[0]}`);
      continue;
    }
    for (let i = 0; i < points.length; i++) {
      if (got[i]![0] !== points[i]![0]) {
        problems.push(`${k}: point ${i} at ${got[i]![0]} vs ${points[i]![0]}`);
        break;
      }
      if (!close(parseValue(got[i]![1]), parseValue(points[i]![1]))) {
        problems.push(`${k}: at ${points[i]![0]} value ${got[i]![1]} vs ${points[i]![1]}`);
        break;
      }
    }
  }
  if (ordered && problems.length === 0) {
    const values = (d: any) => (d.result as Array<{ value: [number, string] }>).map((s) => s.value[1]);
    if (JSON.stringify(values(a)) !== JSON.stringify(values(b))) problems.push(`order ${values(a).join(' ')} vs ${values(b).join(' ')}`);
  }
  return problems;
}
