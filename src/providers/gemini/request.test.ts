import { describe, expect, it } from 'vitest';
import type { EndpointTarget } from '../types.js';
import { geminiAdapter } from './adapter.js';

const target: EndpointTarget = {
  providerId: 'gemini',
  baseUrl: 'https://generativelanguage.googleapis.com/v1beta',
  apiKey: 'AIza-test-123',
  upstreamModel: 'gemini-2.5-flash',
  extraHeaders: {},
};

function bodyOf(callerBody: Record<string, unknown>, stream = false): Record<string, unknown> {
  return JSON.parse(geminiAdapter.buildRequest(target, callerBody, stream).body) as Record<string, unknown>;
}

const LEGACY_FUNCTION_TURNS = [
  { role: 'user', content: 'Weather in Paris?' },
  { role: 'assistant', content: null, function_call: { name: 'get_weather', arguments: '{"location":"Paris"}' } },
  { role: 'function', name: 'get_weather', content: '{"celsius":18}' },
];

const WEATHER_PARAMETERS = {
  type: 'object',
  properties: { location: { type: 'string' } },
  required: ['location'],
  additionalProperties: false,
};
const TOOLS = [
  {
    type: 'function',
    function: { name: 'get_weather', description: 'Current weather', parameters: WEATHER_PARAMETERS },
  },
  { type: 'function', function: { name: 'get_time' } },
];

