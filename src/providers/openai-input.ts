/**
 * Readers for the caller's OpenAI-format request, shared by the adapters that translate it to
 * another provider's API (Anthropic, Gemini). The body was validated at the edge; these still
 * tolerate odd shapes, skipping what they cannot read rather than throwing.
 */
import { isRecord, stringOrNull } from './json-shape.js';

export type InputPart =
  | { kind: 'text'; text: string; cacheControl: unknown }
  | { kind: 'image'; url: string }
  /** A `file` part's `file_data`: a data URL (`data:application/pdf;base64,…`) or a URL. */
  | { kind: 'file'; url: string; filename: string | null }
  | { kind: 'audio'; data: string; format: string }
  | { kind: 'video'; url: string }
  /**
   * A part no adapter can send on (a `file_id`, which names a file uploaded to OpenAI): kept so the
   * adapter refuses the request rather than answer without it.
   */
  | { kind: 'unsendable'; what: string };

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
  /** OpenAI's `function.strict`: the arguments must follow `parameters` exactly. */
  strict: boolean;
}

export type InputToolChoice = { mode: 'auto' | 'none' | 'required' } | { mode: 'function'; name: string };

/** A message's content as parts: a string is one text part; unknown part types are skipped. */
export function contentParts(content: unknown): InputPart[] {
  if (typeof content === 'string') return [{ kind: 'text', text: content, cacheControl: undefined }];
  if (!Array.isArray(content)) return [];
  const parts: InputPart[] = [];
  for (const part of content) {
    if (!isRecord(part)) continue;
    const read = readPart(part);
    if (read !== null) parts.push(read);
  }
  return parts;
}

function readPart(part: Record<string, unknown>): InputPart | null {
  switch (part.type) {
    case 'text':
      return typeof part.text === 'string' ? { kind: 'text', text: part.text, cacheControl: part.cache_control } : null;
    case 'image_url': {
      const url = urlOf(part.image_url);
      return url === null ? null : { kind: 'image', url };
    }
    case 'file': {
      const file = isRecord(part.file) ? part.file : {};
      const data = stringOrNull(file.file_data);
      if (data !== null) return { kind: 'file', url: data, filename: stringOrNull(file.filename) };
      return typeof file.file_id === 'string' ? { kind: 'unsendable', what: 'a file given by file_id' } : null;
    }
    case 'input_audio': {
      const audio = isRecord(part.input_audio) ? part.input_audio : {};
      const data = stringOrNull(audio.data);
      const format = stringOrNull(audio.format);
      return data === null || format === null ? null : { kind: 'audio', data, format };
    }
    case 'video_url': {
      const url = urlOf(part.video_url);
      return url === null ? null : { kind: 'video', url };
    }
    default:
      return null;
  }
}

/** The text of a message's content (string, or its text parts joined). */
export function contentText(content: unknown): string {
  let text = '';
  for (const part of contentParts(content)) if (part.kind === 'text') text += part.text;
  return text;
}

/**
 * Thrown by an adapter for a part its provider cannot take: the request is refused (400, this
 * message) rather than sent without it — an answer given without the document the caller attached
 * looks like a success and is not one.
 */
export class UnsendablePartError extends Error {
  constructor(provider: string, what: string) {
    super(`${provider} endpoints cannot take ${what} in a message`);
    this.name = 'UnsendablePartError';
  }
}

/**
 * A `file` part's data as a media type and base64 payload: from a data URL, or — raw base64, as some
 * clients send — with the media type its file name implies. Null for a URL (or unreadable data).
 */
export function inlineFileData(part: {
  url: string;
  filename: string | null;
}): { mediaType: string; data: string } | null {
  const inline = parseDataUrl(part.url);
  if (inline !== null || isWebUrl(part.url)) return inline;
  const extension = /\.([a-z0-9]+)$/i.exec(part.filename ?? '')?.[1]?.toLowerCase();
  const mediaType = extension === undefined ? undefined : MEDIA_TYPE_BY_EXTENSION.get(extension);
  return mediaType === undefined || !/^[A-Za-z0-9+/=\s]+$/.test(part.url) ? null : { mediaType, data: part.url };
}

export function isWebUrl(url: string): boolean {
  return /^https?:\/\//i.test(url);
}

