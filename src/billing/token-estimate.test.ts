import { describe, expect, it } from 'vitest';
import { AUDIO_PART_TOKENS, IMAGE_PART_TOKENS, OTHER_PART_TOKENS } from './media-token-estimate.js';
import {
  estimateCompletionTokens,
  estimatePromptTokens,
  PROVIDER_PROMPT_ALLOWANCE,
  promptCeilingOf,
  unknownFieldTokens,
} from './token-estimate.js';

describe('token estimates', () => {
  it('counts ordinary text with the tokenizer, special-token strings as text', () => {
    expect(estimateCompletionTokens('Hello world, this is a test.')).toBe(8);
    expect(estimateCompletionTokens('')).toBe(0);
    expect(estimatePromptTokens([{ role: 'user', content: '<|endoftext|> hi' }])).toBeGreaterThan(4);
  });

  it('stays linear on hostile input (long runs without spaces, megabytes of text)', () => {
    const run = 'a'.repeat(30_000);
    expect(estimateCompletionTokens(run)).toBeGreaterThan(1000);
    expect(estimatePromptTokens([{ role: 'user', content: 'b'.repeat(4_000_000) }])).toBeGreaterThan(1_000_000);
    // Before slicing, 30 KB of one letter took ~0.6 s and 4 MB hours: the test's timeout is the guard.
  });

  it('counts images, audio and files at a fixed generous count per part, never as zero (regression: holds ignored them)', () => {
    const text = estimatePromptTokens([{ role: 'user', content: [{ type: 'text', text: 'what is this?' }] }]);
    const media = estimatePromptTokens([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'what is this?' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
          { type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } },
          { type: 'file', file: { filename: 'a.pdf', file_data: 'data:application/pdf;base64,AAAA' } },
        ],
      },
    ]);
    expect(media - text).toBe(IMAGE_PART_TOKENS + AUDIO_PART_TOKENS + OTHER_PART_TOKENS);
  });

  it('counts what the provider reads beside the messages: tools, a named tool choice, a response schema, names (regression: a large json_schema was held at nothing)', () => {
    const messages = [{ role: 'user', content: 'fill it' }];
    const bare = estimatePromptTokens(messages);
    const schema = { type: 'object', description: 'field '.repeat(1000) };
    const withSchema = estimatePromptTokens(messages, {
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema } },
    });
    expect(withSchema - bare).toBeGreaterThan(1000);
    const tool = { type: 'function', function: { name: 'lookup_weather_for_city' } };
    expect(estimatePromptTokens(messages, { tool_choice: tool })).toBeGreaterThan(bare + 5);
    // The plain words are the request's framing, not text.
    expect(estimatePromptTokens(messages, { tool_choice: 'auto', response_format: 'text' })).toBe(bare);
    expect(
      estimatePromptTokens([{ role: 'user', content: 'hi', name: 'a_rather_long_participant_name' }]),
    ).toBeGreaterThan(estimatePromptTokens([{ role: 'user', content: 'hi' }]) + 3);
  });

  it('counts fields no schema knows, which an endpoint may read as prompt (vLLM documents), as their text (for the hold)', () => {
    const messages = [{ role: 'user', content: 'answer from the documents' }];
    const bare = estimatePromptTokens(messages);
    const documents = Array.from({ length: 20 }, (_, i) => ({ title: `doc ${i}`, text: 'evidence '.repeat(100) }));
    expect(bare).toBeLessThan(20);
    expect(unknownFieldTokens([documents])).toBeGreaterThan(2000);
    expect(unknownFieldTokens(['a system addendum '.repeat(100)])).toBeGreaterThan(200);
    // Numbers and booleans are settings, not text.
    expect(unknownFieldTokens([42, true, null])).toBe(0);
  });

  it('estimates a text past 32 KB from samples of its density, not at a third of its length', () => {
    // One token per character in our tokenizer ("ꙮ" is three): 33,600 characters are ~33,600 tokens or more.
    const dense = 'ꙮ'.repeat(33_600);
    expect(estimateCompletionTokens(dense)).toBeGreaterThanOrEqual(33_600);
    // Ordinary prose keeps the floor of one token per three characters.
    const prose = 'The quick brown fox jumps over the lazy dog. '.repeat(1000);
    expect(estimateCompletionTokens(prose)).toBe(Math.ceil(prose.length / 3));
  });
});

describe('legacy function calling', () => {
  it('counts an assistant function_call and the top-level functions as prompt, as tool_calls and tools are', () => {
    const args = JSON.stringify({ rows: 'row '.repeat(2000) });
    const plain = [{ role: 'user', content: 'hi' }];
    const withCall = [...plain, { role: 'assistant', content: null, function_call: { name: 'rows', arguments: args } }];
    expect(estimatePromptTokens(withCall) - estimatePromptTokens(plain)).toBeGreaterThan(2000);
    const functions = [{ name: 'rows', parameters: { type: 'object', description: 'word '.repeat(500) } }];
    expect(estimatePromptTokens(plain, { functions }) - estimatePromptTokens(plain)).toBeGreaterThan(500);
  });
});

describe('the prompt ceiling', () => {
  it('is the bytes of what is sent — every message whole, reasoning and legacy calls included, and the definitions — plus the allowance', () => {
    const details = [
      { type: 'reasoning.text', text: 'x'.repeat(50_000), signature: 'S', format: 'anthropic-claude-v1' },
    ];
    const messages = [
      { role: 'user', content: 'తెలుగు '.repeat(1000) },
      { role: 'assistant', content: null, reasoning_details: details },
      {
        role: 'assistant',
        content: null,
        function_call: { name: 'rows', arguments: JSON.stringify({ rows: 'r'.repeat(9000) }) },
      },
    ];
    const tools = [{ type: 'function', function: { name: 'rows', parameters: { type: 'object' } } }];
    const bytes =
      messages.reduce((sum, m) => sum + Buffer.byteLength(JSON.stringify(m)), 0) + JSON.stringify(tools).length;
    expect(promptCeilingOf(messages, { tools, response_format: undefined })).toBe(bytes + PROVIDER_PROMPT_ALLOWANCE);
    // Telugu is 3 bytes a character: several times o200k's count (which an older tokenizer needs).
    expect(promptCeilingOf(messages.slice(0, 1))!).toBeGreaterThan(8 * estimatePromptTokens(messages.slice(0, 1)));
  });

  it('is none when a message carries media (its real count can be anything up to the context)', () => {
    const messages = [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is this?' },
          { type: 'file', file: { file_data: 'x' } },
        ],
      },
    ];
    expect(promptCeilingOf(messages)).toBeNull();
  });
});
