/**
 * OpenRouter's `reasoning_details` as they stream: a reasoning block arrives as fragments of one detail.
 * Folded here both ways — the answer a non-streamed caller gets (routing/stream-aggregate.ts), and the
 * details a streaming client sends back as it collected them (providers/anthropic/reasoning.ts).
 */
import { isRecord } from './json-shape.js';

/** The fragment fields of a streamed reasoning detail, by type: concatenated when fragments merge. */
const REASONING_FRAGMENT_FIELD = new Map([
  ['reasoning.text', 'text'],
  ['reasoning.summary', 'summary'],
]);

/**
 * Adds one streamed `reasoning_details` item to the folded list. A reasoning block streams as
 * fragments of one detail — `reasoning.text` pieces (the signature on the last one) or
 * `reasoning.summary` pieces — each carrying the same `index`; the whole answer carries the block
 * once, as OpenRouter's own non-streamed answer does. So a fragment of the same type and `index` as
 * the last item is merged into it: its text (or summary) appended, its other fields (signature,
 * format, id) filling those the item lacks. Anything else — an encrypted block, a new index, another
 * type — starts a new item. Without this a client sending the details back on the next turn sent one
 * block per token, only the last of them signed (Anthropic refuses unsigned thinking blocks).
 */
export function mergeReasoningDetail(list: unknown[], item: unknown): void {
  const fragment = isRecord(item) ? item : null;
  const field = typeof fragment?.type === 'string' ? REASONING_FRAGMENT_FIELD.get(fragment.type) : undefined;
  if (fragment === null || field === undefined) {
    list.push(item);
    return;
  }
  const last = list.at(-1);
  if (!isRecord(last) || last.type !== fragment.type || last.index !== fragment.index) {
    // A copy: merging into it must not change the object the relay was given.
    list.push({ ...fragment });
    return;
  }
  for (const [name, value] of Object.entries(fragment)) {
    if (name === field) {
      if (typeof value === 'string') last[field] = typeof last[field] === 'string' ? last[field] + value : value;
    } else if (last[name] === undefined || last[name] === null) last[name] = value;
  }
}

/** Streamed fragments folded into whole details (a list already whole comes back unchanged). */
export function foldReasoningDetails(details: readonly unknown[]): unknown[] {
  const folded: unknown[] = [];
  for (const item of details) mergeReasoningDetail(folded, item);
  return folded;
}
