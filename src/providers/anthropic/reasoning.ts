/**
 * Anthropic extended thinking in OpenRouter's terms. Requests: OpenRouter's `reasoning` (`effort`,
 * `max_tokens`, `exclude`, `enabled`; legacy `reasoning_effort` and `include_reasoning`) → Anthropic's
 * `thinking: { type: 'enabled', budget_tokens }`. Answers: a `thinking` block is a `reasoning.text`
 * detail with its signature, a `redacted_thinking` block a `reasoning.encrypted` one (format
 * `anthropic-claude-v1`), as OpenRouter gives them; a client sends them back on the assistant turn
 * (@openrouter/ai-sdk-provider does on every tool-loop step), and Anthropic refuses a tool loop whose
 * last assistant turn lost its thinking blocks, or carries one unsigned or altered.
 */
import { isRecord, stringOrNull } from '../json-shape.js';
import { REASONING_EFFORT_RATIO } from '../openai-input.js';
import { foldReasoningDetails } from '../reasoning-details.js';

export const ANTHROPIC_DETAIL_FORMAT = 'anthropic-claude-v1';

/** Anthropic's bounds on `budget_tokens`: at least 1024, and below `max_tokens`; above 32k it advises batches. */
const MIN_BUDGET = 1024;
const MAX_BUDGET = 32_000;

/**
 * The thinking budget the caller's `reasoning` asks for, or null to leave thinking off: off unless
 * asked (`max_tokens`, an effort other than `none`, `enabled: true`, legacy `include_reasoning: true`
 * — a bare switch is OpenRouter's default, medium); `enabled: false` or `effort: "none"` win. The
 * budget stays below `maxTokens`, the completion limit the credit hold was computed from, which is
 * never raised: Anthropic counts thinking in it. A limit too small to hold Anthropic's minimum budget
 * and an answer leaves thinking off.
 */
export function thinkingBudget(body: Record<string, unknown>, maxTokens: number): number | null {
  const reasoning = isRecord(body.reasoning) ? body.reasoning : null;
  const effort = stringOrNull(reasoning?.effort) ?? stringOrNull(body.reasoning_effort);
  if (reasoning?.enabled === false || effort === 'none' || maxTokens <= MIN_BUDGET) return null;
  const asked = reasoning?.max_tokens;
  let budget: number | null = null;
  if (typeof asked === 'number' && Number.isInteger(asked) && asked > 0) budget = asked;
  else {
    const switched = reasoning?.enabled === true || body.include_reasoning === true;
    const ratio = REASONING_EFFORT_RATIO.get(effort ?? (switched ? 'medium' : ''));
    if (ratio !== undefined) budget = Math.floor(maxTokens * ratio);
  }
  if (budget === null) return null;
  return Math.min(Math.max(budget, MIN_BUDGET), MAX_BUDGET, maxTokens - 1);
}

/** A `thinking` block (or a streamed piece of one: text, or the signature that ends it) as a detail. */
export function thinkingDetail(text: string, signature: string | null, index: number): Record<string, unknown> {
  const detail: Record<string, unknown> = { type: 'reasoning.text', text };
  if (signature !== null) detail.signature = signature;
  detail.format = ANTHROPIC_DETAIL_FORMAT;
  detail.index = index;
  return detail;
}

/** A `redacted_thinking` block (thinking Anthropic's safety systems encrypted) as a detail. */
export function redactedDetail(data: string, index: number): Record<string, unknown> {
  return { type: 'reasoning.encrypted', data, format: ANTHROPIC_DETAIL_FORMAT, index };
}

/**
 * An assistant message's `reasoning_details` as Anthropic blocks, in order: signed `reasoning.text`
 * → `thinking`, `reasoning.encrypted` → `redacted_thinking`. Only Anthropic's format: another
 * provider's details (Gemini's signatures, OpenAI's encrypted reasoning) would be refused as forged,
 * and so would unsigned text or a summary.
 */
export function thinkingBlocks(details: unknown): Record<string, unknown>[] {
  const blocks: Record<string, unknown>[] = [];
  if (!Array.isArray(details)) return blocks;
  // A streaming client may send the details back as they streamed: a block's text in pieces, the
  // signature alone on the last. Sent as blocks, only that empty last one was signed (Anthropic: "Invalid signature").
  for (const detail of foldReasoningDetails(details)) {
    if (!isRecord(detail) || detail.format !== ANTHROPIC_DETAIL_FORMAT) continue;
    if (detail.type === 'reasoning.text') {
      const signature = stringOrNull(detail.signature);
      if (signature === null || signature === '') continue;
      blocks.push({ type: 'thinking', thinking: stringOrNull(detail.text) ?? '', signature });
    } else if (detail.type === 'reasoning.encrypted') {
      const data = stringOrNull(detail.data);
      if (data !== null && data !== '') blocks.push({ type: 'redacted_thinking', data });
    }
  }
  return blocks;
}
