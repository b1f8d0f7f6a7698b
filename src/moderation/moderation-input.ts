/**
 * What moderation looks at: the caller's own words. The text of user, system and developer messages
 * (a string, or the `text` parts of a multi-part content); assistant and tool messages, images and
 * other parts are not checked. And how much of a flagged text goes back to the caller.
 */

const MODERATED_ROLES = new Set(['user', 'system', 'developer']);

interface MessageLike {
  role: string;
  content?: unknown;
}

export function moderationTexts(messages: readonly MessageLike[]): string[] {
  const texts: string[] = [];
  for (const message of messages) {
    if (!MODERATED_ROLES.has(message.role)) continue;
    const { content } = message;
    if (typeof content === 'string') {
      if (content.trim() !== '') texts.push(content);
    } else if (Array.isArray(content)) {
      for (const part of content) {
        if (part && typeof part === 'object' && (part as { type?: unknown }).type === 'text') {
          const text = (part as { text?: unknown }).text;
          if (typeof text === 'string' && text.trim() !== '') texts.push(text);
        }
      }
    }
  }
  return texts;
}

/** OpenRouter's rule for `flagged_input`: at most 100 characters, longer texts cut in the middle with `...`. */
export const FLAGGED_INPUT_MAX = 100;

export function truncateMiddle(text: string, max = FLAGGED_INPUT_MAX): string {
  const chars = Array.from(text); // code points, so a surrogate pair is never split
  if (chars.length <= max) return text;
  const keep = max - 3;
  const head = Math.ceil(keep / 2);
  return `${chars.slice(0, head).join('')}...${chars.slice(chars.length - (keep - head)).join('')}`;
}
