/**
 * The subject a client address is limited as (the edge guard, sign-in and sign-up budgets). An IPv4
 * address is itself; an IPv6 address counts as its /64 — one subscriber's allocation, within which a
 * client picks any of 2^64 source addresses for free, so a budget per full address is no budget —
 * and an IPv4-mapped IPv6 address (`::ffff:192.0.2.1`, how a dual-stack socket reports IPv4) as the
 * IPv4 address. Anything that does not parse as an address is its own subject, as given.
 */
import ipaddr from 'ipaddr.js';

export function addressSubject(ip: string): string {
  // Node reports IPv4 peers as dotted quads: no parse on the hot path (the edge guard sees every request).
  if (!ip.includes(':') || !ipaddr.isValid(ip)) return ip;
  let address = ipaddr.parse(ip);
  if (address instanceof ipaddr.IPv6 && address.isIPv4MappedAddress()) address = address.toIPv4Address();
  if (address instanceof ipaddr.IPv4) return address.toString();
  const prefix = address.parts.slice(0, 4).map((part) => part.toString(16));
  return `${prefix.join(':')}::/64`;
}
