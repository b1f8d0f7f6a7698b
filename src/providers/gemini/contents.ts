/**
 * OpenAI chat messages → Gemini `systemInstruction` and `contents`. Gemini names the assistant
 * "model", carries tool calls as `functionCall` parts and results as `functionResponse` parts,
 * which name the function rather than the call id, so the name is looked up from the assistant
 * message that made the call. Consecutive turns of one role are merged (parallel calls' results
 * must arrive together in one turn).
 */
import { isRecord, stringOrNull } from '../json-shape.js';
import {
  MEDIA_TYPE_BY_EXTENSION,
  UnsendablePartError,
  contentParts,
  contentText,
  inlineFileData,
  isWebUrl,
  legacyFunctionsAsTools,
  parseDataUrl,
  parseToolArguments,
  readToolCalls,
  type InputPart,
} from '../openai-input.js';
import { GEMINI_DETAIL_FORMAT } from './candidate.js';

export type GeminiPart = Record<string, unknown>;

export interface GeminiContent {
  role: 'user' | 'model';
  parts: GeminiPart[];
}

export interface GeminiPrompt {
  systemInstruction: { parts: GeminiPart[] } | null;
  contents: GeminiContent[];
}

export function toGeminiPrompt(messages: unknown): GeminiPrompt {
  const system: GeminiPart[] = [];
  const contents: GeminiContent[] = [];
  const functionNames = new Map<string, string>(); // tool call id → function name
  const list = legacyFunctionsAsTools(messages);
  if (!Array.isArray(list)) return { systemInstruction: null, contents };
  for (const message of list) {
    if (!isRecord(message)) continue;
    switch (message.role) {
      case 'system':
      case 'developer':
        system.push(...userParts(contentParts(message.content)).filter((p) => 'text' in p));
        break;
      case 'user':
        append(contents, 'user', userParts(contentParts(message.content)));
        break;
      case 'assistant':
        append(contents, 'model', modelParts(message, functionNames));
        break;
      case 'tool':
        // Gemini's function response is JSON: images and files the result carries follow it in the turn.
        append(contents, 'user', [
          functionResponsePart(message, functionNames),
          ...userParts(contentParts(message.content)).filter((part) => !('text' in part)),
        ]);
        break;
    }
  }
  // Gemini refuses a request without contents, where an OpenAI model answers a system prompt alone (or
  // one before a prefill): with no user turn at all, the instructions become it, as for Anthropic.
  if (system.length > 0 && !contents.some((c) => c.role === 'user')) {
    contents.unshift({ role: 'user', parts: system });
    return { systemInstruction: null, contents };
  }
  return { systemInstruction: system.length > 0 ? { parts: system } : null, contents };
}

function append(contents: GeminiContent[], role: GeminiContent['role'], parts: GeminiPart[]): void {
  if (parts.length === 0) return; // Gemini rejects a content without parts
  const last = contents.at(-1);
  if (last?.role === role) last.parts.push(...parts);
  else contents.push({ role, parts });
}

function userParts(parts: InputPart[]): GeminiPart[] {
  const out: GeminiPart[] = [];
  for (const part of parts) {
    if (part.kind === 'text') {
      if (part.text !== '') out.push({ text: part.text }); // empty text parts are rejected
      continue;
    }
    out.push(mediaPart(part));
  }
  return out;
}

/**
 * An image, file, audio clip or video as Gemini takes it: inline base64 data, or a file URI with its
 * MIME type. An OpenAI `file_id` refuses the request: sent without it, the answer would ignore it.
 */
function mediaPart(part: Exclude<InputPart, { kind: 'text' }>): GeminiPart {
  switch (part.kind) {
    case 'audio':
      return { inlineData: { mimeType: `audio/${part.format}`, data: part.data } };
    case 'unsendable':
      throw new UnsendablePartError('Gemini', part.what);
    case 'file': {
      const inline = inlineFileData(part);
      if (inline !== null) return { inlineData: { mimeType: inline.mediaType, data: inline.data } };
      if (!isWebUrl(part.url))
        throw new UnsendablePartError('Gemini', 'a file whose data is neither a data URL nor a URL');
      return { fileData: { mimeType: mimeTypeOf(part.filename ?? part.url, 'application/pdf'), fileUri: part.url } };
    }
    case 'image':
    case 'video': {
      const inline = parseDataUrl(part.url);
      if (inline !== null) return { inlineData: { mimeType: inline.mediaType, data: inline.data } };
      const fallback = part.kind === 'image' ? 'image/jpeg' : 'video/mp4';
      return { fileData: { mimeType: mimeTypeOf(part.url, fallback), fileUri: part.url } };
    }
  }
}

