/**
 * Readers for the caller's OpenAI-format request, shared by the adapters that translate it to
 * another provider's API (Anthropic, Gemini). The body was validated at the edge; these still
 * tolerate odd shapes, skipping what they cannot read rather than throwing.
 */
import { isRecord, stringOrNull } from './json-shape.js';

export type InputPart = { kind: 'text'; text: string; cacheControl: unknown } | { kind: 'image'; url: string };

export interface InputToolCall {
  id: string;
  name: string;
  arguments: string;
  /** The whole tool call as the caller sent it, for provider extensions (e.g. Gemini's thought signature). */
  raw: Record<string, unknown>;
}

export interface InputFunctionTool {
  name: string;
  description: string | null;
  parameters: Record<string, unknown> | null;
}

export type InputToolChoice = { mode: 'auto' | 'none' | 'required' } | { mode: 'function'; name: string };

/** A message's content as parts: a string is one text part; unknown part types are skipped. */
export function contentParts(content: unknown): InputPart[] {
  if (typeof content === 'string') return [{ kind: 'text', text: content, cacheControl: undefined }];
  if (!Array.isArray(content)) return [];
  const parts: InputPart[] = [];
  for (const part of content) {
    if (!isRecord(part)) continue;
    if (part.type === 'text' && typeof part.text === 'string')
      parts.push({ kind: 'text', text: part.text, cacheControl: part.cache_control });
    const url = part.type === 'image_url' ? imageUrlOf(part.image_url) : null;
    if (url !== null) parts.push({ kind: 'image', url });
  }
  return parts;
}

/** The text of a message's content (string, or its text parts joined). */
export function contentText(content: unknown): string {
  let text = '';
  for (const part of contentParts(content)) if (part.kind === 'text') text += part.text;
  return text;
}

/** `data:image/png;base64,AAAA` → its media type and base64 payload; null for any other URL. */
export function parseDataUrl(url: string): { mediaType: string; data: string } | null {
  const match = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  return match?.[1] !== undefined && match[2] !== undefined ? { mediaType: match[1], data: match[2] } : null;
}

export function readToolCalls(message: Record<string, unknown>): InputToolCall[] {
  if (!Array.isArray(message.tool_calls)) return [];
  const calls: InputToolCall[] = [];
  for (const call of message.tool_calls) {
    if (!isRecord(call) || !isRecord(call.function)) continue;
    const name = stringOrNull(call.function.name);
    if (name === null) continue;
    calls.push({
      id: stringOrNull(call.id) ?? '',
      name,
      arguments: stringOrNull(call.function.arguments) ?? '',
      raw: call,
    });
  }
  return calls;
}

/** Tool arguments as an object; both target APIs require one, so anything else becomes `{}`. */
export function parseToolArguments(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return isRecord(value) ? value : {};
  } catch {
    return {};
  }
}

export function readFunctionTools(tools: unknown): InputFunctionTool[] {
  if (!Array.isArray(tools)) return [];
  const out: InputFunctionTool[] = [];
  for (const tool of tools) {
    if (!isRecord(tool) || tool.type !== 'function' || !isRecord(tool.function)) continue;
    const name = stringOrNull(tool.function.name);
    if (name === null) continue;
    const parameters = isRecord(tool.function.parameters) ? tool.function.parameters : null;
    out.push({ name, description: stringOrNull(tool.function.description), parameters });
  }
  return out;
}

export function readToolChoice(value: unknown): InputToolChoice | null {
  if (value === 'auto' || value === 'none' || value === 'required') return { mode: value };
  if (isRecord(value) && isRecord(value.function) && typeof value.function.name === 'string')
    return { mode: 'function', name: value.function.name };
  return null;
}

/** `stop` as a list (OpenAI accepts a string or up to four strings). */
export function readStopSequences(stop: unknown): string[] | null {
  if (typeof stop === 'string') return [stop];
  if (!Array.isArray(stop)) return null;
  const list = stop.filter((s): s is string => typeof s === 'string');
  return list.length > 0 ? list : null;
}

/** `max_completion_tokens` (current) wins over the deprecated `max_tokens`. */
export function readMaxTokens(body: Record<string, unknown>): number | null {
  for (const value of [body.max_completion_tokens, body.max_tokens]) {
    if (typeof value === 'number' && Number.isInteger(value) && value > 0) return value;
  }
  return null;
}

export function numberOrNull(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function imageUrlOf(value: unknown): string | null {
  if (typeof value === 'string') return value;
  return isRecord(value) ? stringOrNull(value.url) : null;
}
