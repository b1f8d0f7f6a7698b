/**
 * The hold of a prompt with a message longer than 32 KB (estimated from samples of its token density
 * rather than tokenized whole) is not a fraction of its count in the gateway's own tokenizer: with a
 * text of one o200k token per character and a provider that counts as we do, a burst of concurrent
 * requests stays within the README's overspend bound, whose excess term is only for "a prompt longer
 * in the provider's tokenizer than in ours". (It used to be held at a third: `length / 3`.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { estimatePromptTokens } from '../src/billing/token-estimate.js';
import { balanceUnits, chatStream, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { chunk, DONE, startScriptedUpstream, usageChunk, type ScriptedUpstream } from './helpers/scripted-upstream.js';
import { sqliteTarget } from './helpers/store-targets.js';

const PRICE = '0.000001'; // 1000 units per token
const TEXT = 'a1!~'.repeat(8400); // 33,600 characters, one o200k token each
const MESSAGES = [{ role: 'user', content: TEXT }];
/** The gateway's own tokenizer count of this prompt (the same text split below the 32 KB cut-off, minus that split's extra message overhead). */
const PROMPT_TOKENS =
  estimatePromptTokens([
    { role: 'user', content: TEXT.slice(0, 16_800) },
    { role: 'user', content: TEXT.slice(16_800) },
  ]) - 4;
/** What one request costs (and must hold): its prompt and a completion budget of 1 token. */
const COST = (PROMPT_TOKENS + 1) * 1000;

describe('holds of long prompts', () => {
  let upstream: ScriptedUpstream;
  let gw: TestGateway;
  beforeAll(async () => {
    upstream = await startScriptedUpstream();
    // A provider counting with o200k, slow enough for every request to be in flight at once.
    upstream.scripts.set('o200k', () => [
      { wait: 1500 },
      { write: chunk({ role: 'assistant', content: 'ok' }) },
      { write: chunk({}, 'length') },
      { write: usageChunk(PROMPT_TOKENS, 1) },
      { write: DONE },
    ]);
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => {
        file.providers.push({
          id: 'o200k',
          name: 'O200k',
          kind: 'openai',
          base_url: upstream.url,
          api_key: 'k',
          timeouts: { first_token_ms: 10_000 },
        });
        (file.models as unknown[]).push({
          id: 'test/long-prompt',
          name: 'long prompt',
          context_length: 128_000,
          endpoints: [{ provider: 'o200k', model: 'o200k', pricing: { prompt: PRICE, completion: PRICE } }],
        });
      },
    });
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  it('a burst of long-prompt requests stays within the overspend bound', async () => {
    expect(PROMPT_TOKENS).toBeGreaterThan(30_000);
    // Enough for two such requests and a bit: at most three can be admitted at once.
    const accountId = await gw.createAccount((2 * COST + 1000) / 1e9);
    const { key } = await gw.createKey(accountId);
    const results = await Promise.all(
      Array.from({ length: 10 }, () =>
        chatStream(gw, key, { model: 'test/long-prompt', messages: MESSAGES, max_tokens: 1 }),
      ),
    );
    const admitted = results.filter((r) => r.status === 200).length;
    const balance = await balanceUnits(gw, accountId);
    // Each hold must cover the prompt as the gateway's own tokenizer counts it.
    expect(admitted).toBeLessThanOrEqual(3);
    // README: balance ≥ −(e − 1 unit) when no prompt is longer in the provider's tokenizer than in ours.
    expect(balance).toBeGreaterThan(-COST);
  });
});
