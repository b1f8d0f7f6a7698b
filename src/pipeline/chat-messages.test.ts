import { describe, expect, it } from 'vitest';
import { TollgateError } from '../core/errors.js';
import { validate } from './chat-completion.js';
import { findMessagesProblem, withEmptyAssistantText } from './chat-messages.js';
import { formatInputPath } from './input-path.js';

const refusal = (body: unknown): string => {
  try {
    validate(body);
  } catch (error) {
    expect(error).toBeInstanceOf(TollgateError);
    expect((error as TollgateError).code).toBe('request.invalid_body');
    return (error as TollgateError).message;
  }
  throw new Error('accepted');
};
const withMessages = (messages: unknown[]) => ({ model: 'm', messages });
const at = (messages: unknown) => {
  const found = findMessagesProblem(messages);
  return found === null ? null : `${formatInputPath(['messages', ...found.path])}: ${found.message}`;
};

describe('chat message shapes per role', () => {
  it('accepts every role in its documented shape, and unknown fields inside messages and at the top level', () => {
    const body = {
      model: 'm',
      future_option: { anything: true },
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'developer', content: [{ type: 'text', text: 'rules', cache_control: { type: 'ephemeral' } }] },
        {
          role: 'user',
          name: 'ana',
          content: [
            { type: 'text', text: 'look' },
            { type: 'image_url', image_url: { url: 'https://x/img.png', detail: 'low' } },
            { type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } },
            { type: 'file', file: { filename: 'a.pdf', file_data: 'data:application/pdf;base64,AAAA' } },
          ],
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: '42' },
        { role: 'assistant', content: [{ type: 'text', text: 'done' }], reasoning_details: [] },
        { role: 'user', content: '' },
      ],
    };
    expect(validate(body).messages).toHaveLength(7);
    expect((validate(body) as Record<string, unknown>).future_option).toEqual({ anything: true });
  });

  it('refuses each missing required field and mistyped part, naming the exact path', () => {
    expect(at([{ role: 'user' }])).toBe('messages[0].content: is required');
    expect(
      at([
        { role: 'user', content: 'a' },
        { role: 'user', content: [{ type: 'text', text: 42 }] },
      ]),
    ).toBe('messages[1].content[0].text: must be a string');
    expect(at([{ role: 'user', content: [{ type: 'image_url', image_url: { url: 7 } }] }])).toBe(
      'messages[0].content[0].image_url.url: must be a string',
    );
    expect(at([{ role: 'user', content: [{ type: 'image_url' }] }])).toMatch(
      /^messages\[0\]\.content\[0\]\.image_url: /,
    );
    expect(at([{ role: 'user', content: [{ type: 'hologram' }] }])).toMatch(
      /^messages\[0\]\.content\[0\]\.type: "hologram" is not allowed/,
    );
    expect(at([{ role: 'user', content: [{ text: 'no type' }] }])).toBe(
      'messages[0].content[0].type: must be a string',
    );
    expect(at([{ role: 'user', content: 42 }])).toMatch(/^messages\[0\]\.content: must be a string or an array/);
    expect(at([{ role: 'system', content: [{ type: 'image_url', image_url: { url: 'u' } }] }])).toMatch(
      /^messages\[0\]\.content\[0\]\.type: /,
    );
    expect(at([{ role: 'tool', content: 'r' }])).toBe('messages[0].tool_call_id: is required');
    expect(at([{ role: 'tool', tool_call_id: 'c' }])).toBe('messages[0].content: is required');
    expect(
      at([{ role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: {} } }] }]),
    ).toBe('messages[0].tool_calls[0].function.arguments: must be a string');
    expect(at([{ role: 'wizard', content: 'hi' }])).toMatch(/^messages\[0\]\.role: "wizard" is not a role/);
    expect(at([{ content: 'hi' }])).toBe('messages[0].role: is required');
    expect(at([{ role: 'user', content: 'hi', name: 5 }])).toBe('messages[0].name: must be a string');
    expect(at(['hello'])).toBe('messages[0]: must be a message object');
    expect(at([])).toBe('messages: must be a non-empty array of messages');
  });

  it("the 400 names the path in the caller's notation", () => {
    expect(
      refusal(
        withMessages([
          { role: 'user', content: 'a' },
          { role: 'user', content: 'b' },
          { role: 'user', content: 'c' },
          { role: 'user', content: [{ type: 'text', text: 42 }] },
        ]),
      ),
    ).toBe('Invalid request: messages[3].content[0].text: must be a string');
    expect(
      refusal({
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
        tools: [{ type: 'function', function: { name: 'f' } }, { type: 5 }],
      }),
    ).toBe('Invalid request: tools[1].type: Invalid input: expected string, received number');
  });

  it('stops at the first invalid message: later messages are never read', () => {
    const messages: unknown[] = [{ role: 'user', content: 'fine' }, { role: 'user' }];
    for (let i = 2; i < 10; i++) {
      Object.defineProperty(messages, i, {
        enumerable: true,
        get() {
          throw new Error(`message ${i} was read`);
        },
      });
    }
    expect(refusal(withMessages(messages))).toBe('Invalid request: messages[1].content: is required');
  });

  it('checks the length of a bounded list before its items: one problem, not one per item', () => {
    const message = refusal({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      tools: Array.from({ length: 50_000 }, () => 7),
    });
    expect(message).toBe('Invalid request: tools: must have at most 128 items');
    expect(
      refusal({
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
        logit_bias: Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [String(i), 'x'])),
      }),
    ).toBe('Invalid request: logit_bias: must have at most 300 entries');
  });

  it('takes an empty assistant turn (no content, no tool calls) as an empty text, and images in a tool result', () => {
    const messages = [
      { role: 'user' as const, content: 'a' },
      { role: 'assistant' as const, content: null },
      { role: 'assistant' as const, tool_calls: [] },
      { role: 'user' as const, content: 'b' },
    ];
    expect(findMessagesProblem(messages)).toBeNull();
    expect(withEmptyAssistantText(messages).map((m) => m.content)).toEqual(['a', '', '', 'b']);
    const toolResult = [
      {
        role: 'tool' as const,
        tool_call_id: 'c',
        content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AA' } }],
      },
    ];
    expect(findMessagesProblem(toolResult)).toBeNull();
  });
});
