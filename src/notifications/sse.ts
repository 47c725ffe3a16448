// The bytes of the notification stream (Server-Sent Events, WIRE part 2 "Notifications").
// Every event is made once and the same bytes go to every stream that may see it.

/** First bytes of every stream: the reconnect delay, and a comment so the headers leave at once. */
export const STREAM_OPENING = Buffer.from('retry: 3000\n: notification stream\n\n');

/** The answer to a stream over a cap: EventSource gives up for good on any non-200, so 200, a long retry and the end. */
export function refusedStream(reason: string): Buffer {
  return Buffer.from(`retry: 30000\n: ${oneLine(reason)}\n\n`);
}

export const KEEPALIVE = Buffer.from(': keepalive\n\n');

/** One `notification` event; `json` is the notification's wire form as JSON (one line: JSON escapes CR and LF). */
export function notificationEvent(id: number, json: string): Buffer {
  return Buffer.from(`id: ${id}\nevent: notification\ndata: ${json}\n\n`);
}

export function replayCompleteEvent(replayed: number): Buffer {
  return Buffer.from(`event: replay-complete\ndata: {"replayed":${replayed}}\n\n`);
}

/** A comment must stay on its line. */
function oneLine(text: string): string {
  return text.replace(/[\r\n]+/g, ' ');
}
