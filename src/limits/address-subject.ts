/**
 * The subject a client address is limited as (the edge guard, sign-in and sign-up budgets). An IPv4
 * address is itself; an IPv6 address counts as its /64 — one subscriber's allocation, within which a
 * client picks any of 2^64 source addresses for free, so a budget per full address is no budget —
 * and an IPv4-mapped IPv6 address (`::ffff:192.0.2.1`, how a dual-stack socket reports IPv4) as the
 * IPv4 address; a source port or a zone id is not part of it. Anything that does not parse as an
 * address is its own subject, as given.
 */
import ipaddr from 'ipaddr.js';

export function addressSubject(ip: string): string {
  // Node reports IPv4 peers as dotted quads: no parse on the hot path (the edge guard sees every request).
  if (!ip.includes(':')) return ip;
  const bare = withoutPortOrZone(ip);
  if (!ipaddr.isValid(bare)) return ip;
  let address = ipaddr.parse(bare);
  if (address instanceof ipaddr.IPv6 && address.isIPv4MappedAddress()) address = address.toIPv4Address();
  if (address instanceof ipaddr.IPv4) return address.toString();
  const prefix = address.parts.slice(0, 4).map((part) => part.toString(16));
  return `${prefix.join(':')}::/64`;
}

/**
 * The address alone: some proxies write the client's source port into X-Forwarded-For
 * (`203.0.113.7:50123`, `[2001:db8::1]:50123`: a fresh subject per connection otherwise), and a
 * link-local peer carries its interface as a zone id (`fe80::1%eth0.100`), which says nothing about
 * the client.
 */
function withoutPortOrZone(ip: string): string {
  let bare = ip;
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(bare);
  if (bracketed) bare = bracketed[1]!;
  else if (/^\d{1,3}(?:\.\d{1,3}){3}:\d{1,5}$/.test(bare)) bare = bare.slice(0, bare.lastIndexOf(':'));
  const zone = bare.indexOf('%');
  return zone === -1 ? bare : bare.slice(0, zone);
}
