/**
 * An upstream that thinks without end: one word of answer, then a 64 KB reasoning delta every few ms.
 * Reasoning is exempt from the completion limit's cut (an honest model may think past `max_tokens`),
 * and nothing else bounded it: the gateway kept all of it in memory until the process died of heap or
 * string length, with every request in it (outside check). It is cut where no honest model gets —
 * past its context window — and the answer ends as a cut one does: `finish_reason: "length"`.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, chatStream, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

const PIECE = 'think '.repeat((64 * 1024) / 6);

describe('an upstream whose reasoning never ends', () => {
  let upstream: Server;
  let gw: TestGateway;
  let closedEarly = 0;

  beforeAll(async () => {
    upstream = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        // The second model thinks in `reasoning_details`, as an OpenRouter upstream sends it.
        const asDetails = (JSON.parse(body) as { model: string }).model === 'd';
        const thought = asDetails
          ? { reasoning_details: [{ type: 'reasoning.text', text: PIECE }] }
          : { reasoning: PIECE };
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const chunk = (delta: Record<string, unknown>) =>
          `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`;
        res.write(chunk({ role: 'assistant', content: 'Well' }));
        const timer = setInterval(() => res.write(chunk(thought)), 2);
        res.on('close', () => {
          clearInterval(timer);
          closedEarly++;
        });
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => {
        file.providers.push({ id: 'thinker', name: 'Thinker', kind: 'openai', base_url: url, timeouts: {} });
        for (const [id, model] of [
          ['test/thinker', 'm'],
          ['test/detailed-thinker', 'd'],
        ])
          file.models.push({
            id: id!,
            name: id!,
            context_length: 8192,
            endpoints: [{ provider: 'thinker', model, pricing: { prompt: '0.000001', completion: '0.000001' } }],
          });
      },
    });
  });

  afterAll(async () => {
    await gw?.close();
    upstream?.closeAllConnections();
    await new Promise((resolve) => upstream?.close(resolve));
  });

  const ask = { model: 'test/thinker', messages: [{ role: 'user', content: 'hi' }], max_tokens: 50 };

  it('non-streamed: cut past the context window, answered as cut, charged, and the upstream let go', async () => {
    const { key } = await gw.createKey(await gw.createAccount(5));
    const answer = await chat(gw, key, ask);
    expect(answer.status, answer.text.slice(0, 300)).toBe(200);
    const choice = answer.json.choices[0];
    expect(choice.finish_reason).toBe('length');
    expect(choice.message.content).toBe('Well');
    // 16 characters a token of an 8,192-token window (at least 1 Mi): one more piece at most.
    expect(choice.message.reasoning.length).toBeLessThanOrEqual(1024 * 1024 + PIECE.length);
    expect(answer.json.usage.completion_tokens).toBeLessThanOrEqual(50);
    expect(answer.json.usage.cost).toBeGreaterThan(0);
    await expect.poll(() => closedEarly).toBeGreaterThanOrEqual(1);
  });

  it('streamed: the same cut, then the usage chunk and [DONE]; the gateway serves on', async () => {
    const { key } = await gw.createKey(await gw.createAccount(5));
    const answer = await chatStream(gw, key, { ...ask, stream: true });
    expect(answer.status).toBe(200);
    const finishes = answer.events.flatMap((e) =>
      (e.choices ?? []).map((c: { finish_reason: string | null }) => c.finish_reason),
    );
    expect(finishes.filter((f) => f !== null)).toEqual(['length']);
    expect(answer.events.at(-1).usage.completion_tokens).toBeLessThanOrEqual(50);
    expect(answer.raw.trimEnd().endsWith('data: [DONE]')).toBe(true);
    const reasoning = answer.events.map((e) => e.choices?.[0]?.delta?.reasoning ?? '').join('');
    expect(reasoning.length).toBeLessThanOrEqual(1024 * 1024 + PIECE.length);
    expect((await chat(gw, key, ask)).status).toBe(200);
  });

  it('reasoning sent as reasoning_details is bounded the same way (an OpenRouter upstream)', async () => {
    const { key } = await gw.createKey(await gw.createAccount(5));
    const answer = await chat(gw, key, { ...ask, model: 'test/detailed-thinker' });
    expect(answer.status, answer.text.slice(0, 300)).toBe(200);
    expect(answer.json.choices[0].finish_reason).toBe('length');
    const thought = (answer.json.choices[0].message.reasoning_details as { text?: string }[])
      .map((d) => d.text ?? '')
      .join('');
    expect(thought.length).toBeLessThanOrEqual(1024 * 1024 + PIECE.length);
  });
});
