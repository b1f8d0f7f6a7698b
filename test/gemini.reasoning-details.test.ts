/**
 * Gemini thinking through the gateway, end to end:
 * - OpenRouter's `reasoning` request field (`max_tokens`, `effort`) reaches Gemini as
 *   `generationConfig.thinkingConfig { thinkingBudget, includeThoughts }` when the endpoint lists
 *   `reasoning` in its supported_parameters.
 * - Thoughts and thought signatures come back as `reasoning_details` of format `google-gemini-v1`
 *   (as OpenRouter gives them), folded into one detail per thought for a non-streamed caller.
 * - With @openrouter/ai-sdk-provider, which rebuilds tool calls from id, name and arguments and keeps
 *   only `reasoning_details`, a function call's signature still reaches Gemini on the next turn
 *   (Gemini 3 refuses a call sent back without it: "Function call is missing a thought_signature").
 */
import { createOpenRouter } from '@openrouter/ai-sdk-provider';
import { generateText, jsonSchema, stepCountIs, tool } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, chatStream, type TestGateway } from './helpers/gateway.js';
import {
  geminiSse,
  startNativeGateway,
  startScriptedProvider,
  type ScriptedProvider,
} from './helpers/scripted-native-provider.js';

const FAST = { connect_ms: 2000, first_token_ms: 2000, idle_ms: 800, response_ms: 5000 };

