/**
 * An upstream that ignores `stream: true` and answers with one JSON body still serves both kinds of
 * callers: non-streamed requests are read from an upstream stream by default, and streaming callers
 * get the answer as a (one-chunk) stream with usage and [DONE].
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, chatStream, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { startRecordingUpstream, type RecordingUpstream } from './helpers/recording-upstream.js';
import { sqliteTarget } from './helpers/store-targets.js';

describe('an upstream that only answers JSON', () => {
  let upstream: RecordingUpstream;
  let gw: TestGateway;
  let key: string;
  beforeAll(async () => {
    upstream = await startRecordingUpstream();
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => {
        file.providers.push({ id: 'json', name: 'JSON only', kind: 'openai', base_url: upstream.url, timeouts: {} });
        file.models.push({
          id: 'test/json',
          name: 'json',
          context_length: 4096,
          endpoints: [{ provider: 'json', model: 'j', pricing: { prompt: '0.000001', completion: '0.000002' } }],
        });
      },
    });
    key = (await gw.createKey(await gw.createAccount(5))).key;
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  it('serves a non-streamed caller', async () => {
    const answer = await chat(gw, key, { model: 'test/json', messages: [{ role: 'user', content: 'hi' }] });
    expect(answer.status).toBe(200);
    expect(answer.json.choices[0].message.content).toBe('recorded');
    expect(answer.json.usage).toMatchObject({ prompt_tokens: 1000, completion_tokens: 500, cost: 0.002 });
  });

  it('serves a streaming caller with content, finish, usage and [DONE]', async () => {
    const sse = await chatStream(gw, key, { model: 'test/json', messages: [{ role: 'user', content: 'hi' }] });
    expect(sse.status).toBe(200);
    expect(sse.done).toBe(true);
    const content = sse.events
      .flatMap((e) => e.choices.map((c: { delta: { content?: string } }) => c.delta.content ?? ''))
      .join('');
    expect(content).toBe('recorded');
    expect(sse.events.some((e) => e.choices[0]?.finish_reason === 'stop')).toBe(true);
    expect(sse.events.at(-1).usage).toMatchObject({ prompt_tokens: 1000, completion_tokens: 500, cost: 0.002 });
  });
});