/**
 * The assistant turn as Gemini parts. Thinking models want their signatures back on the parts they
 * came on (a function call without its signature is a 400 on Gemini 3). A call's is read from its
 * `extra_content.google.thought_signature` (as Google's own OpenAI-compatible endpoint hands it out),
 * else from the message's `reasoning_details` (as OpenRouter does; @openrouter/ai-sdk-provider keeps
 * only those). A signature there without a call id came on another part: it goes on the turn's first
 * part, unless some part has one already.
 */
function modelParts(message: Record<string, unknown>, functionNames: Map<string, string>): GeminiPart[] {
  const parts: GeminiPart[] = [];
  const text = contentText(message.content);
  if (text !== '') parts.push({ text });
  const signatures = detailSignatures(message.reasoning_details);
  for (const call of readToolCalls(message)) {
    if (call.id !== '') functionNames.set(call.id, call.name);
    const part: GeminiPart = { functionCall: { name: call.name, args: parseToolArguments(call.arguments) } };
    const signature = thoughtSignatureOf(call.raw) ?? signatures.byCallId.get(call.id) ?? null;
    if (signature !== null) part.thoughtSignature = signature;
    parts.push(part);
  }
  const first = parts[0];
  if (first !== undefined && signatures.unattached !== null && !parts.some((part) => 'thoughtSignature' in part))
    first.thoughtSignature = signatures.unattached;
  return parts;
}

interface DetailSignatures {
  /** Tool call id → the signature of that function call. */
  byCallId: Map<string, string>;
  /** The first signature that names no call. */
  unattached: string | null;
}

/**
 * The thought signatures among an assistant message's `reasoning_details`: `reasoning.encrypted`
 * items of Gemini's format (`google-gemini-v1`, as candidate.ts gives them). Other formats' details came
 * from other providers and mean nothing to Gemini.
 */
function detailSignatures(details: unknown): DetailSignatures {
  const found: DetailSignatures = { byCallId: new Map(), unattached: null };
  if (!Array.isArray(details)) return found;
  for (const detail of details) {
    if (!isRecord(detail) || detail.type !== 'reasoning.encrypted' || detail.format !== GEMINI_DETAIL_FORMAT) continue;
    const data = stringOrNull(detail.data);
    if (data === null || data === '') continue;
    const id = stringOrNull(detail.id);
    if (id === null || id === '') found.unattached ??= data;
    else if (!found.byCallId.has(id)) found.byCallId.set(id, data);
  }
  return found;
}

function functionResponsePart(message: Record<string, unknown>, functionNames: Map<string, string>): GeminiPart {
  const id = stringOrNull(message.tool_call_id) ?? '';
  const name = functionNames.get(id) ?? stringOrNull(message.name) ?? id;
  const text = contentText(message.content);
  // `response` must be an object: a JSON object result is sent as is, anything else wrapped.
  let response: Record<string, unknown> = { content: text };
  try {
    const parsed: unknown = JSON.parse(text);
    if (isRecord(parsed)) response = parsed;
  } catch {
    // plain text result
  }
  return { functionResponse: { name, response } };
}

function thoughtSignatureOf(call: Record<string, unknown>): string | null {
  const extra = call.extra_content;
  const google = isRecord(extra) ? extra.google : null;
  return isRecord(google) ? stringOrNull(google.thought_signature) : null;
}

/** Gemini's `fileData` requires a MIME type; a URL (or a file name) only hints at it by its extension. */
function mimeTypeOf(url: string, fallback: string): string {
  const extension = /\.([a-z0-9]+)(?:[?#].*)?$/i.exec(url)?.[1]?.toLowerCase();
  return (extension === undefined ? undefined : MEDIA_TYPE_BY_EXTENSION.get(extension)) ?? fallback;
}
