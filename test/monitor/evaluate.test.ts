import assert from 'node:assert/strict';
import { test } from 'node:test';
import { evaluate, NORMAL, type RuleLimits, type RuleState, type TagValues } from '../../src/monitor/evaluate.js';

const rule = (over: Partial<RuleLimits> = {}): RuleLimits => ({ limHi: 100, limLo: null, deadband: 5, on_delay_ms: 0, off_delay_ms: 0, stale_after_ms: null, ...over });
const at = (last: number, extra: Partial<TagValues> = {}): TagValues => ({ lastTs: 1_000, last, max: NaN, min: NaN, ...extra });

/** Runs ticks in order; returns the transitions of each. */
function run(r: RuleLimits, ticks: Array<[number, TagValues]>, start: RuleState = NORMAL) {
  let state = start;
  return ticks.map(([now, values]) => {
    const result = evaluate(r, state, values, now);
    state = result.state;
    return { types: result.transitions.map((t) => `${t.type}:${t.kind}`), phase: state.phase, shown: result.shown };
  });
}

test('high opens at once without an on-delay and resolves only past the deadband', () => {
  const steps = run(rule(), [
    [1000, at(101)],
    [2000, at(97)], // inside the deadband (100 - 5): still high
    [3000, at(95)], // at limHi - deadband: back to normal
  ]);
  assert.deepEqual(steps.map((s) => s.types), [['open:high'], [], ['resolve:high']]);
  assert.deepEqual(steps.map((s) => s.shown), ['high', 'high', 'normal']);
});

test('low mirrors high with its deadband', () => {
  const steps = run(rule({ limHi: null, limLo: 10, deadband: 2 }), [[0, at(9)], [1, at(11.9)], [2, at(12)]]);
  assert.deepEqual(steps.map((s) => s.types), [['open:low'], [], ['resolve:low']]);
});

test('on-delay: a condition shorter than the delay opens nothing; a long enough one opens once', () => {
  const r = rule({ on_delay_ms: 3000 });
  assert.deepEqual(run(r, [[0, at(150)], [1000, at(150)], [2000, at(50)], [3000, at(150)]]).map((s) => s.types), [[], [], [], []]);
  const steps = run(r, [[0, at(150)], [1000, at(150)], [3000, at(150)], [4000, at(150)]]);
  assert.deepEqual(steps.map((s) => s.types), [[], [], ['open:high'], []]);
  assert.deepEqual(steps.map((s) => s.phase), ['pending_on', 'pending_on', 'active', 'active']);
});

test('off-delay: normal must hold that long; a return above the limit cancels it', () => {
  const r = rule({ off_delay_ms: 2000 });
  const steps = run(r, [[0, at(150)], [1000, at(50)], [2000, at(150)], [3000, at(50)], [4000, at(50)], [5000, at(50)]]);
  assert.deepEqual(steps.map((s) => s.types), [['open:high'], [], [], [], [], ['resolve:high']]);
  assert.deepEqual(steps.map((s) => s.phase), ['active', 'pending_off', 'active', 'pending_off', 'pending_off', 'normal']);
});

test('a spike between two ticks is caught: opened and, without an off-delay, resolved at the same tick', () => {
  const steps = run(rule(), [[1000, at(50, { max: 180, min: 50 })]]);
  assert.deepEqual(steps[0].types, ['open:high', 'resolve:high']);
  const delayed = run(rule({ off_delay_ms: 5000 }), [[1000, at(50, { max: 180, min: 50 })], [7000, at(50)]]);
  assert.deepEqual(delayed.map((s) => s.types), [['open:high'], ['resolve:high']]);
  // With an on-delay a spike is by definition too short to count.
  assert.deepEqual(run(rule({ on_delay_ms: 1 }), [[1000, at(50, { max: 180, min: 50 })]])[0].types, []);
});

test('stale: no value, or a last value older than stale_after_ms at the tick', () => {
  const r = rule({ limHi: null, stale_after_ms: 5000 });
  const steps = run(r, [[1000, { lastTs: NaN, last: NaN, max: NaN, min: NaN }], [2000, { lastTs: 1500, last: 1, max: 1, min: 1 }], [7000, { lastTs: 1500, last: 1, max: NaN, min: NaN }]]);
  assert.deepEqual(steps.map((s) => s.types), [['open:stale'], ['resolve:stale'], ['open:stale']]);
  // The limit of a stale event is stale_after_ms.
  const opened = evaluate(r, NORMAL, { lastTs: NaN, last: NaN, max: NaN, min: NaN }, 1000).transitions[0];
  assert.equal(opened.type === 'open' && opened.limit, 5000);
});

test('a jump from high to low resolves the high event and opens a low one', () => {
  const steps = run(rule({ limLo: 0 }), [[0, at(150)], [1000, at(-10)]]);
  assert.deepEqual(steps.map((s) => s.types), [['open:high'], ['resolve:high', 'open:low']]);
});

test('a pending on-delay resumes from its stored start (a restart keeps `since`)', () => {
  const r = rule({ on_delay_ms: 10_000 });
  const pending: RuleState = { phase: 'pending_on', kind: 'high', since: 0, eventId: null };
  assert.deepEqual(evaluate(r, pending, at(150), 9_999).transitions, []);
  assert.equal(evaluate(r, pending, at(150), 10_000).transitions[0]?.type, 'open');
});
