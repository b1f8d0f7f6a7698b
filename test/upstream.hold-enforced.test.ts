/**
 * Issue 8, finding 2: the completion budget a hold was computed from is sent upstream, so an upstream
 * that would write far more than the hold stops where the hold ends. Before the fix an account with
 * 0.005 USD and a key limit of 0.005 made one request that cost 0.020005 (no `max_tokens` was sent).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { budgetCost, DEFAULT_COMPLETION_BUDGET } from '../src/billing/completion-budget.js';
import { estimatePromptTokens } from '../src/billing/token-estimate.js';
import { parsePricePerToken } from '../src/core/money.js';
import {
  balanceUnits,
  chat,
  chatStream,
  getJson,
  startTestGateway,
  toUnits,
  type TestGateway,
} from './helpers/gateway.js';
import { startRecordingUpstream, type RecordingUpstream } from './helpers/recording-upstream.js';
import { sqliteTarget } from './helpers/store-targets.js';

const PRICE = '0.000001'; // 1000 units per token, prompt and completion
const WORDY = {
  id: 'test/wordy',
  name: 'wordy',
  context_length: 128_000,
  // 10,000 completion tokens unless the request limits it; no endpoint maximum.
  endpoints: [{ provider: 'mock', model: 'mock@tokens=10000', pricing: { prompt: PRICE, completion: PRICE } }],
};
const MESSAGES = [{ role: 'user', content: 'Write as much as you can.' }];
const PROMPT = estimatePromptTokens(MESSAGES);
const PRICES = { prompt: parsePricePerToken(PRICE), completion: parsePricePerToken(PRICE), request: 0n };
/** The hold of one request (`e` in README "The overspend bound"). */
const E = Number(budgetCost({ prices: PRICES }, PROMPT, DEFAULT_COMPLETION_BUDGET));

describe('the hold is enforced upstream', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ target: sqliteTarget, extraModels: [WORDY] });
  });
  afterAll(() => gw.close());

  for (const stream of [false, true]) {
    it(`a tiny balance and key limit are overspent by less than one hold (${stream ? 'streamed' : 'non-streamed'})`, async () => {
      const start = 5_000_000; // 0.005 USD
      const accountId = await gw.createAccount(0.005);
      const { key } = await gw.createKey(accountId, { limit: 0.005 });
      const ask = { model: WORDY.id, messages: MESSAGES };

      let completionTokens: number;
      if (stream) {
        const first = await chatStream(gw, key, ask);
        expect(first.status, first.raw).toBe(200);
        expect(first.events.find((e) => e.choices?.[0]?.finish_reason)?.choices[0].finish_reason).toBe('length');
        completionTokens = first.events.at(-1).usage.completion_tokens;
      } else {
        const first = await chat(gw, key, ask);
        expect(first.status, first.text).toBe(200);
        expect(first.json.choices[0].finish_reason).toBe('length');
        completionTokens = first.json.usage.completion_tokens;
      }
      // The upstream was told the budget (4096, no caller limit, no endpoint maximum) and honoured it.
      expect(completionTokens).toBe(DEFAULT_COMPLETION_BUDGET);
      expect(await balanceUnits(gw, accountId)).toBeGreaterThan(0);

      // Still a positive balance, so one more is admitted; its hold covers what it may write.
      const second = await chat(gw, key, ask);
      expect(second.status, second.text).toBe(200);
      const third = await chat(gw, key, ask);
      expect(third.status).toBe(402);

      const balance = await balanceUnits(gw, accountId);
      // README bound: balance ≥ −(e − 1 unit) when no request cost more than its estimate.
      expect(balance).toBeGreaterThanOrEqual(-(E - 1));
      const info = (await getJson(gw, '/key', key)).json.data;
      expect(toUnits(info.usage)).toBe(start - balance);
      expect(toUnits(info.usage)).toBeLessThan(start + E);
    });
  }

  it('a caller limit below the budget is kept', async () => {
    const { key } = await gw.createKey(await gw.createAccount(1));
    const low = await chat(gw, key, { model: WORDY.id, messages: MESSAGES, max_tokens: 7 });
    expect(low.json.usage.completion_tokens).toBe(7);
  });
});

describe('each attempt carries its own endpoint budget', () => {
  let gw: TestGateway;
  let upstream: RecordingUpstream;
  beforeAll(async () => {
    upstream = await startRecordingUpstream();
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => {
        file.providers.push(
          {
            id: 'rec-a',
            name: 'Recorder A',
            kind: 'openai',
            base_url: upstream.url,
            api_key: 'rec-key-a-000000',
            timeouts: {},
          },
          {
            id: 'rec-b',
            name: 'Recorder B',
            kind: 'openai',
            base_url: upstream.url,
            api_key: 'rec-key-b-000000',
            timeouts: {},
          },
        );
        file.models.push({
          id: 'test/two-budgets',
          name: 'two budgets',
          context_length: 8192,
          endpoints: [
            {
              provider: 'rec-a',
              model: 'a',
              pricing: { prompt: PRICE, completion: '0.0000001' },
              max_completion_tokens: 100,
            },
            {
              provider: 'rec-b',
              model: 'b',
              pricing: { prompt: PRICE, completion: PRICE },
              max_completion_tokens: 300,
              supported_parameters: ['max_completion_tokens'],
            },
          ],
        });
      },
    });
    // A (cheaper: tried first) refuses the gateway's key: every request fails over to B.
    upstream.rejectKeys.add('rec-key-a-000000');
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  it('fails over from A (budget 100) to B (budget 300, its own limit field); a caller limit in between applies to B only', async () => {
    const { key } = await gw.createKey(await gw.createAccount(1));
    upstream.seen.length = 0;
    expect((await chat(gw, key, { model: 'test/two-budgets', messages: MESSAGES })).status).toBe(200);
    expect(upstream.seen.map((s) => [s.body.model, s.body.max_tokens, s.body.max_completion_tokens])).toEqual([
      ['a', 100, undefined],
      ['b', undefined, 300],
    ]);

    upstream.seen.length = 0;
    expect((await chat(gw, key, { model: 'test/two-budgets', messages: MESSAGES, max_tokens: 200 })).status).toBe(200);
    // Each endpoint gets the limit in the field it lists, whichever the caller used: B's server (as
    // OpenAI's reasoning models do) refuses `max_tokens`, and A's (the default list) knows only it.
    expect(upstream.seen.map((s) => [s.body.model, s.body.max_tokens, s.body.max_completion_tokens])).toEqual([
      ['a', 100, undefined],
      ['b', undefined, 200],
    ]);

    // A caller limit above every endpoint's budget is lowered to each one's.
    upstream.seen.length = 0;
    expect(
      (await chat(gw, key, { model: 'test/two-budgets', messages: MESSAGES, max_completion_tokens: 5000 })).status,
    ).toBe(200);
    expect(upstream.seen.map((s) => [s.body.model, s.body.max_tokens, s.body.max_completion_tokens])).toEqual([
      ['a', 100, undefined],
      ['b', undefined, 300],
    ]);
  });
});
