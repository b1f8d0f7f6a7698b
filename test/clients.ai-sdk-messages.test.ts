/**
 * Conversations the official `@openrouter/ai-sdk-provider` (with `ai`) sends unmodified are served
 * (docs/api.md: where the page and the clients disagree, the clients win; `@openrouter/sdk`'s types
 * agree): a tool result carrying an image (a tool message whose content has an `image_url` part), and
 * an empty assistant turn, which the provider sends as `content: null` without tool calls.
 */
import { createOpenRouter } from '@openrouter/ai-sdk-provider';
import { generateText, type ModelMessage } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { balanceUnits, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

// A 1×1 PNG.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

describe('messages the official AI SDK provider sends', () => {
  let gw: TestGateway;
  let account: string;
  let openrouter: ReturnType<typeof createOpenRouter>;
  beforeAll(async () => {
    gw = await startTestGateway({ target: sqliteTarget });
    account = await gw.createAccount(10);
    const { key } = await gw.createKey(account);
    openrouter = createOpenRouter({ baseURL: gw.api, apiKey: key });
  });
  afterAll(() => gw?.close());

  async function served(messages: ModelMessage[]): Promise<void> {
    const before = await balanceUnits(gw, account);
    let failure: unknown = null;
    try {
      const result = await generateText({ model: openrouter('test/chat'), messages, maxRetries: 0 });
      expect(result.text.length).toBeGreaterThan(0);
    } catch (error) {
      failure = error;
    }
    const message = failure === null ? null : String((failure as { responseBody?: string }).responseBody ?? failure);
    expect(message, 'the gateway refused the conversation').toBeNull();
    expect(await balanceUnits(gw, account)).toBeLessThan(before);
  }

  it('a tool result that carries an image (tool message with an image_url part) is served', async () => {
    await served([
      { role: 'user', content: 'Take a screenshot and describe it.' },
      {
        role: 'assistant',
        content: [{ type: 'tool-call', toolCallId: 'call_1', toolName: 'screenshot', input: {} }],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'call_1',
            toolName: 'screenshot',
            output: {
              type: 'content',
              value: [
                { type: 'text', text: 'Here is the screenshot' },
                { type: 'image-data', data: PNG, mediaType: 'image/png' },
              ],
            },
          },
        ],
      },
    ]);
  });

  it('an earlier assistant turn with empty text (sent as content: null, no tool_calls) is served', async () => {
    await served([
      { role: 'user', content: 'Say nothing.' },
      { role: 'assistant', content: '' },
      { role: 'user', content: 'Now say hello.' },
    ]);
  });
});