/** Media types by file-name extension, for files and URLs that name no type of their own. */
export const MEDIA_TYPE_BY_EXTENSION: ReadonlyMap<string, string> = new Map([
  ['png', 'image/png'],
  ['jpg', 'image/jpeg'],
  ['jpeg', 'image/jpeg'],
  ['webp', 'image/webp'],
  ['gif', 'image/gif'],
  ['heic', 'image/heic'],
  ['pdf', 'application/pdf'],
  ['txt', 'text/plain'],
  ['md', 'text/markdown'],
  ['csv', 'text/csv'],
  ['html', 'text/html'],
  ['mp3', 'audio/mp3'],
  ['wav', 'audio/wav'],
  ['mp4', 'video/mp4'],
  ['webm', 'video/webm'],
  ['mov', 'video/quicktime'],
]);

/** `data:image/png;base64,AAAA` → its media type and base64 payload; null for any other URL. */
export function parseDataUrl(url: string): { mediaType: string; data: string } | null {
  const match = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  return match?.[1] !== undefined && match[2] !== undefined ? { mediaType: match[1], data: match[2] } : null;
}

/**
 * OpenAI's deprecated function calling as the tool-call shapes the translating adapters read: an
 * assistant's `function_call` becomes its one tool call (id `call_fn_<n>`), and a `function` message
 * the `tool` result of the latest call of that function. Without it Anthropic and Gemini were sent
 * neither, and answered without the result. OpenAI-compatible endpoints get the messages as sent.
 */
export function legacyFunctionsAsTools(messages: unknown): unknown {
  if (!Array.isArray(messages) || !messages.some(isLegacyFunctionMessage)) return messages;
  let calls = 0;
  const latest = new Map<string, string>(); // function name → the id of its latest call
  return messages.map((message: unknown) => {
    if (!isLegacyFunctionMessage(message)) return message;
    if (message.role === 'function') {
      const name = stringOrNull(message.name) ?? '';
      const id = latest.get(name) ?? `call_fn_${calls++}`;
      return { role: 'tool', tool_call_id: id, name, content: message.content };
    }
    const { function_call: call, ...rest } = message;
    const fn = isRecord(call) ? call : {};
    const name = stringOrNull(fn.name) ?? '';
    const id = `call_fn_${calls++}`;
    latest.set(name, id);
    const args = stringOrNull(fn.arguments) ?? '';
    return { ...rest, tool_calls: [{ id, type: 'function', function: { name, arguments: args } }] };
  });
}

function isLegacyFunctionMessage(message: unknown): message is Record<string, unknown> {
  if (!isRecord(message)) return false;
  if (message.role === 'function') return true;
  return message.role === 'assistant' && isRecord(message.function_call) && !Array.isArray(message.tool_calls);
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
    out.push({
      name,
      description: stringOrNull(tool.function.description),
      parameters,
      strict: tool.function.strict === true,
    });
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

/**
 * OpenRouter's `reasoning.effort` levels as shares of the completion limit (its documented ratios),
 * for the providers whose thinking takes a token budget. A Map: no prototype keys.
 */
export const REASONING_EFFORT_RATIO: ReadonlyMap<string, number> = new Map([
  ['xhigh', 0.95],
  ['high', 0.8],
  ['medium', 0.5],
  ['low', 0.2],
  ['minimal', 0.1],
]);

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

function urlOf(value: unknown): string | null {
  if (typeof value === 'string') return value;
  return isRecord(value) ? stringOrNull(value.url) : null;
}

/**
 * Set on an upstream body (pipeline/upstream-parameters.ts) when the caller asked for no reasoning in
 * the answer, whether or not the endpoint takes a field that says so: a symbol, so it never reaches
 * the provider (JSON.stringify skips it) while the adapter reading its answer sees it.
 */
export const EXCLUDE_REASONING: unique symbol = Symbol('tollgate.excludeReasoning');

/** `reasoning.exclude` (or legacy `include_reasoning: false`): the model thinks, the caller does not see it. */
export function reasoningExcluded(body: Readonly<Record<string, unknown>> | undefined): boolean {
  if (body === undefined) return false;
  if ((body as Record<symbol, unknown>)[EXCLUDE_REASONING] === true) return true;
  return (isRecord(body.reasoning) && body.reasoning.exclude === true) || body.include_reasoning === false;
}
