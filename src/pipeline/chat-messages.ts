/**
 * The shapes of chat messages, per role, as the OpenAI Chat Completions contract defines them:
 * `system`/`developer` (text content), `user` (content: text or typed parts), `assistant` (content
 * or tool calls), `tool` (content and `tool_call_id`), and the deprecated `function`. Unknown roles
 * and mistyped parts are refused; fields this file does not know (e.g. `cache_control`) pass.
 *
 * Hand-written rather than a zod schema on purpose: it stops at the FIRST problem, so a body of a
 * hundred thousand invalid messages costs one message's check, not a hundred thousand error objects.
 * `null` for an optional field counts as absent, as OpenAI treats it.
 */
import type { InputPath } from './input-path.js';

export const MESSAGE_ROLES = ['system', 'developer', 'user', 'assistant', 'tool', 'function'] as const;

export interface ChatMessage {
  role: (typeof MESSAGE_ROLES)[number];
  content?: unknown;
  name?: string;
  tool_calls?: Record<string, unknown>[];
  tool_call_id?: string;
  [field: string]: unknown;
}

export interface InputProblem {
  path: InputPath;
  message: string;
}

type Fields = Record<string, unknown>;

function isObject(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const absent = (value: unknown) => value === undefined || value === null;
const problem = (path: InputPath, message: string): InputProblem => ({ path, message });

function optionalString(message: Fields, field: string, path: InputPath): InputProblem | null {
  const value = message[field];
  return absent(value) || typeof value === 'string' ? null : problem([...path, field], 'must be a string');
}

function requiredString(object: Fields, field: string, path: InputPath): InputProblem | null {
  if (absent(object[field])) return problem([...path, field], 'is required');
  return typeof object[field] === 'string' ? null : problem([...path, field], 'must be a string');
}

/** `{ <field>: { url: string } }` or the shorthand `{ <field>: string }`. */
function urlObject(part: Fields, field: string, path: InputPath): InputProblem | null {
  const value = part[field];
  if (typeof value === 'string') return null;
  if (!isObject(value)) return problem([...path, field], 'must be an object with a "url" string');
  return requiredString(value, 'url', [...path, field]);
}

type PartCheck = (part: Fields, path: InputPath) => InputProblem | null;

const PART_CHECKS: Record<string, PartCheck> = {
  text: (part, path) => requiredString(part, 'text', path),
  refusal: (part, path) => requiredString(part, 'refusal', path),
  image_url: (part, path) => {
    const bad = urlObject(part, 'image_url', path);
    if (bad || !isObject(part.image_url)) return bad;
    const detail = part.image_url.detail;
    return absent(detail) || detail === 'auto' || detail === 'low' || detail === 'high'
      ? null
      : problem([...path, 'image_url', 'detail'], 'must be "auto", "low" or "high"');
  },
  input_audio: (part, path) => {
    if (!isObject(part.input_audio))
      return problem([...path, 'input_audio'], 'must be an object with "data" and "format" strings');
    return (
      requiredString(part.input_audio, 'data', [...path, 'input_audio']) ??
      requiredString(part.input_audio, 'format', [...path, 'input_audio'])
    );
  },
  file: (part, path) => {
    const file = part.file;
    if (!isObject(file)) return problem([...path, 'file'], 'must be an object (file_data, file_id or filename)');
    for (const field of ['file_data', 'file_id', 'filename']) {
      const bad = optionalString(file, field, [...path, 'file']);
      if (bad) return bad;
    }
    return absent(file.file_data) && absent(file.file_id)
      ? problem([...path, 'file'], 'needs "file_data" or "file_id"')
      : null;
  },
  video_url: (part, path) => urlObject(part, 'video_url', path),
};

const TEXT_ONLY = ['text'];
const USER_PARTS = ['text', 'image_url', 'input_audio', 'file', 'video_url'];
const ASSISTANT_PARTS = ['text', 'refusal'];

function content(message: Fields, path: InputPath, allowed: readonly string[], required: boolean): InputProblem | null {
  const value = message.content;
  const at = [...path, 'content'];
  if (absent(value)) return required ? problem(at, 'is required') : null;
  if (typeof value === 'string') return null;
  if (!Array.isArray(value)) return problem(at, 'must be a string or an array of content parts');
  for (let i = 0; i < value.length; i++) {
    const part: unknown = value[i];
    const partPath = [...at, i];
    if (!isObject(part)) return problem(partPath, 'must be a content part object');
    if (typeof part.type !== 'string') return problem([...partPath, 'type'], 'must be a string');
    if (!allowed.includes(part.type))
      return problem(
        [...partPath, 'type'],
        `"${part.type.slice(0, 40)}" is not allowed here; expected ${allowed.map((t) => `"${t}"`).join(', ')}`,
      );
    const bad = PART_CHECKS[part.type]!(part, partPath);
    if (bad) return bad;
  }
  return null;
}

function toolCalls(message: Fields, path: InputPath): InputProblem | null {
  const calls = message.tool_calls;
  const at = [...path, 'tool_calls'];
  if (absent(calls)) return null;
  if (!Array.isArray(calls)) return problem(at, 'must be an array');
  for (let i = 0; i < calls.length; i++) {
    const call: unknown = calls[i];
    const callPath = [...at, i];
    if (!isObject(call)) return problem(callPath, 'must be an object');
    const bad = requiredString(call, 'id', callPath);
    if (bad) return bad;
    const kind = absent(call.type) ? 'function' : call.type;
    if (kind !== 'function' && kind !== 'custom')
      return problem([...callPath, 'type'], 'must be "function" or "custom"');
    const body = call[kind];
    if (!isObject(body)) return problem([...callPath, kind], 'must be an object');
    const fields = kind === 'function' ? ['name', 'arguments'] : ['name', 'input'];
    for (const field of fields) {
      const missing = requiredString(body, field, [...callPath, kind]);
      if (missing) return missing;
    }
  }
  return null;
}

function checkMessage(message: Fields, path: InputPath): InputProblem | null {
  const role = message.role;
  if (absent(role)) return problem([...path, 'role'], 'is required');
  if (typeof role !== 'string' || !(MESSAGE_ROLES as readonly string[]).includes(role)) {
    const shown = typeof role === 'string' ? `"${role.slice(0, 40)}"` : 'a non-string';
    return problem(
      [...path, 'role'],
      `${shown} is not a role; expected "system", "developer", "user", "assistant" or "tool"`,
    );
  }
  const name = optionalString(message, 'name', path);
  if (name) return name;
  switch (role) {
    case 'system':
    case 'developer':
      return content(message, path, TEXT_ONLY, true);
    case 'user':
      return content(message, path, USER_PARTS, true);
    case 'assistant':
      // Content may be absent without tool calls too: the AI SDK sends an empty turn as `content: null`.
      return (
        content(message, path, ASSISTANT_PARTS, false) ??
        optionalString(message, 'refusal', path) ??
        toolCalls(message, path)
      );
    case 'tool':
      // A tool's result may carry images and files (a screenshot tool), as OpenRouter's clients send them.
      return content(message, path, USER_PARTS, true) ?? requiredString(message, 'tool_call_id', path);
    default: // function (deprecated): the function's name, and its result as content
      return (
        requiredString(message, 'name', path) ??
        (absent(message.content) || typeof message.content === 'string'
          ? null
          : problem([...path, 'content'], 'must be a string or null'))
      );
  }
}

/**
 * An assistant turn with neither content nor tool calls becomes an empty text, which every upstream
 * takes (OpenAI's API requires content unless there are tool calls). In place: the body is ours.
 */
export function withEmptyAssistantText(messages: ChatMessage[]): ChatMessage[] {
  for (const message of messages) {
    if (message.role !== 'assistant' || !absent(message.content) || !absent(message.function_call)) continue;
    if (Array.isArray(message.tool_calls) && message.tool_calls.length > 0) continue;
    message.content = '';
  }
  return messages;
}

/** The first problem of a `messages` value, or null when every message has its role's shape. */
export function findMessagesProblem(messages: unknown): InputProblem | null {
  if (!Array.isArray(messages) || messages.length === 0) return problem([], 'must be a non-empty array of messages');
  for (let i = 0; i < messages.length; i++) {
    const message: unknown = messages[i];
    if (!isObject(message)) return problem([i], 'must be a message object');
    const bad = checkMessage(message, [i]);
    if (bad) return bad;
  }
  return null;
}
