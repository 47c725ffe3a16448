// One Server-Sent Events block (the lines up to a blank line) read the way the HTML standard's
// event-stream parser reads it: comments skipped, one optional space after the colon, data lines
// joined with newlines. The tests' raw stream readers and bench/sse.ts share it.

export interface SseFields {
  /** The `event:` field, null when absent (a plain `message`). */
  event: string | null;
  id: string | null;
  /** Data lines joined with `\n`, null when the block has none. */
  data: string | null;
  retry: number | null;
}

export function parseSseBlock(lines: readonly string[]): SseFields {
  let event: string | null = null;
  let id: string | null = null;
  let retry: number | null = null;
  const data: string[] = [];
  for (const line of lines) {
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const name = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (name === 'event') event = value;
    else if (name === 'data') data.push(value);
    else if (name === 'id') id = value;
    else if (name === 'retry') retry = Number(value);
  }
  return { event, id, data: data.length > 0 ? data.join('\n') : null, retry };
}
