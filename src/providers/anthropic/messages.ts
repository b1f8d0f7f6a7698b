/**
 * OpenAI chat messages → Anthropic Messages API `system` and `messages`. Anthropic keeps the system
 * prompt out of the message list, carries tool calls and results as content blocks, and wants
 * user and assistant turns to alternate, so consecutive turns of one role are merged.
 */
import { isRecord, stringOrNull } from '../json-shape.js';
import { contentParts, parseDataUrl, parseToolArguments, readToolCalls, type InputPart } from '../openai-input.js';

export type AnthropicBlock = Record<string, unknown>;

export interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: AnthropicBlock[];
}

export interface AnthropicPrompt {
  system: AnthropicBlock[];
  messages: AnthropicMessage[];
}

export function toAnthropicPrompt(messages: unknown): AnthropicPrompt {
  const prompt: AnthropicPrompt = { system: [], messages: [] };
  if (!Array.isArray(messages)) return prompt;
  for (const message of messages) {
    if (!isRecord(message)) continue;
    switch (message.role) {
      case 'system':
      case 'developer':
        // Anthropic has one system prompt; instructions found later in the list join it.
        prompt.system.push(...contentBlocks(contentParts(message.content)).filter((b) => b.type === 'text'));
        break;
      case 'user':
        append(prompt.messages, 'user', contentBlocks(contentParts(message.content)));
        break;
      case 'assistant':
        append(prompt.messages, 'assistant', assistantBlocks(message));
        break;
      case 'tool':
        // Tool results travel in the next user turn, before anything the user says there.
        append(prompt.messages, 'user', [toolResultBlock(message)]);
        break;
    }
  }
  return prompt;
}

function append(messages: AnthropicMessage[], role: AnthropicMessage['role'], blocks: AnthropicBlock[]): void {
  if (blocks.length === 0) return; // Anthropic rejects empty turns
  const last = messages.at(-1);
  if (last?.role === role) last.content.push(...blocks);
  else messages.push({ role, content: blocks });
}

function contentBlocks(parts: InputPart[]): AnthropicBlock[] {
  const blocks: AnthropicBlock[] = [];
  for (const part of parts) {
    if (part.kind === 'text') {
      if (part.text === '') continue; // empty text blocks are rejected
      // Callers mark prompt-cache breakpoints on parts, as OpenRouter allows; Anthropic reads the same field.
      blocks.push(
        part.cacheControl === undefined
          ? { type: 'text', text: part.text }
          : { type: 'text', text: part.text, cache_control: part.cacheControl },
      );
      continue;
    }
    const inline = parseDataUrl(part.url);
    const source =
      inline === null
        ? { type: 'url', url: part.url }
        : { type: 'base64', media_type: inline.mediaType, data: inline.data };
    blocks.push({ type: 'image', source });
  }
  return blocks;
}

function assistantBlocks(message: Record<string, unknown>): AnthropicBlock[] {
  const blocks = contentBlocks(contentParts(message.content)).filter((b) => b.type === 'text');
  for (const call of readToolCalls(message)) {
    blocks.push({ type: 'tool_use', id: call.id, name: call.name, input: parseToolArguments(call.arguments) });
  }
  return blocks;
}

function toolResultBlock(message: Record<string, unknown>): AnthropicBlock {
  const block: AnthropicBlock = { type: 'tool_result', tool_use_id: stringOrNull(message.tool_call_id) ?? '' };
  if (typeof message.content === 'string') block.content = message.content;
  else {
    const content = contentBlocks(contentParts(message.content));
    if (content.length > 0) block.content = content;
  }
  return block;
}
