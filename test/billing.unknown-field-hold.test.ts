/**
 * A field no schema here knows, which an endpoint may read as prompt (vLLM's `documents`, rendered
 * into the prompt by a RAG chat template), is held for like the messages: the hold of a request
 * carrying 40,000 tokens of documents counts them, so a second request on a key whose limit they
 * exceed is refused while the first is in flight. (It was held at the messages' estimate alone.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, chatStream, getJson, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

const DOCUMENTS = [{ title: 'evidence', text: 'a1!~'.repeat(10_000) }]; // ~40,000 o200k tokens
const SLOW = 'test/slow-documents';

describe('holds of fields beside the messages', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({
      target: sqliteTarget,
      extraModels: [
        {
          // A stream cut after its first tokens, with no usage: its prompt is charged at our estimate.
          id: 'test/cut-without-usage',
          name: 'cut',
          context_length: 128_000,
          endpoints: [
            {
              provider: 'mock',
              model: 'mock@behavior=drop,usage=false',
              pricing: { prompt: '0.000001', completion: '0.000002' },
            },
          ],
        },
        {
          id: SLOW,
          name: 'slow',
          context_length: 128_000,
          endpoints: [
            {
              provider: 'mock',
              model: 'mock@latency=1500',
              pricing: { prompt: '0.000001', completion: '0.000002' },
              supported_parameters: ['max_tokens', 'documents'],
            },
          ],
        },
      ],
    });
  });
  afterAll(() => gw?.close());

  it('a request with 40,000 tokens of documents holds them: a second request on a key limited to a fraction of that is refused meanwhile', async () => {
    const account = await gw.createAccount(10);
    const { key } = await gw.createKey(account, { limit: 0.005 }); // 5,000 tokens' worth of prompt
    const requestsBefore = gw.provider.stats.requests;
    const first = chat(gw, key, {
      model: SLOW,
      messages: [{ role: 'user', content: 'answer from the documents' }],
      documents: DOCUMENTS,
      max_tokens: 1,
    });
    // In flight: admitted (a key under its limit admits), forwarded, its hold taken.
    while (gw.provider.stats.requests === requestsBefore) await new Promise((resolve) => setTimeout(resolve, 10));
    const second = await chat(gw, key, {
      model: 'test/chat',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 1,
    });
    expect(second.status, JSON.stringify(second.json)).toBe(402);
    expect((await first).status).toBe(200);
  });

  it('a prompt charged at our estimate counts no field the endpoint was never sent', async () => {
    const { key } = await gw.createKey(await gw.createAccount(10));
    const s = await chatStream(gw, key, {
      model: 'test/cut-without-usage',
      messages: [{ role: 'user', content: 'hi' }],
      documents: DOCUMENTS, // not listed by the endpoint: dropped, never sent
    });
    expect(s.status).toBe(200);
    const id = s.events.find((e) => typeof e.id === 'string')?.id as string;
    let generation = await getJson(gw, `/generation?id=${id}`, key);
    for (let i = 0; i < 50 && generation.status !== 200; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      generation = await getJson(gw, `/generation?id=${id}`, key);
    }
    expect(generation.status).toBe(200);
    expect(generation.json.data.tokens_prompt).toBeLessThan(50);
  });
});
