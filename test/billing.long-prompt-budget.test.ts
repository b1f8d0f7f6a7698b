/**
 * A long prompt that fits the context leaves the completion room (an outside checker's finding): the
 * prompt's upper-bound estimate (long texts at no less than one token per three characters, for
 * holds) used to decide the context left, so ~70k tokens of prose on a 100k-context model were sent
 * upstream with `max_tokens: 1` — over the caller's own `max_tokens` too — and answered in one token.
 * The hold still prices the prompt at its upper bound.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { estimatePromptTokenRange } from '../src/billing/token-estimate.js';
import { chat, type TestGateway } from './helpers/gateway.js';
import {
  chunk,
  DONE,
  startGatewayWith,
  startScriptedUpstream,
  usageChunk,
  type ScriptedUpstream,
} from './helpers/scripted-upstream.js';

const CONTEXT = 100_000;
const PROSE = 'The quick brown fox jumps over the lazy dog. '.repeat(7000); // 315,000 characters, ~70k o200k tokens
const MESSAGES = [{ role: 'user', content: PROSE }];

describe('the completion room a long prompt leaves', () => {
  let upstream: ScriptedUpstream;
  let gw: TestGateway;
  const sent: Record<string, unknown>[] = [];

  beforeAll(async () => {
    upstream = await startScriptedUpstream();
    upstream.scripts.set('prose', (body) => {
      sent.push(body);
      return [
        { write: chunk({ role: 'assistant', content: 'ok' }) },
        { write: chunk({}, 'stop') },
        { write: usageChunk(70_000, 1) },
        { write: DONE },
      ];
    });
    gw = await startGatewayWith(upstream, ['prose'], {
      contextLength: CONTEXT,
      maxCompletionTokens: null,
      bodyLimitBytes: 1024 * 1024,
    });
  });
  afterAll(async () => {
    await gw?.close();
    await upstream?.close();
  });

  it('the estimate: an upper bound past the context, a likely size within it', () => {
    const range = estimatePromptTokenRange(MESSAGES);
    expect(range.upper).toBeGreaterThan(CONTEXT); // 315,000 / 3
    expect(range.likely).toBeLessThan(80_000);
    expect(range.likely).toBeGreaterThan(60_000);
  });

  it("sends the caller's max_tokens, and without one the default, not one token", async () => {
    const account = await gw.createAccount(100);
    const { key } = await gw.createKey(account);
    const body = { model: 'scripted/prose', messages: MESSAGES };
    const first = await chat(gw, key, { ...body, max_tokens: 500 });
    expect(first.status, first.text).toBe(200);
    expect(sent.at(-1)?.max_tokens).toBe(500);
    expect((await chat(gw, key, body)).status).toBe(200);
    expect(sent.at(-1)?.max_tokens).toBe(4096);
    // A caller asking for more than the likely room gets that room.
    const likely = estimatePromptTokenRange(MESSAGES).likely;
    expect((await chat(gw, key, { ...body, max_tokens: 50_000 })).status).toBe(200);
    expect(sent.at(-1)?.max_tokens).toBe(CONTEXT - likely);
  });
});