describe('geminiAdapter.buildRequest', () => {
  it('a conversation with no user turn (a system prompt alone) sends the instructions as the user turn', () => {
    const body = bodyOf({ messages: [{ role: 'system', content: 'Say hi.' }] });
    expect(body.contents).toEqual([{ role: 'user', parts: [{ text: 'Say hi.' }] }]);
    expect(body.systemInstruction).toBeUndefined();
    const kept = bodyOf({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ],
    });
    expect(kept.systemInstruction).toEqual({ parts: [{ text: 'Be brief.' }] });
  });

  it("sends OpenAI's deprecated function_call and function result as functionCall and functionResponse", () => {
    expect(bodyOf({ messages: LEGACY_FUNCTION_TURNS }).contents).toEqual([
      { role: 'user', parts: [{ text: 'Weather in Paris?' }] },
      { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { location: 'Paris' } } }] },
      { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { celsius: 18 } } }] },
    ]);
  });

  it('posts to generateContent, or streamGenerateContent with SSE, with the key header', () => {
    const plain = geminiAdapter.buildRequest(target, { messages: [] }, false);
    expect(plain.url).toBe('https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent');
    expect(plain.headers).toEqual({
      'content-type': 'application/json',
      accept: 'application/json',
      'accept-encoding': 'identity',
      'x-goog-api-key': 'AIza-test-123',
    });
    const streamed = geminiAdapter.buildRequest(
      { ...target, baseUrl: 'http://127.0.0.1:9/v1beta/' },
      { messages: [] },
      true,
    );
    expect(streamed.url).toBe('http://127.0.0.1:9/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
    expect(streamed.headers.accept).toBe('text/event-stream');
  });

  it('takes a resource name as the model and sends no key when there is none', () => {
    const req = geminiAdapter.buildRequest(
      { ...target, upstreamModel: 'tunedModels/my-model-7', apiKey: null },
      { messages: [] },
      false,
    );
    expect(req.url).toBe('https://generativelanguage.googleapis.com/v1beta/tunedModels/my-model-7:generateContent');
    expect(req.headers).not.toHaveProperty('x-goog-api-key');
  });

  it('moves system messages to systemInstruction and names the assistant "model"', () => {
    const body = bodyOf({
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'developer', content: [{ type: 'text', text: 'Answer in French.' }] },
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Bonjour.' },
        { role: 'user', content: 'Again' },
        { role: 'user', content: [{ type: 'text', text: 'please' }] },
      ],
    });
    expect(body.systemInstruction).toEqual({ parts: [{ text: 'You are terse.' }, { text: 'Answer in French.' }] });
    expect(body.contents).toEqual([
      { role: 'user', parts: [{ text: 'Hi' }] },
      { role: 'model', parts: [{ text: 'Bonjour.' }] },
      { role: 'user', parts: [{ text: 'Again' }, { text: 'please' }] },
    ]);
    expect(body).not.toHaveProperty('generationConfig');
  });

  it('maps sampling parameters to generationConfig and drops OpenRouter fields', () => {
    const body = bodyOf({
      messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 100,
      temperature: 0.4,
      top_p: 0.8,
      top_k: 20,
      stop: ['END'],
      n: 2,
      seed: 11,
      presence_penalty: 0.1,
      frequency_penalty: 0.2,
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } },
      models: ['a/b'],
      provider: { order: ['gemini'] },
    });
    expect(body).toEqual({
      contents: [{ role: 'user', parts: [{ text: 'Hi' }] }],
      generationConfig: {
        maxOutputTokens: 100,
        temperature: 0.4,
        topP: 0.8,
        topK: 20,
        stopSequences: ['END'],
        candidateCount: 2,
        seed: 11,
        presencePenalty: 0.1,
        frequencyPenalty: 0.2,
        responseMimeType: 'application/json',
        responseJsonSchema: { type: 'object' },
      },
    });
    expect(
      bodyOf({ messages: [], max_completion_tokens: 7, stop: 'x', response_format: { type: 'json_object' } })
        .generationConfig,
    ).toEqual({
      maxOutputTokens: 7,
      stopSequences: ['x'],
      responseMimeType: 'application/json',
    });
  });

  it('turns image parts into inlineData or fileData', () => {
    const body = bodyOf({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Compare' },
            { type: 'image_url', image_url: { url: 'data:image/webp;base64,UklGRg==' } },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.png?size=large' } },
          ],
        },
      ],
    });
    expect(body.contents).toEqual([
      {
        role: 'user',
        parts: [
          { text: 'Compare' },
          { inlineData: { mimeType: 'image/webp', data: 'UklGRg==' } },
          { fileData: { mimeType: 'image/png', fileUri: 'https://example.com/cat.png?size=large' } },
        ],
      },
    ]);
  });

  it('translates a tool round trip, naming each functionResponse after its call', () => {
    const body = bodyOf({
      messages: [
        { role: 'user', content: 'Weather and time in Paris?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'call_a',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"location":"Paris"}' },
              extra_content: { google: { thought_signature: 'sig-1' } },
            },
            { id: 'call_b', type: 'function', function: { name: 'get_time', arguments: '{}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_b', content: '14:05' },
        { role: 'tool', tool_call_id: 'call_a', content: '{"temp_c":18}' },
        { role: 'user', content: 'Thanks' },
      ],
    });
    expect(body.contents).toEqual([
      { role: 'user', parts: [{ text: 'Weather and time in Paris?' }] },
      {
        role: 'model',
        parts: [
          { functionCall: { name: 'get_weather', args: { location: 'Paris' } }, thoughtSignature: 'sig-1' },
          { functionCall: { name: 'get_time', args: {} } },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { name: 'get_time', response: { content: '14:05' } } },
          { functionResponse: { name: 'get_weather', response: { temp_c: 18 } } },
          { text: 'Thanks' },
        ],
      },
    ]);
  });

  it("puts the google-gemini-v1 signatures of an assistant's reasoning_details back on their parts", () => {
    const callA = { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{}' } };
    const callB = { id: 'call_b', type: 'function', function: { name: 'get_time', arguments: '{}' } };
    const encrypted = (data: string, id?: string, format = 'google-gemini-v1') => ({
      type: 'reasoning.encrypted',
      data,
      ...(id === undefined ? {} : { id }),
      format,
      index: 0,
    });
    const modelTurn = (assistant: Record<string, unknown>) =>
      (
        bodyOf({
          messages: [
            { role: 'user', content: 'Hi' },
            { role: 'assistant', ...assistant },
          ],
        }).contents as unknown[]
      )[1];
    // As @openrouter/ai-sdk-provider sends a call back: id, name, arguments, and the details.
    expect(
      modelTurn({
        content: null,
        tool_calls: [callA, callB],
        reasoning: 'Thinking',
        reasoning_details: [
          { type: 'reasoning.text', text: 'Thinking', format: 'google-gemini-v1', index: 0 },
          encrypted('SIG-B', 'call_b'),
          encrypted('SIG-X', 'call_unknown'),
          encrypted('SIG-OTHER', 'call_a', 'anthropic-claude-v1'),
        ],
      }),
    ).toEqual({
      role: 'model',
      parts: [
        { functionCall: { name: 'get_weather', args: {} } },
        { functionCall: { name: 'get_time', args: {} }, thoughtSignature: 'SIG-B' },
      ],
    });
    // extra_content wins over a detail for the same call.
    const signed = { ...callA, extra_content: { google: { thought_signature: 'SIG-EXTRA' } } };
    expect(
      modelTurn({ content: null, tool_calls: [signed], reasoning_details: [encrypted('SIG-A', 'call_a')] }),
    ).toEqual({
      role: 'model',
      parts: [{ functionCall: { name: 'get_weather', args: {} }, thoughtSignature: 'SIG-EXTRA' }],
    });
    // A signature naming no call came on a text part: it goes on the turn's first part...
    expect(modelTurn({ content: 'Sunny.', reasoning_details: [encrypted('SIG-T'), encrypted('SIG-T2')] })).toEqual({
      role: 'model',
      parts: [{ text: 'Sunny.', thoughtSignature: 'SIG-T' }],
    });
    // ...unless a part has one already; other formats' details are not Gemini's.
    expect(
      modelTurn({
        content: 'Sunny.',
        tool_calls: [callA],
        reasoning_details: [encrypted('SIG-T'), encrypted('SIG-A', 'call_a')],
      }),
    ).toEqual({
      role: 'model',
      parts: [{ text: 'Sunny.' }, { functionCall: { name: 'get_weather', args: {} }, thoughtSignature: 'SIG-A' }],
    });
    expect(
      modelTurn({ content: 'Sunny.', reasoning_details: [encrypted('SIG-O', undefined, 'openai-responses-v1')] }),
    ).toEqual({
      role: 'model',
      parts: [{ text: 'Sunny.' }],
    });
  });

  it('maps reasoning to thinkingConfig, keeping the thinking budget below maxOutputTokens', () => {
    const thinking = (fields: Record<string, unknown>) =>
      (bodyOf({ messages: [], max_tokens: 1000, ...fields }).generationConfig as Record<string, unknown>)
        .thinkingConfig;
    expect(thinking({})).toBeUndefined();
    expect(thinking({ reasoning: { max_tokens: 256 } })).toEqual({ thinkingBudget: 256, includeThoughts: true });
    expect(thinking({ reasoning: { max_tokens: 256, exclude: true } })).toEqual({
      thinkingBudget: 256,
      includeThoughts: false,
    });
    expect(thinking({ reasoning: { max_tokens: 5000 } })).toEqual({ thinkingBudget: 999, includeThoughts: true });
    for (const [effort, budget] of [
      ['xhigh', 950],
      ['high', 800],
      ['medium', 500],
      ['low', 200],
      ['minimal', 100],
    ] as const) {
      expect(thinking({ reasoning: { effort } })).toEqual({ thinkingBudget: budget, includeThoughts: true });
      expect(thinking({ reasoning_effort: effort })).toEqual({ thinkingBudget: budget, includeThoughts: true });
    }
    expect(thinking({ reasoning: { enabled: true } })).toEqual({ thinkingBudget: 500, includeThoughts: true });
    expect(thinking({ reasoning: { effort: 'none' } })).toEqual({ thinkingBudget: 0, includeThoughts: false });
    expect(thinking({ reasoning: { enabled: false, max_tokens: 300 } })).toEqual({
      thinkingBudget: 0,
      includeThoughts: false,
    });
    // Thinking as the model does by default, without returning the thoughts.
    expect(thinking({ reasoning: { exclude: true } })).toEqual({ includeThoughts: false });
    expect(thinking({ include_reasoning: true })).toEqual({ includeThoughts: true });
    expect(thinking({ reasoning: { effort: 'constructor' } })).toEqual({ includeThoughts: true });
    // The effort's share of a tiny limit still leaves room for the answer; maxOutputTokens is never raised.
    const tiny = bodyOf({ messages: [], max_tokens: 1, reasoning: { effort: 'xhigh' } }).generationConfig;
    expect(tiny).toEqual({ maxOutputTokens: 1, thinkingConfig: { thinkingBudget: 0, includeThoughts: true } });
  });

  it('sends the images of a tool result after its functionResponse, in the same turn', () => {
    const body = bodyOf({
      messages: [
        { role: 'user', content: 'Screenshot?' },
        {
          role: 'assistant',
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'shot', arguments: '{}' } }],
        },
        {
          role: 'tool',
          tool_call_id: 'c1',
          content: [
            { type: 'text', text: 'Here it is' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
          ],
        },
      ],
    });
    expect((body.contents as unknown[]).at(-1)).toEqual({
      role: 'user',
      parts: [
        { functionResponse: { name: 'shot', response: { content: 'Here it is' } } },
        { inlineData: { mimeType: 'image/png', data: 'AAAA' } },
      ],
    });
  });

  it('maps function tools with their JSON Schema and every tool_choice', () => {
    const base = { messages: [{ role: 'user', content: 'Hi' }], tools: TOOLS };
    expect(bodyOf(base).tools).toEqual([
      {
        functionDeclarations: [
          { name: 'get_weather', description: 'Current weather', parametersJsonSchema: WEATHER_PARAMETERS },
          { name: 'get_time' },
        ],
      },
    ]);
    expect(bodyOf(base)).not.toHaveProperty('toolConfig');
    const mode = (tool_choice: unknown) => bodyOf({ ...base, tool_choice }).toolConfig;
    expect(mode('auto')).toEqual({ functionCallingConfig: { mode: 'AUTO' } });
    expect(mode('none')).toEqual({ functionCallingConfig: { mode: 'NONE' } });
    expect(mode('required')).toEqual({ functionCallingConfig: { mode: 'ANY' } });
    expect(mode({ type: 'function', function: { name: 'get_time' } })).toEqual({
      functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_time'] },
    });
  });

  it('does not modify the caller body', () => {
    const callerBody = {
      messages: [
        { role: 'system', content: 'S' },
        { role: 'user', content: 'Hi' },
      ],
      tools: TOOLS,
      stop: 'x',
    };
    const copy = structuredClone(callerBody);
    geminiAdapter.buildRequest(target, callerBody, true);
    expect(callerBody).toEqual(copy);
  });
});
