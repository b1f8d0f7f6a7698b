/**
 * A request that arrives on a kept-alive connection while the gateway stops (pipelined behind a
 * stream still in flight) gets Tollgate's error record, `server.shutting_down`, and the connection
 * closes after it — not Fastify's own 503 body (outside check: `{"error":"Service Unavailable",…}`);
 * `/readyz` still answers, with its reason.
 */
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startTestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

const SLOW = {
  id: 'test/slow-stream',
  name: 'slow stream',
  context_length: 8_000,
  endpoints: [
    { provider: 'mock', model: 'mock@tokens=20,tps=20', pricing: { prompt: '0.000001', completion: '0.000002' } },
  ],
};

/** A connection with a slow stream under way (content arrived); `seen` is everything read on it, `closed` its end. */
async function busyConnection(url: string, key: string) {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  socket.on('error', () => undefined);
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  const state = { seen: '', socket, hostname };
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.on('data', (chunk: Buffer) => (state.seen += chunk.toString('latin1')));
  const body = JSON.stringify({ model: SLOW.id, stream: true, messages: [{ role: 'user', content: 'Hi' }] });
  socket.write(
    `POST /api/v1/chat/completions HTTP/1.1\r\nhost: ${hostname}\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  for (let i = 0; i < 200 && !/"content":"[^"]/.test(state.seen); i++) await new Promise((r) => setTimeout(r, 25));
  return { state, closed };
}

/** The answer after the stream's: the last response on the connection. */
function lastAnswer(seen: string): { head: string; body: string } {
  const answer = seen.slice(seen.lastIndexOf('HTTP/1.1 '));
  const split = answer.indexOf('\r\n\r\n');
  return { head: answer.slice(0, split).toLowerCase(), body: answer.slice(split + 4) };
}

describe('shutdown with a kept-alive connection', () => {
  it('answers a request that arrives meanwhile with 503 server.shutting_down in the error record', async () => {
    const gw = await startTestGateway({ target: sqliteTarget, extraModels: [SLOW] });
    try {
      const key = (await gw.createKey(await gw.createAccount(10))).key;
      const api = await busyConnection(gw.url, key);
      const probe = await busyConnection(gw.url, key);
      const stopping = gw.gateway.shutdown(10_000);
      await new Promise((r) => setTimeout(r, 100));
      const { hostname } = api.state;
      api.state.socket.write(`GET /api/v1/key HTTP/1.1\r\nhost: ${hostname}\r\nauthorization: Bearer ${key}\r\n\r\n`);
      probe.state.socket.write(`GET /readyz HTTP/1.1\r\nhost: ${hostname}\r\n\r\n`);
      await Promise.all([api.closed, probe.closed]);
      await stopping;

      // The streams finished whole, then the second answer came, and the connection closed.
      for (const { state } of [api, probe]) expect(state.seen).toContain('data: [DONE]');
      const refused = lastAnswer(api.state.seen);
      expect(refused.head).toMatch(/^http\/1\.1 503 /);
      expect(refused.head).toContain('connection: close');
      // Answered after the request's own hooks ran: readable cross-origin like every answer.
      expect(refused.head).toContain('access-control-allow-origin: *');
      expect(JSON.parse(refused.body)).toMatchObject({ error: { code: 503, message: 'The gateway is shutting down' } });
      const ready = lastAnswer(probe.state.seen);
      expect(ready.head).toMatch(/^http\/1\.1 503 /);
      expect(JSON.parse(ready.body)).toEqual({ status: 'shutting_down', reasons: ['shutting_down'] });
    } finally {
      await gw.close();
    }
  });
});
