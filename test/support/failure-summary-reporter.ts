// A second `node --test` reporter that prints, after everything else, the
// tests that failed and why. The TAP stream names a failure where it happens,
// a thousand lines up; a CI log that keeps only its tail would otherwise end in
// "# fail 1" without saying which test. Prints nothing when all passed.

interface FailEvent {
  type: 'test:fail';
  data: { name: string; file?: string; nesting: number; details: { error?: unknown } };
}

function firstLines(error: unknown, count: number): string {
  const text = error instanceof Error ? (error.cause instanceof Error ? `${error.message}\n${error.cause.stack ?? error.cause.message}` : (error.stack ?? error.message)) : String(error);
  return text.split('\n').slice(0, count).map((line) => `    ${line}`).join('\n');
}

export default async function* failureSummary(source: AsyncIterable<{ type: string; data: unknown }>): AsyncGenerator<string> {
  const failures: FailEvent['data'][] = [];
  for await (const event of source) {
    if (event.type !== 'test:fail') continue;
    const data = (event as FailEvent).data;
    // A suite fails when a test in it fails; list the tests, and a suite only when nothing in it was listed.
    const error = data.details.error as { failureType?: string } | undefined;
    if (error?.failureType === 'subtestsFailed' || error?.failureType === 'cancelledByParent') continue;
    failures.push(data);
  }
  if (failures.length === 0) return;
  yield `\n# ${failures.length} failed:\n`;
  for (const failure of failures) {
    yield `# - ${failure.file ?? '(unknown file)'}: ${failure.name}\n${firstLines(failure.details.error, 12)}\n`;
  }
}
