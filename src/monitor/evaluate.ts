// One alarm rule at one tick: from its state, the tag's values and the tick's time to its next
// state and the events to open or resolve. Pure (no I/O, no clock), so every path of the
// state machine is tested directly (test/monitor/evaluate.test.ts).
//
//   normal ──condition──▶ pending_on ──held on_delay_ms──▶ active ──normal──▶ pending_off ──held off_delay_ms──▶ normal
//      ╰──── on_delay_ms 0: straight to active ────╯            ╰── off_delay_ms 0: straight to normal ──╯
//
// The condition comes from the tag's last value (high and low with a deadband once active; stale
// from the last timestamp). With on_delay_ms 0, a value written since the previous tick beyond a
// limit opens an event even when the last value is back inside: the spike is not missed.

import type { RuleColumns } from '../meta/tables/alarms.js';

export type AlarmKind = 'high' | 'low' | 'stale';
export type Phase = 'normal' | 'pending_on' | 'active' | 'pending_off';

/** What a rule compares against: its limits, deadband, delays and staleness, as stored (meta/tables/alarms.ts). */
export type RuleLimits = Pick<RuleColumns, 'limHi' | 'limLo' | 'deadband' | 'on_delay_ms' | 'off_delay_ms' | 'stale_after_ms'>;

export interface RuleState {
  phase: Phase;
  /** The condition pending, active or pending off; null when normal. */
  kind: AlarmKind | null;
  /** When the pending phase began (tick time). */
  since: number | null;
  /** The open event, while active or pending off (set by the caller, see the end of evaluate). */
  eventId: string | null;
}

export const NORMAL: RuleState = Object.freeze({ phase: 'normal', kind: null, since: null, eventId: null });

/** What the storage worker reports for a tag at a tick (NaN where there is nothing). */
export interface TagValues {
  lastTs: number;
  last: number;
  /** Extremes of the values written since the previous tick (NaN when none were). */
  max: number;
  min: number;
}

export type Transition =
  | { type: 'open'; kind: AlarmKind; value: number | null; limit: number | null }
  | { type: 'resolve'; kind: AlarmKind; value: number | null; limit: number | null };

export interface Evaluation {
  state: RuleState;
  transitions: Transition[];
  /** The tag's state for the snapshot. */
  shown: 'normal' | AlarmKind;
}

/** The condition the last value (and timestamp) shows; `activeKind` applies the deadband. */
export function conditionOf(rule: RuleLimits, values: TagValues, now: number, activeKind: AlarmKind | null): AlarmKind | null {
  if (rule.stale_after_ms !== null && (!(values.lastTs === values.lastTs) || values.lastTs < now - rule.stale_after_ms)) return 'stale';
  const v = values.last;
  if (v !== v) return null;
  if (rule.limHi !== null && (activeKind === 'high' ? v > rule.limHi - rule.deadband : v > rule.limHi)) return 'high';
  if (rule.limLo !== null && (activeKind === 'low' ? v < rule.limLo + rule.deadband : v < rule.limLo)) return 'low';
  return null;
}

/** A limit crossed by a value written since the previous tick (the last value may be back). */
function spikeOf(rule: RuleLimits, values: TagValues): { kind: AlarmKind; value: number } | null {
  if (rule.limHi !== null && values.max > rule.limHi) return { kind: 'high', value: values.max };
  if (rule.limLo !== null && values.min < rule.limLo) return { kind: 'low', value: values.min };
  return null;
}

function limitOf(rule: RuleLimits, kind: AlarmKind): number | null {
  return kind === 'high' ? rule.limHi : kind === 'low' ? rule.limLo : rule.stale_after_ms;
}

function valueOf(values: TagValues): number | null {
  return values.last === values.last ? values.last : null;
}

/** The answer of the common case, a normal rule that stays normal: nothing to allocate. */
const NO_TRANSITIONS: readonly Transition[] = Object.freeze([]);

function open(rule: RuleLimits, transitions: Transition[], kind: AlarmKind, value: number | null): RuleState {
  transitions.push({ type: 'open', kind, value, limit: limitOf(rule, kind) });
  return { phase: 'active', kind, since: null, eventId: null };
}

function resolve(rule: RuleLimits, transitions: Transition[], values: TagValues, kind: AlarmKind): RuleState {
  transitions.push({ type: 'resolve', kind, value: valueOf(values), limit: limitOf(rule, kind) });
  return NORMAL;
}

/** From normal: a condition starts its on-delay, or opens at once. */
function begin(rule: RuleLimits, transitions: Transition[], values: TagValues, now: number, kind: AlarmKind): RuleState {
  return rule.on_delay_ms <= 0 ? open(rule, transitions, kind, valueOf(values)) : { phase: 'pending_on', kind, since: now, eventId: null };
}

export function evaluate(rule: RuleLimits, state: RuleState, values: TagValues, now: number): Evaluation {
  const activeKind = state.phase === 'active' || state.phase === 'pending_off' ? state.kind : null;
  const condition = conditionOf(rule, values, now, activeKind);
  // Nearly every rule at nearly every tick (a tick evaluates 10,000 of them on the main thread).
  if (state.phase === 'normal' && !condition && (rule.on_delay_ms > 0 || !spikeOf(rule, values))) {
    return { state, transitions: NO_TRANSITIONS as Transition[], shown: 'normal' };
  }
  const transitions: Transition[] = [];
  let next: RuleState = state;

  switch (state.phase) {
    case 'normal': {
      if (condition) next = begin(rule, transitions, values, now, condition);
      else if (rule.on_delay_ms <= 0) {
        const spike = spikeOf(rule, values);
        if (spike) {
          open(rule, transitions, spike.kind, spike.value);
          next = rule.off_delay_ms <= 0 ? resolve(rule, transitions, values, spike.kind) : { phase: 'pending_off', kind: spike.kind, since: now, eventId: null };
        }
      }
      break;
    }
    case 'pending_on': {
      if (condition === state.kind) {
        if (condition && now - state.since! >= rule.on_delay_ms) next = open(rule, transitions, condition, valueOf(values));
      } else if (condition) next = { phase: 'pending_on', kind: condition, since: now, eventId: null };
      else next = NORMAL;
      break;
    }
    case 'active': {
      if (condition === state.kind) break;
      if (rule.off_delay_ms > 0) {
        next = { phase: 'pending_off', kind: state.kind, since: now, eventId: state.eventId };
        break;
      }
      next = resolve(rule, transitions, values, state.kind!);
      if (condition) next = begin(rule, transitions, values, now, condition);
      break;
    }
    case 'pending_off': {
      const spike = spikeOf(rule, values);
      if (condition === state.kind || (spike && spike.kind === state.kind)) {
        next = { phase: 'active', kind: state.kind, since: null, eventId: state.eventId };
      } else if (now - state.since! >= rule.off_delay_ms) {
        next = resolve(rule, transitions, values, state.kind!);
        if (condition) next = begin(rule, transitions, values, now, condition);
      }
      break;
    }
  }
  // Event ids are the caller's: it applies the transitions in order (an open makes the current
  // event, a resolve closes it) and sets `eventId` of the state from what remains open.
  const shown = next.phase === 'active' || next.phase === 'pending_off' ? next.kind! : 'normal';
  return { state: next, transitions, shown };
}
