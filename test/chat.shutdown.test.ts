/**
 * Shutdown commits the charge of every stream still in flight when the grace period ends, before
 * `shutdown()` resolves (main.ts closes the store right after). The hard case: a relay blocked on
 * a caller that does not read, woken only by the forced connection close after the grace.
 */
import { connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startTestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

/** Everything at once, far more than the socket buffers hold. */
const FIREHOSE = {
  id: 'test/firehose',
  name: 'firehose',
  context_length: 1_000_000,
  // The mock builds the whole firehose before its first byte: on a loaded machine that takes
  // longer than the test gateway's fast timeouts, and a timed-out request never stalls.
  timeouts: { first_token_ms: 25_000, idle_ms: 25_000, response_ms: 60_000 },
  // The completion budget (sent upstream as max_tokens) must allow the whole firehose.
  endpoints: [
    {
      provider: 'mock',
      model: 'mock@tokens=100000',
      pricing: { prompt: '0.000001', completion: '0.000002' },
      max_completion_tokens: 100_000,
    },
  ],
};

/** Sends a streaming request, reads the response head (for the generation id) and the first content, then stops reading. */
async function stalledStream(
  url: string,
  key: string,
  model: string,
): Promise<{ socket: Socket; generationId: string }> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  socket.on('error', () => undefined);
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  const body = JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'Tell me about the fox.' }] });
  socket.write(
    `POST /api/v1/chat/completions HTTP/1.1\r\nhost: ${hostname}\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  // Read until content has arrived (the answer has started, whatever the machine's load), then stop.
  const head = await new Promise<string>((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer) => {
      seen += chunk.toString('latin1');
      // An answer that ended (a timeout, an error) can never stall: fail now, with what came.
      if (seen.includes('data: [DONE]')) reject(new Error(`the stream ended before it stalled: ${seen.slice(-500)}`));
      if (!/"content":"[^"]/.test(seen)) return;
      socket.off('data', onData);
      socket.pause(); // never reads again
      resolve(seen);
    };
    socket.on('data', onData);
  });
  const generationId = /x-generation-id: (\S+)/i.exec(head)?.[1];
  if (!generationId) throw new Error(`no generation id in ${head.slice(0, 300)}`);
  return { socket, generationId };
}

describe('shutdown', () => {
  it('charges a stream still blocked on a non-reading caller when the grace ends, before shutdown() resolves', async () => {
    const own = await startTestGateway({ target: sqliteTarget, extraModels: [FIREHOSE] });
    let socket: Socket | undefined;
    try {
      const key = (await own.createKey(await own.createAccount(10))).key;
      const stalled = await stalledStream(own.url, key, 'test/firehose');
      socket = stalled.socket;
      // Let the relay fill the socket buffers and block on 'drain'.
      await new Promise((r) => setTimeout(r, 1000));
      expect(await own.store.getGeneration(stalled.generationId)).toBeNull();

      await own.gateway.shutdown(200);

      // Read at once: no waiting for a late commit.
      const generation = await own.store.getGeneration(stalled.generationId);
      expect(generation).not.toBeNull();
      expect(generation?.cancelled).toBe(true);
      expect(generation?.totalCost).toBeGreaterThan(0n);
      expect(generation?.tokensCompletion).toBeGreaterThan(0);
    } finally {
      socket?.destroy();
      await own.close();
    }
  });
});
