import { describe, expect, it } from 'vitest';
import { createServer, type Socket, type AddressInfo } from 'node:net';
import { Client, errors } from 'undici';
import { failureFromThrown, isTransportError } from './failure.js';
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

describe('failureFromThrown', () => {
  /** The error undici throws for a request to a real loopback server that behaves as `serve` says. */
  async function thrownBy(serve: ((socket: Socket) => void) | 'nothing listening'): Promise<unknown> {
    const server = createServer(serve === 'nothing listening' ? () => undefined : serve);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    if (serve === 'nothing listening') await new Promise((resolve) => server.close(resolve));
    const client = new Client(`http://127.0.0.1:${port}`);
    try {
      await client.request({ method: 'POST', path: '/v1/chat/completions', body: '{}' });
      return null;
    } catch (error) {
      return error;
    } finally {
      await client.destroy();
      if (serve !== 'nothing listening') server.close();
    }
  }

  it('says what happened to the connection in words, never with a library error code', async () => {
    const refused = failureFromThrown(await thrownBy('nothing listening'), idle());
    const closed = failureFromThrown(await thrownBy((socket) => socket.once('data', () => socket.destroy())), idle());
    expect(refused).toMatchObject({ type: 'connection', message: 'Provider connection failed: connection refused' });
    expect(closed).toMatchObject({
      type: 'connection',
      message: 'Provider connection failed: the provider closed the connection',
    });
    expect(failureFromThrown(withCode('ENOTFOUND'), idle()).message).toBe('Provider connection failed: host not found');
    expect(failureFromThrown(withCode('CERT_HAS_EXPIRED'), idle()).message).toBe(
      "Provider connection failed: the provider's TLS certificate was not accepted",
    );
    expect(failureFromThrown(withCode('ERR_TLS_INVALID_PROTOCOL_VERSION'), idle()).message).toBe(
      'Provider connection failed: TLS handshake failed',
    );
    expect(failureFromThrown(withCode('UND_ERR_SOMETHING_NEW'), idle()).message).toBe('Provider connection failed');
  });
});
