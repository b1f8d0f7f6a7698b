import { describe, expect, it } from 'vitest';
import { addressSubject } from './address-subject.js';

describe('addressSubject', () => {
  it('an IPv4 address is its own subject; an IPv4-mapped IPv6 address is the IPv4 address', () => {
    expect(addressSubject('192.0.2.7')).toBe('192.0.2.7');
    expect(addressSubject('::ffff:192.0.2.7')).toBe('192.0.2.7');
    expect(addressSubject('::FFFF:c000:0207')).toBe('192.0.2.7');
  });

  it('every address of one IPv6 /64 is one subject, however written; another /64 is another', () => {
    const subject = addressSubject('2001:db8:1:2::1');
    expect(subject).toBe('2001:db8:1:2::/64');
    expect(addressSubject('2001:0db8:0001:0002:ffff:eeee:dddd:cccc')).toBe(subject);
    expect(addressSubject('2001:DB8:1:2:0:0:0:9')).toBe(subject);
    expect(addressSubject('2001:db8:1:2::1%eth0')).toBe(subject);
    expect(addressSubject('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
    expect(addressSubject('::1')).toBe('0:0:0:0::/64');
  });

  it('a zone id is not part of the address, whatever the interface is called (VLANs, Docker bridges)', () => {
    expect(addressSubject('fe80::1%eth0.100')).toBe('fe80:0:0:0::/64');
    expect(addressSubject('fe80::2%br-1a2b3c4d5e6f')).toBe('fe80:0:0:0::/64');
    expect(addressSubject('2001:db8:1:2::1%eth0.100')).toBe('2001:db8:1:2::/64');
  });

  it('nor is a source port, as some proxies write it into X-Forwarded-For', () => {
    expect(addressSubject('203.0.113.7:50123')).toBe('203.0.113.7');
    expect(addressSubject('[2001:db8:1:2::1]:50123')).toBe('2001:db8:1:2::/64');
    expect(addressSubject('[2001:db8:1:2::1]')).toBe('2001:db8:1:2::/64');
    expect(addressSubject('[::ffff:192.0.2.7]:443')).toBe('192.0.2.7');
  });

  it('what is not an address is its own subject', () => {
    expect(addressSubject('')).toBe('');
    expect(addressSubject('not an address')).toBe('not an address');
    expect(addressSubject('203.0.113.7:99999999')).toBe('203.0.113.7:99999999');
    expect(addressSubject('[not:an:address]:80')).toBe('[not:an:address]:80');
  });
});
