/**
 * A mid-stream continuation re-sends the prompt and the answer so far to a second endpoint, while
 * the request's hold covered one prompt. Before it is sent the hold grows by what the continuation
 * could cost beyond it (a second admission): an account that can cover it gets one uninterrupted
 * answer, charged within what was held; one whose balance covers exactly the first hold gets the
 * in-band error instead, and stays within the README bound (≥ −(e − 1 unit)).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { budgetCost, completionBudget } from '../src/billing/completion-budget.js';
import { estimatePromptTokens } from '../src/billing/token-estimate.js';
import { parsePricePerToken } from '../src/core/money.js';
import { balanceUnits, chatStream, startTestGateway, toUnits, type TestGateway } from './helpers/gateway.js';
import { chunk, DONE, startScriptedUpstream, type ScriptedUpstream } from './helpers/scripted-upstream.js';
import { sqliteTarget } from './helpers/store-targets.js';

const PRICE = '0.000001'; // 1000 units per token, prompt and completion
const PRICES = { prompt: parsePricePerToken(PRICE), completion: parsePricePerToken(PRICE), request: 0n };
const CONTEXT = 100_000;
const MESSAGES = [{ role: 'user', content: 'lorem '.repeat(5000) }];
const MAX_TOKENS = 10;
const PROMPT = estimatePromptTokens(MESSAGES);
/** The request's hold (`e`): its prompt estimate and its completion budget at the (single) price. */
const E = Number(
  budgetCost(
    { prices: PRICES },
    PROMPT,
    completionBudget(MAX_TOKENS, { contextLength: CONTEXT, maxCompletionTokens: null }, PROMPT),
  ),
);

describe('mid-stream continuation and the hold', () => {
  let upstream: ScriptedUpstream;
  let gw: TestGateway;
  beforeAll(async () => {
    upstream = await startScriptedUpstream();
    // The first endpoint writes a few words and then its connection ends mid-answer (no finish, no usage).
    upstream.scripts.set('first', () => [
      { write: chunk({ role: 'assistant', content: '' }) },
      { write: chunk({ content: 'The quick' }) },
      { write: chunk({ content: ' brown' }) },
    ]);
    // The second continues and finishes (reports no usage either: the gateway's estimates are used).
    upstream.scripts.set('second', () => [
      { write: chunk({ role: 'assistant', content: '' }) },
      { write: chunk({ content: ' fox' }) },
      { write: chunk({}, 'stop') },
      { write: DONE },
    ]);
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => {
        for (const id of ['up-a', 'up-b'])
          file.providers.push({ id, name: id, kind: 'openai', base_url: upstream.url, api_key: 'k', timeouts: {} });
        (file.models as unknown[]).push({
          id: 'test/continued',
          name: 'continued',
          context_length: CONTEXT,
          endpoints: [
            { provider: 'up-a', model: 'first', pricing: { prompt: PRICE, completion: PRICE }, supports_prefill: true },
            {
              provider: 'up-b',
              model: 'second',
              pricing: { prompt: PRICE, completion: PRICE },
              supports_prefill: true,
            },
          ],
        });
        (file as { routing: Record<string, unknown> }).routing.mid_stream_continuation = true;
        (file as { routing: Record<string, unknown> }).routing.tries_per_endpoint = 1;
      },
    });
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  it('an account that cannot cover the continuation is not continued, and stays within the bound', async () => {
    const accountId = await gw.createAccount(E / 1e9);
    const { key } = await gw.createKey(accountId);
    const sse = await chatStream(gw, key, { model: 'test/continued', messages: MESSAGES, max_tokens: MAX_TOKENS });
    expect(sse.status, sse.raw).toBe(200);
    const content = sse.events.flatMap((e) => (e.choices ?? []).map((c: any) => c.delta?.content ?? '')).join('');
    expect(content).toBe('The quick brown');
    expect(sse.events.some((e) => e.error !== undefined)).toBe(true);
    expect(await balanceUnits(gw, accountId)).toBeGreaterThanOrEqual(-(E - 1));
  });

  it('an account that can cover it gets one continued answer, its balance never below zero', async () => {
    const accountId = await gw.createAccount((3 * E) / 1e9);
    const { key } = await gw.createKey(accountId);
    const sse = await chatStream(gw, key, { model: 'test/continued', messages: MESSAGES, max_tokens: MAX_TOKENS });
    expect(sse.status, sse.raw).toBe(200);
    const content = sse.events.flatMap((e) => (e.choices ?? []).map((c: any) => c.delta?.content ?? '')).join('');
    expect(content).toBe('The quick brown fox');
    const cost = toUnits(sse.events.at(-1).usage.cost);
    expect(cost).toBeGreaterThan(E); // the prompt was read twice
    expect(await balanceUnits(gw, accountId)).toBe(3 * E - cost);
    expect(3 * E - cost).toBeGreaterThanOrEqual(0);
    // Both holds, the request's and the continuation's, are given back once the charge is settled.
    const gate = gw.gateway.services.chat.gate;
    await expect.poll(() => gate.held(accountId), { timeout: 2000 }).toBe(0n);
  });
});
