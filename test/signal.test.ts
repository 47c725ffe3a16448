// The typed event source the subsystems tell each other things through.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Signal } from '../src/signal.js';

test('listeners run in order; one that throws does not keep the others from running, and its error reaches the emitter', () => {
  const signal = new Signal<[n: number]>();
  const heard: string[] = [];
  assert.equal(signal.observed, false);
  signal.subscribe((n) => heard.push(`a${n}`));
  signal.subscribe(() => {
    throw new Error('b failed');
  });
  const unsubscribe = signal.subscribe((n) => heard.push(`c${n}`));
  assert.equal(signal.observed, true);
  assert.throws(() => signal.emit(1), /b failed/);
  assert.deepEqual(heard, ['a1', 'c1']);
  unsubscribe();
  assert.throws(() => signal.emit(2), /b failed/);
  assert.deepEqual(heard, ['a1', 'c1', 'a2']);
});

test('a listener that unsubscribes itself while running does not disturb the emit under way', () => {
  const signal = new Signal<[]>();
  const heard: string[] = [];
  const off = signal.subscribe(() => {
    heard.push('once');
    off();
  });
  signal.subscribe(() => heard.push('always'));
  signal.emit();
  signal.emit();
  assert.deepEqual(heard, ['once', 'always', 'always']);
});
