/**
 * An OpenAI-compatible upstream's `reasoning_content` (DeepSeek's API, some vLLM versions) reaches
 * the caller as `reasoning`, the field OpenRouter's clients read — streamed, and non-streamed from the
 * upstream stream, where it was dropped altogether — and `reasoning.exclude` hides reasoning on these
 * endpoints as it does on the native ones, where the endpoint lists `reasoning` (it reached the caller).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseOpenAiCompletion } from '../src/providers/openai/parse-completion.js';
import { chat, chatStream, type TestGateway } from './helpers/gateway.js';
import {
  DONE,
  chunk,
  startGatewayWith,
  startScriptedUpstream,
  usageChunk,
  type ScriptedUpstream,
} from './helpers/scripted-upstream.js';

let up: ScriptedUpstream;
let gw: TestGateway;
let key: string;

beforeAll(async () => {
  up = await startScriptedUpstream();
  up.scripts.set('thinker', () => [
    { write: chunk({ role: 'assistant', content: null, reasoning_content: 'Let me ' }) },
    { write: chunk({ reasoning_content: 'think.' }) },
    { write: chunk({ content: 'Forty-two.' }) },
    { write: chunk({}, 'stop') + usageChunk() + DONE },
  ]);
  // `reasoning` (exclude included) is honoured on endpoints that list it, as on the native ones.
  gw = await startGatewayWith(up, ['thinker'], {
    supportedParameters: ['max_tokens', 'temperature', 'tools', 'tool_choice', 'reasoning'],
  });
  key = (await gw.createKey(await gw.createAccount(5))).key;
});
afterAll(async () => {
  await gw?.close();
  await up?.close();
});

const ask = (extra: Record<string, unknown> = {}) => ({
  model: 'scripted/thinker',
  messages: [{ role: 'user', content: 'hi' }],
  ...extra,
});

describe('reasoning_content from an OpenAI-compatible upstream', () => {
  it('streamed: relayed as reasoning', async () => {
    const r = await chatStream(gw, key, ask());
    const deltas = r.events.map((e) => e.choices?.[0]?.delta ?? {});
    expect(deltas.map((d) => d.reasoning ?? '').join('')).toBe('Let me think.');
    expect(deltas.some((d) => 'reasoning_content' in d)).toBe(false);
  });

  it('non-streamed: the message has it as reasoning', async () => {
    const r = await chat(gw, key, ask());
    expect(r.status, r.text).toBe(200);
    expect(r.json.choices[0].message).toMatchObject({ content: 'Forty-two.', reasoning: 'Let me think.' });
  });

  it('reasoning.exclude: neither streamed nor non-streamed answers carry it', async () => {
    const streamed = await chatStream(gw, key, ask({ reasoning: { exclude: true } }));
    expect(streamed.raw).not.toContain('Let me');
    expect(streamed.raw).toContain('Forty-two.');
    const plain = await chat(gw, key, ask({ reasoning: { exclude: true } }));
    expect(plain.json.choices[0].message.content).toBe('Forty-two.');
    expect(plain.json.choices[0].message).not.toHaveProperty('reasoning');
  });

  it('a plain (non-streamed) upstream answer is renamed the same way', () => {
    const parsed = parseOpenAiCompletion({
      id: 'x',
      choices: [
        { index: 0, message: { role: 'assistant', content: 'Hi', reasoning_content: 'hmm' }, finish_reason: 'stop' },
      ],
    });
    expect('kind' in parsed).toBe(false);
    if ('kind' in parsed) return;
    expect(parsed.choices[0]!.message).toMatchObject({ content: 'Hi', reasoning: 'hmm' });
    expect(parsed.choices[0]!.message).not.toHaveProperty('reasoning_content');
  });
});
