/**
 * OpenAI chat messages → Anthropic Messages API `system` and `messages`. Anthropic keeps the system
 * prompt out of the message list, carries tool calls and results as content blocks, and wants
 * user and assistant turns to alternate, so consecutive turns of one role are merged.
 */
import { isRecord, stringOrNull } from '../json-shape.js';
import {
  UnsendablePartError,
  contentParts,
  inlineFileData,
  isWebUrl,
  legacyFunctionsAsTools,
  parseDataUrl,
  parseToolArguments,
  readToolCalls,
  type InputPart,
} from '../openai-input.js';
import { thinkingBlocks } from './reasoning.js';

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
  const list = legacyFunctionsAsTools(messages);
  if (!Array.isArray(list)) return prompt;
  for (const message of list) {
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
  trimPrefill(prompt.messages);
  // Anthropic needs a user turn, where an OpenAI model answers a system prompt alone, or one followed by
  // a prefill: with no user turn at all, the instructions become it. (A conversation that has one, after
  // an assistant greeting, keeps its system prompt as such.)
  if (!prompt.messages.some((m) => m.role === 'user') && prompt.system.length > 0) {
    prompt.messages.unshift({ role: 'user', content: prompt.system });
    prompt.system = [];
  }
  return prompt;
}

/**
 * A trailing assistant turn is a prefill, and Anthropic refuses one that ends in whitespace ("final
 * assistant content cannot end with trailing whitespace"), where OpenAI-compatible servers take it: its
 * last text block loses its trailing whitespace (and goes, with its turn, when nothing else is left).
 */
function trimPrefill(messages: AnthropicMessage[]): void {
  const last = messages.at(-1);
  if (last?.role !== 'assistant') return;
  // Text blocks of whitespace alone at the end go, then the new last one is trimmed.
  for (let block = last.content.at(-1); block?.type === 'text' && typeof block.text === 'string';) {
    const text = block.text.trimEnd();
    if (text !== '') {
      block.text = text;
      break;
    }
    last.content.pop();
    block = last.content.at(-1);
  }
  if (last.content.length === 0) messages.pop();
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
    blocks.push(mediaBlock(part));
  }
  return blocks;
}

/**
 * An image, or a `file` part as a document (PDF, or plain text) or image block — from base64 data or
 * a URL, as Anthropic takes them. What Anthropic cannot take (audio, video, other file types, an
 * OpenAI `file_id`) refuses the request: sent without it, the answer would ignore it.
 */
function mediaBlock(part: Exclude<InputPart, { kind: 'text' }>): AnthropicBlock {
  switch (part.kind) {
    case 'image': {
      const inline = parseDataUrl(part.url);
      const source =
        inline === null
          ? { type: 'url', url: part.url }
          : { type: 'base64', media_type: inline.mediaType, data: inline.data };
      return { type: 'image', source };
    }
    case 'file':
      return fileBlock(part);
    case 'audio':
      throw new UnsendablePartError('Anthropic', 'audio');
    case 'video':
      throw new UnsendablePartError('Anthropic', 'video');
    case 'unsendable':
      throw new UnsendablePartError('Anthropic', part.what);
  }
}

function fileBlock(part: { url: string; filename: string | null }): AnthropicBlock {
  const titled = (block: AnthropicBlock): AnthropicBlock =>
    part.filename === null ? block : { ...block, title: part.filename };
  const inline = inlineFileData(part);
  if (inline === null) {
    // A URL: Anthropic fetches PDFs itself.
    if (isWebUrl(part.url)) return titled({ type: 'document', source: { type: 'url', url: part.url } });
    throw new UnsendablePartError('Anthropic', 'a file whose data is neither a data URL nor a URL');
  }
  const { mediaType, data } = inline;
  if (mediaType === 'application/pdf')
    return titled({ type: 'document', source: { type: 'base64', media_type: mediaType, data } });
  if (mediaType === 'text/plain') {
    const text = Buffer.from(data, 'base64').toString('utf8');
    return titled({ type: 'document', source: { type: 'text', media_type: mediaType, data: text } });
  }
  if (ANTHROPIC_IMAGE_TYPES.has(mediaType))
    return { type: 'image', source: { type: 'base64', media_type: mediaType, data } };
  throw new UnsendablePartError('Anthropic', `a file of type ${mediaType} (PDF, plain text and images are taken)`);
}

const ANTHROPIC_IMAGE_TYPES: ReadonlySet<string> = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);

/**
 * The assistant turn: its thinking blocks first (from `reasoning_details`, signed and unmodified, as
 * Anthropic wants them back, ahead of the text and tool calls they led to), then text, then tool_use.
 */
function assistantBlocks(message: Record<string, unknown>): AnthropicBlock[] {
  const blocks = thinkingBlocks(message.reasoning_details);
  blocks.push(...contentBlocks(contentParts(message.content)).filter((b) => b.type === 'text'));
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
