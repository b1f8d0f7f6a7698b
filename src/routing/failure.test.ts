import { describe, expect, it } from 'vitest';
import { errors } from 'undici';
import { isTransportError } from './failure.js';
import { AttemptAbort } from './upstream-client.js';

const idle = () => new AbortController().signal;
const withCode = (code: string) => Object.assign(new Error(code), { code });

describe('isTransportError', () => {
  it('accepts undici, socket, DNS and TLS errors and our own aborts', () => {
    expect(isTransportError(new errors.SocketError('other side closed'), idle())).toBe(true);
    expect(isTransportError(new errors.RequestAbortedError(), idle())).toBe(true);
    for (const code of [
      'ECONNRESET',
      'ECONNREFUSED',
      'EPIPE',
      'ETIMEDOUT',
      'ENOTFOUND',
      'EAI_AGAIN',
      'EHOSTUNREACH',
      'CERT_HAS_EXPIRED',
      'ERR_TLS_CERT_ALTNAME_INVALID',
    ]) {
      expect(isTransportError(withCode(code), idle())).toBe(true);
    }
    expect(isTransportError(new AttemptAbort('idle_timeout'), idle())).toBe(true);
    expect(isTransportError(new Error('wrapped', { cause: withCode('ECONNRESET') }), idle())).toBe(true);
    const aborted = new AbortController();
    aborted.abort(new AttemptAbort('client_closed'));
    expect(isTransportError(new Error('anything'), aborted.signal)).toBe(true);
  });

  it('rejects local exceptions', () => {
    expect(isTransportError(new RangeError('Maximum call stack size exceeded'), idle())).toBe(false);
    expect(isTransportError(new TypeError("Cannot read properties of undefined (reading 'x')"), idle())).toBe(false);
    expect(isTransportError(withCode('ERR_INVALID_ARG_TYPE'), idle())).toBe(false);
    expect(isTransportError('a string', idle())).toBe(false);
    expect(isTransportError(null, idle())).toBe(false);
  });
});
