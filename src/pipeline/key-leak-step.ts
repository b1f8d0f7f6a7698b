/**
 * A Tollgate key pasted into a chat request (secret_scanning.in_requests): `redact` replaces it by its
 * masked label before anything else sees the request (moderation, the upstream), `block` refuses the
 * request (400), `off` lets it pass. Either way the key's holder is told, once per key, in the
 * background. Requests without the key prefix cost one substring search per text.
 */
import { maskKey } from '../auth/key-format.js';
import { replaceKeys } from '../auth/key-search.js';
import { TollgateError } from '../core/errors.js';
import type { ChatRequest } from './chat-request.js';

export type KeyLeakAction = 'redact' | 'block';

export interface KeyLeakStep {
  action: KeyLeakAction;
  /** Called with the distinct keys found (fire and forget: it must not fail or slow the request). */
  notify(keys: readonly string[], action: KeyLeakAction): void;
}

export function keyLeakStep(mode: KeyLeakAction | 'off', notify: KeyLeakStep['notify']): KeyLeakStep | null {
  return mode === 'off' ? null : { action: mode, notify };
}

type Message = ChatRequest['messages'][number];

/** The texts a message carries: string content, text parts, and tool calls' arguments. */
function scrubMessage(message: Message, found: Set<string>, where: string[], index: number): Message {
  const redactIn =
    (place: string) =>
    (text: string): string =>
      replaceKeys(text, (key) => {
        found.add(key);
        where.push(`messages[${index}].${place}`);
        return maskKey(key);
      });
  const withContent = scrubContent(message, redactIn('content'));
  const calls = (message as { tool_calls?: unknown }).tool_calls;
  if (!Array.isArray(calls)) return withContent;
  const redact = redactIn('tool_calls');
  let changed = false;
  const scrubbed = calls.map((call: unknown) => {
    const fn = (call as { function?: { arguments?: unknown } } | null)?.function;
    if (typeof fn?.arguments !== 'string') return call;
    const args = redact(fn.arguments);
    if (args === fn.arguments) return call;
    changed = true;
    return { ...(call as object), function: { ...fn, arguments: args } };
  });
  return changed ? ({ ...withContent, tool_calls: scrubbed } as Message) : withContent;
}

function scrubContent(message: Message, redact: (text: string) => string): Message {
  const content = message.content;
  if (typeof content === 'string') {
    const scrubbed = redact(content);
    return scrubbed === content ? message : { ...message, content: scrubbed };
  }
  if (!Array.isArray(content)) return message;
  let changed = false;
  const parts = content.map((part) => {
    const text = (part as { text?: unknown }).text;
    if (typeof text !== 'string') return part;
    const scrubbed = redact(text);
    if (scrubbed === text) return part;
    changed = true;
    return { ...part, text: scrubbed };
  });
  return changed ? { ...message, content: parts } : message;
}

/** The request with every pasted key redacted (or 400 in block mode); the same object when there is none. */
export function scrubKeysFromRequest(step: KeyLeakStep | null | undefined, request: ChatRequest): ChatRequest {
  if (!step) return request;
  const found = new Set<string>();
  const where: string[] = [];
  const messages = request.messages.map((message, i) => scrubMessage(message, found, where, i));
  // `user` is sent upstream too (and kept on the generation).
  const user =
    typeof request.user === 'string'
      ? replaceKeys(request.user, (key) => {
          found.add(key);
          where.push('user');
          return maskKey(key);
        })
      : request.user;
  if (found.size === 0) return request;
  const keys = [...found];
  step.notify(keys, step.action);
  if (step.action === 'block') {
    const labels = keys.map(maskKey);
    throw new TollgateError(
      'request.contains_key',
      `The request contains a Tollgate API key (${labels.join(', ')}) in ${[...new Set(where)].join(', ')}; it was not forwarded. Remove the key and send the request again; if the key is one of this gateway's, its holder is notified.`,
      { metadata: { reason: 'api_key_in_content', labels } },
    );
  }
  return { ...request, messages, user };
}
