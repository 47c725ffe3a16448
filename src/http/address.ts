// Client addresses as uWS gives them (eight full IPv6 groups, IPv4 clients IPv4-mapped:
// `0000:0000:0000:0000:0000:ffff:7f00:0001`) and as people read them (`127.0.0.1`, `::1`).
// One parser for the request logs and the per-address login limits.

/** The eight 16-bit groups of an IPv6 address in any spelling (`::` expanded), or null. */
export function hextets(address: string): number[] | null {
  if (!address.includes(':')) return null;
  const [head, tail, extra] = address.split('::');
  if (extra !== undefined) return null;
  const parse = (text: string | undefined) => (text ? text.split(':').map((g) => (/^[0-9a-f]{1,4}$/i.test(g) ? parseInt(g, 16) : NaN)) : []);
  const front = parse(head);
  const back = parse(tail);
  const missing = 8 - front.length - back.length;
  if (tail === undefined ? missing !== 0 : missing < 1) return null;
  const groups = [...front, ...new Array<number>(tail === undefined ? 0 : missing).fill(0), ...back];
  return groups.some(Number.isNaN) ? null : groups;
}

/** The dotted IPv4 address inside an IPv4-mapped IPv6 address, or null. */
export function mappedIpv4(groups: readonly number[]): string | null {
  if (!groups.slice(0, 5).every((g) => g === 0) || groups[5] !== 0xffff) return null;
  return `${groups[6] >> 8}.${groups[6] & 255}.${groups[7] >> 8}.${groups[7] & 255}`;
}

/** The form people read: dotted IPv4 (also for IPv4-mapped), compressed IPv6, anything else as is. */
export function readableAddress(text: string): string {
  const groups = hextets(text);
  if (!groups) return text;
  return mappedIpv4(groups) ?? new URL(`http://[${text}]/`).hostname.slice(1, -1); // the URL parser writes IPv6 compressed
}
