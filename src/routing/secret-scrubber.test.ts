import { describe, expect, it } from 'vitest';
import { headerSecrets, REDACTED, SecretScrubber } from './secret-scrubber.js';

describe('SecretScrubber', () => {
  const scrubber = new SecretScrubber(['operator-key-0001', 'EMPTY', null]).with(['own-key-0002-longer']);

  it('removes configured and per-request keys by value, and bearer / sk- / Google-key shapes by pattern', () => {
    const text =
      'key operator-key-0001, own own-key-0002-longer, header Bearer abc.def-123, sk-proj-abcdef123456, AIzaSyA1234567890abcdefghijklmnop, task-force';
    const out = scrubber.text(text);
    expect(out).toBe(
      `key ${REDACTED}, own ${REDACTED}, header Bearer ${REDACTED}, ${REDACTED}, ${REDACTED}, task-force`,
    );
  });

  it('leaves short configured "keys" of keyless servers alone', () => {
    expect(scrubber.text('EMPTY response')).toBe('EMPTY response');
  });

  it('scrubs every string of a parsed body, keys included', () => {
    expect(
      scrubber.value({
        error: { message: 'got operator-key-0001', list: ['Bearer x1234567'], ['operator-key-0001']: 1, n: 5 },
      }),
    ).toEqual({
      error: { message: `got ${REDACTED}`, list: [`Bearer ${REDACTED}`], [REDACTED]: 1, n: 5 },
    });
  });

  it('removes the beginning of a key at the end of a text cut short (…), as the adapters and readBounded cut', () => {
    expect(scrubber.text('upstream said key=operator-ke…')).toBe(`upstream said key=${REDACTED}…`);
    expect(scrubber.text('stream event is not JSON: {"k":"AIzaSyA1b2C3d…')).toBe(
      `stream event is not JSON: {"k":"${REDACTED}…`,
    );
    expect(scrubber.text('bad sk-pro…')).toBe(`bad ${REDACTED}…`);
    // Three characters are too few to tell; a text not cut short is left as it is.
    expect(scrubber.text('ends in ope…')).toBe('ends in ope…');
    expect(scrubber.text('key=operator-ke')).toBe('key=operator-ke');
  });

  it("takes the credentials among a provider's extra headers, and the credential alone after a scheme", () => {
    const secrets = headerSecrets({
      'api-key': 'azure-0123456789',
      'X-Gateway-Auth': 'Token gw-0123456789',
      'x-org': 'acme-organisation',
      'anthropic-version': '2023-06-01',
    });
    expect(secrets).toEqual(['azure-0123456789', 'Token gw-0123456789', 'gw-0123456789']);
    expect(new SecretScrubber(secrets).text('bad key azure-0123456789 or gw-0123456789 for acme-organisation')).toBe(
      'bad key [redacted] or [redacted] for acme-organisation',
    );
  });
});
