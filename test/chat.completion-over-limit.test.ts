/**
 * A provider that writes past the completion limit it was sent (ignores `max_tokens`), or reports a
 * completion count beyond it, cannot take the caller past what was held: the completion is charged up
 * to the limit the request carried, and the overrun is counted for the operator
 * (`tollgate_completion_tokens_over_limit_total`). Before, the caller was charged whatever the provider
 * counted (up to four times the context), so a key limit gave no protection against such a provider.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, chatStream, getJson, toUnits, waitForGeneration, type TestGateway } from './helpers/gateway.js';
import {
  chunk,
  DONE,
  startGatewayWith,
  startScriptedUpstream,
  usageChunk,
  type ScriptedUpstream,
} from './helpers/scripted-upstream.js';

// startGatewayWith's prices: 1 µUSD per prompt token, 2 per completion token; endpoint maximum 1024.
const PROMPT_UNITS = 1_000;
const COMPLETION_UNITS = 2_000;
const ENDPOINT_MAX = 1024;

/** Three words, a finish, then usage claiming `completion` tokens. */
const answer = (completion: number | null) => () => [
  { write: chunk({ role: 'assistant', content: 'one' }) },
  { write: chunk({ content: ' two' }) },
  { write: chunk({ content: ' three' }) },
  { write: chunk({}, 'stop') },
  ...(completion === null ? [] : [{ write: usageChunk(10, completion) }]),
  { write: DONE },
];

/** A long answer (far more than 20 tokens by any tokenizer), finished, without usage. */
const LONG = Array.from({ length: 300 }, (_, i) => `word${i}`).join(' ');

/** A 200 answer's usage and generation id, streamed (the last event's usage) or not. */
async function answered(
  gw: TestGateway,
  key: string,
  ask: Record<string, unknown>,
  stream: boolean,
): Promise<{ usage: any; id: string }> {
  if (stream) {
    const r = await chatStream(gw, key, ask);
    expect(r.status, r.raw).toBe(200);
    return { usage: r.events.at(-1).usage, id: r.events[0].id };
  }
  const r = await chat(gw, key, ask);
  expect(r.status, r.text).toBe(200);
  return { usage: r.json.usage, id: r.json.id };
}

async function overLimitMetric(gw: TestGateway): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('tollgate_completion_tokens_over_limit_total{'));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

