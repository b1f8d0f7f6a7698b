/**
 * A continuation refused by the endpoint asked to continue (outside check: Anthropic refuses a
 * prefill with thinking on): the caller gets the in-band error as without continuation, and the
 * refused attempt is listed with the generation's attempts (`provider_responses`) — it was missing,
 * so the record showed one endpoint that answered 200 and nothing of why the answer broke off.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatStream, startTestGateway, waitForGeneration, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

describe('a refused continuation', () => {
  let refuser: Server;
  let asked = 0;
  let gw: TestGateway;
  let key: string;

  beforeAll(async () => {
    refuser = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        asked++;
        const body = JSON.stringify({
          error: { message: 'prefill is not supported here', type: 'invalid_request_error' },
        });
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(body);
      });
    });
    await new Promise<void>((resolve) => refuser.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(refuser.address() as AddressInfo).port}/v1`;
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => {
        file.providers.push({ id: 'refuser', name: 'Refuser', kind: 'openai', base_url: url, timeouts: {} });
        file.models.push({
          id: 'test/continue-refused',
          name: 'test/continue-refused',
          context_length: 8192,
          endpoints: [
            {
              provider: 'mock',
              model: 'mock@behavior=drop,breakAfter=3,tps=100',
              pricing: { prompt: '0.000001', completion: '0.000002' },
              supports_prefill: true,
            },
            {
              provider: 'refuser',
              model: 'r',
              pricing: { prompt: '0.000001', completion: '0.000002' },
              supports_prefill: true,
            },
          ],
        });
        (file as { routing: Record<string, unknown> }).routing.mid_stream_continuation = true;
      },
    });
    key = (await gw.createKey(await gw.createAccount(5))).key;
  });
  afterAll(async () => {
    await gw.close();
    await new Promise((resolve) => refuser.close(resolve));
  });

  it('ends with the in-band error, and lists the refused attempt after the one that broke', async () => {
    const sse = await chatStream(gw, key, {
      model: 'test/continue-refused',
      messages: [{ role: 'user', content: 'Tell me about the fox' }],
    });
    expect(sse.status).toBe(200);
    const finishes = sse.events
      .flatMap((e) => (e.choices ?? []).map((c: { finish_reason: string | null }) => c.finish_reason))
      .filter((f: string | null) => f !== null);
    expect(finishes).toEqual(['error']);
    expect(asked).toBe(1);
    const generation = (await waitForGeneration(gw, sse.events[0].id, key)).json.data;
    const attempts = generation.provider_responses.map((r: { provider_name: string; status: number | null }) => [
      r.provider_name,
      r.status,
    ]);
    expect(attempts).toEqual([
      ['Mock', 200],
      ['Refuser', 400],
    ]);
  });
});