describe('Gemini thinking and reasoning_details', () => {
  let upstream: ScriptedProvider;
  let gw: TestGateway;
  let key: string;

  beforeAll(async () => {
    upstream = await startScriptedProvider();
    upstream.scripts.set('gemini-think', (body) => {
      const contents = (body.contents ?? []) as { parts: Record<string, unknown>[] }[];
      const answered = contents.some((c) => c.parts.some((p) => 'functionResponse' in p));
      if (!answered)
        return [
          geminiSse({
            candidates: [
              {
                content: {
                  role: 'model',
                  parts: [
                    { functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: 'GSIG-1' },
                  ],
                },
                finishReason: 'STOP',
                index: 0,
              },
            ],
            usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 },
            responseId: 'resp-think',
          }),
        ];
      return [
        geminiSse({
          candidates: [{ content: { role: 'model', parts: [{ text: 'It is 18C.' }] }, finishReason: 'STOP', index: 0 }],
          usageMetadata: { promptTokenCount: 20, candidatesTokenCount: 5, totalTokenCount: 25 },
          responseId: 'resp-think-2',
        }),
      ];
    });
    // A thought streamed over two events, then a signed answer.
    upstream.scripts.set('gemini-thoughts', () => [
      geminiSse({
        candidates: [{ content: { role: 'model', parts: [{ text: 'Let me ', thought: true }] }, index: 0 }],
        responseId: 'resp-thoughts',
      }),
      geminiSse({
        candidates: [{ content: { role: 'model', parts: [{ text: 'think.', thought: true }] }, index: 0 }],
        responseId: 'resp-thoughts',
      }),
      geminiSse({
        candidates: [
          {
            content: { role: 'model', parts: [{ text: 'Done.', thoughtSignature: 'GSIG-TEXT' }] },
            finishReason: 'STOP',
            index: 0,
          },
        ],
        usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 2, thoughtsTokenCount: 3, totalTokenCount: 10 },
        responseId: 'resp-thoughts',
      }),
    ]);
    gw = await startNativeGateway(upstream, {
      providers: [{ id: 'gem', kind: 'gemini' }],
      models: [
        {
          id: 'native/gemini-think',
          endpoints: [
            {
              provider: 'gem',
              model: 'gemini-think',
              supported_parameters: ['max_tokens', 'tools', 'tool_choice', 'reasoning', 'include_reasoning'],
            } as never,
          ],
        },
        {
          id: 'native/gemini-thoughts',
          endpoints: [{ provider: 'gem', model: 'gemini-thoughts', supported_parameters: ['reasoning'] } as never],
        },
      ],
      timeouts: FAST,
    });
    key = (await gw.createKey(await gw.createAccount(10))).key;
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  it('`reasoning: { max_tokens }` reaches Gemini as generationConfig.thinkingConfig', async () => {
    upstream.requests.length = 0;
    const r = await chat(gw, key, {
      model: 'native/gemini-think',
      messages: [{ role: 'user', content: 'Hi' }],
      reasoning: { max_tokens: 1024 },
    });
    expect(r.status, r.text).toBe(200);
    const sent = upstream.requests.at(-1)!.body as { generationConfig?: Record<string, unknown> };
    expect(sent.generationConfig?.thinkingConfig, JSON.stringify(sent)).toMatchObject({
      thinkingBudget: 1024,
      includeThoughts: true,
    });
  });

  it('`reasoning: { effort }` is a share of the completion limit, which is never raised', async () => {
    upstream.requests.length = 0;
    const r = await chat(gw, key, {
      model: 'native/gemini-think',
      messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 1000,
      reasoning: { effort: 'high', exclude: true },
    });
    expect(r.status, r.text).toBe(200);
    const sent = upstream.requests.at(-1)!.body as { generationConfig?: Record<string, unknown> };
    expect(sent.generationConfig).toMatchObject({
      maxOutputTokens: 1000,
      thinkingConfig: { thinkingBudget: 800, includeThoughts: false },
    });
  });

  it('a non-streamed answer carries the thought as one reasoning.text detail and the signature encrypted', async () => {
    const r = await chat(gw, key, {
      model: 'native/gemini-thoughts',
      messages: [{ role: 'user', content: 'Hi' }],
      reasoning: { max_tokens: 100 },
    });
    expect(r.status, r.text).toBe(200);
    const message = (JSON.parse(r.text) as { choices: { message: Record<string, unknown> }[] }).choices[0]!.message;
    expect(message).toMatchObject({ content: 'Done.', reasoning: 'Let me think.' });
    expect(message.reasoning_details).toEqual([
      { type: 'reasoning.text', text: 'Let me think.', format: 'google-gemini-v1', index: 0 },
      { type: 'reasoning.encrypted', data: 'GSIG-TEXT', format: 'google-gemini-v1', index: 1 },
    ]);
  });

  it('reasoning.exclude: thoughts Gemini sends anyway are not returned, streamed or not; the signature is kept', async () => {
    const ask = {
      model: 'native/gemini-thoughts',
      messages: [{ role: 'user', content: 'Hi' }],
      reasoning: { max_tokens: 100, exclude: true },
    };
    const r = await chat(gw, key, ask);
    expect(r.status, r.text).toBe(200);
    const message = (JSON.parse(r.text) as { choices: { message: Record<string, unknown> }[] }).choices[0]!.message;
    expect(message.content).toBe('Done.');
    expect(message.reasoning).toBeUndefined();
    expect(message.reasoning_details).toEqual([
      { type: 'reasoning.encrypted', data: 'GSIG-TEXT', format: 'google-gemini-v1', index: 0 },
    ]);
    const s = await chatStream(gw, key, ask);
    expect(s.status, s.raw).toBe(200);
    expect(s.raw).not.toContain('Let me think');
    expect(s.events.map((e) => e.choices?.[0]?.delta?.content ?? '').join('')).toBe('Done.');
  });

  it('@openrouter/ai-sdk-provider tool loop: the thought signature reaches Gemini on the next turn', async () => {
    upstream.requests.length = 0;
    const openrouter = createOpenRouter({ baseURL: gw.api, apiKey: key });
    const result = await generateText({
      model: openrouter('native/gemini-think'),
      prompt: 'Weather in Paris?',
      maxRetries: 0,
      stopWhen: stepCountIs(3),
      tools: {
        get_weather: tool({
          inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } } }),
          execute: async () => ({ temperature: 18 }),
        }),
      },
    });
    expect(result.text).toBe('It is 18C.');
    expect(upstream.requests).toHaveLength(2);
    const contents = upstream.requests[1]!.body.contents as { role: string; parts: Record<string, unknown>[] }[];
    const call = contents.flatMap((c) => c.parts).find((p) => 'functionCall' in p);
    expect(call, JSON.stringify(contents)).toMatchObject({ thoughtSignature: 'GSIG-1' });
  });
});