describe('completion tokens past the limit sent upstream are not charged', () => {
  let upstream: ScriptedUpstream;
  let gw: TestGateway;
  beforeAll(async () => {
    upstream = await startScriptedUpstream();
    upstream.scripts.set('liar', answer(100_000));
    upstream.scripts.set('honest', answer(3));
    // Claims 100,000 completion tokens, 90,000 of them reasoning.
    upstream.scripts.set('liar-reasoning', () => [
      { write: chunk({ role: 'assistant', content: 'one' }) },
      { write: chunk({}, 'stop') },
      {
        write: chunk({}, null, {
          choices: [],
          usage: {
            prompt_tokens: 10,
            completion_tokens: 100_000,
            total_tokens: 100_010,
            completion_tokens_details: { reasoning_tokens: 90_000 },
          },
        }),
      },
      { write: DONE },
    ]);
    upstream.scripts.set('long', () => [
      { write: chunk({ role: 'assistant', content: LONG }) },
      { write: chunk({}, 'stop') },
      { write: DONE },
    ]);
    // Writes one word every 2 ms for 20 s, whatever max_tokens says.
    upstream.scripts.set('runaway', () => [
      { write: chunk({ role: 'assistant', content: 'Once' }) },
      ...Array.from({ length: 10_000 }, () => [{ write: chunk({ content: ' upon' }) }, { wait: 2 }]).flat(),
      { write: chunk({}, 'stop') },
      { write: DONE },
    ]);
    // 100 words of answer by our count, finished: past a limit of 60, but not twice it.
    upstream.scripts.set('wordy', () => [
      { write: chunk({ role: 'assistant', content: 'Once' }) },
      ...Array.from({ length: 99 }, () => ({ write: chunk({ content: ' upon' }) })),
      { write: chunk({}, 'stop') },
      { write: usageChunk(10, 60) },
      { write: DONE },
    ]);
    gw = await startGatewayWith(upstream, ['liar', 'liar-reasoning', 'honest', 'long', 'runaway', 'wordy']);
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  for (const stream of [false, true]) {
    const how = stream ? 'streamed' : 'non-streamed';

    it(`a provider's count past the caller's max_tokens is charged at max_tokens (${how})`, async () => {
      const accountId = await gw.createAccount(1);
      const { key } = await gw.createKey(accountId);
      const before = await overLimitMetric(gw);
      const ask = { model: 'scripted/liar', messages: [{ role: 'user', content: 'hi' }], max_tokens: 20 };
      const { usage, id } = await answered(gw, key, ask, stream);
      expect(usage.prompt_tokens).toBe(10);
      expect(usage.completion_tokens).toBe(20);
      const cost = 10 * PROMPT_UNITS + 20 * COMPLETION_UNITS;
      expect(toUnits(usage.cost)).toBe(cost);
      const generation = (await waitForGeneration(gw, id, key)).json.data;
      expect(generation.native_tokens_completion).toBe(20);
      expect(toUnits(generation.total_cost)).toBe(cost);
      expect(toUnits((await getJson(gw, '/key', key)).json.data.usage)).toBe(cost);
      expect(toUnits((await getJson(gw, '/credits', key)).json.data.total_usage)).toBe(cost);
      expect((await overLimitMetric(gw)) - before).toBe(100_000 - 20);
    });

    it(`reasoning tokens are reported within the completion tokens charged (${how})`, async () => {
      const accountId = await gw.createAccount(1);
      const { key } = await gw.createKey(accountId);
      const ask = { model: 'scripted/liar-reasoning', messages: [{ role: 'user', content: 'hi' }], max_tokens: 20 };
      const { usage, id } = await answered(gw, key, ask, stream);
      expect(usage.completion_tokens).toBe(20);
      expect(usage.completion_tokens_details.reasoning_tokens).toBe(20);
      const generation = (await waitForGeneration(gw, id, key)).json.data;
      expect(generation.native_tokens_reasoning).toBe(20);
    });

    it(`without a caller limit, the endpoint's budget caps the charge (${how})`, async () => {
      const { key } = await gw.createKey(await gw.createAccount(1));
      const ask = { model: 'scripted/liar', messages: [{ role: 'user', content: 'hi' }], stream };
      const usage = stream
        ? (await chatStream(gw, key, ask)).events.at(-1).usage
        : (await chat(gw, key, ask)).json.usage;
      expect(usage.completion_tokens).toBe(ENDPOINT_MAX);
      expect(toUnits(usage.cost)).toBe(10 * PROMPT_UNITS + ENDPOINT_MAX * COMPLETION_UNITS);
    });

    it(`an estimate (no usage from the provider) is capped at the limit too (${how})`, async () => {
      const { key } = await gw.createKey(await gw.createAccount(1));
      const ask = { model: 'scripted/long', messages: [{ role: 'user', content: 'hi' }], max_tokens: 20, stream };
      const usage = stream
        ? (await chatStream(gw, key, ask)).events.at(-1).usage
        : (await chat(gw, key, ask)).json.usage;
      expect(usage.completion_tokens).toBe(20);
    });

    it(`a provider writing on past its limit is stopped, the answer ending as one that kept to it (${how})`, async () => {
      const { key } = await gw.createKey(await gw.createAccount(1));
      const runs = upstream.logs.get('runaway')?.length ?? 0;
      const ask = { model: 'scripted/runaway', messages: [{ role: 'user', content: 'hi' }], max_tokens: 20 };
      let content: string;
      let finish: string;
      let usage: { completion_tokens: number; cost: number };
      if (stream) {
        const r = await chatStream(gw, key, ask);
        expect(r.status, r.raw).toBe(200);
        expect(r.done).toBe(true);
        content = r.events.map((e: any) => e.choices?.[0]?.delta?.content ?? '').join('');
        finish = r.events.find((e: any) => e.choices?.[0]?.finish_reason)?.choices[0].finish_reason;
        expect(r.events.some((e: any) => e.error)).toBe(false);
        usage = r.events.at(-1).usage;
      } else {
        const r = await chat(gw, key, ask);
        expect(r.status, r.text).toBe(200);
        content = r.json.choices[0].message.content;
        finish = r.json.choices[0].finish_reason;
        usage = r.json.usage;
      }
      expect(finish).toBe('length');
      // Cut once past 2 × 20 + 64 = 104 tokens by our count (' upon' is one token; the first ~35
      // characters are taken at four a token), in the event that passed it.
      const words = content.split(' ').length;
      expect(words).toBeGreaterThan(100);
      expect(words).toBeLessThan(110);
      expect(usage.completion_tokens).toBe(20);
      expect(toUnits(usage.cost)).toBeLessThanOrEqual(
        Math.ceil(20 * PROMPT_UNITS) + 20 * COMPLETION_UNITS, // prompt estimate of one short message, at most 20
      );
      // The upstream request was ended, not read to its end (it would have written for 20 s).
      const log = upstream.logs.get('runaway')![runs]!;
      await expect.poll(() => log.closedAt, { timeout: 2000 }).not.toBeNull();
      expect(log.finishedWriting).toBe(false);
    });

    it(`an answer past its limit by our count, but not twice it, is not stopped (${how})`, async () => {
      const { key } = await gw.createKey(await gw.createAccount(1));
      const ask = { model: 'scripted/wordy', messages: [{ role: 'user', content: 'hi' }], max_tokens: 60, stream };
      if (stream) {
        const r = await chatStream(gw, key, ask);
        expect(r.events.find((e: any) => e.choices?.[0]?.finish_reason)?.choices[0].finish_reason).toBe('stop');
        expect(
          r.events
            .map((e: any) => e.choices?.[0]?.delta?.content ?? '')
            .join('')
            .split(' '),
        ).toHaveLength(100);
        expect(r.events.at(-1).usage.completion_tokens).toBe(60);
      } else {
        const r = await chat(gw, key, ask);
        expect(r.json.choices[0].finish_reason).toBe('stop');
        expect(r.json.choices[0].message.content.split(' ')).toHaveLength(100);
        expect(r.json.usage.completion_tokens).toBe(60);
      }
    });

    it(`an honest provider's count under the limit is charged as counted (${how})`, async () => {
      const { key } = await gw.createKey(await gw.createAccount(1));
      const before = await overLimitMetric(gw);
      const ask = { model: 'scripted/honest', messages: [{ role: 'user', content: 'hi' }], max_tokens: 20, stream };
      const usage = stream
        ? (await chatStream(gw, key, ask)).events.at(-1).usage
        : (await chat(gw, key, ask)).json.usage;
      expect(usage.completion_tokens).toBe(3);
      expect(toUnits(usage.cost)).toBe(10 * PROMPT_UNITS + 3 * COMPLETION_UNITS);
      expect(await overLimitMetric(gw)).toBe(before);
    });
  }

  it('a key limit holds against a provider that reports far more than it was allowed to write', async () => {
    // Each request holds (prompt estimate + 20) tokens' worth; the provider claims 100,000 completion
    // tokens each time. The key's usage stays within its limit plus one hold (README "The overspend bound").
    const accountId = await gw.createAccount(1);
    const limit = 0.0002; // 200,000 units: a handful of requests at ~50,000 each
    const { key } = await gw.createKey(accountId, { limit });
    const ask = { model: 'scripted/liar', messages: [{ role: 'user', content: 'hi' }], max_tokens: 20 };
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await chat(gw, key, ask)).status);
    expect(statuses).toContain(402);
    const usage = toUnits((await getJson(gw, '/key', key)).json.data.usage);
    const oneHold = 200 * PROMPT_UNITS + 20 * COMPLETION_UNITS; // generous prompt estimate bound
    expect(usage).toBeLessThanOrEqual(toUnits(limit) + oneHold);
  });
});
