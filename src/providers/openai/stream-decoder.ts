/**
 * One OpenAI-style stream, decoded with what its earlier events showed. Every content event of a
 * stream repeats the same text around one string:
 *
 *   {"id":"…","object":"chat.completion.chunk","created":…,"model":"…","system_fingerprint":"…",
 *    "choices":[{"index":0,"delta":{"content":"<the token>"},"logprobs":null,"finish_reason":null}]
 *    ,"usage":null}
 *
 * `JSON.parse` of that text (~300 bytes, four objects and their strings) is the largest single cost
 * of serving a non-streamed request from an upstream stream. The decoder learns the text before the
 * content string (`head`) and after it up to the end of the `choices` member (`tail`) from one event,
 * and reads a later event that has both by parsing only its content string and the members after
 * `tail` (`,"usage":null}` parsed once and then recognised; OpenAI's `obfuscation` padding, which
 * differs per event, and a final `usage` parsed each time). Anything else — and any event longer than
 * `MAX_TEMPLATED_LENGTH`, where the fixed text is a small part of the parse — is parsed whole by
 * `parseOpenAiStreamEvent`, and the result is the same event either way (a property test holds the
 * two to it). Events with `logprobs` (asked for by the caller) differ in more than the content, so
 * they are never learnt from and never match a template: such a stream is parsed whole.
 *
 * Why that is exact. The fixed text is `head` + slot + `tail` closed with `}`. A template is kept
 * only when (1) with a probe string in the slot the fixed text parses, through the full parser, to a
 * chunk whose only choice's delta is exactly `{content: <the probe>}`, with no finish reason,
 * logprobs, usage or error; (2) the learning event is the fixed text plus members that cannot change
 * its content (`}` alone, or members without `choices`, `error`, `id`, `system_fingerprint`); and (3)
 * the learning event's own content is not the probe. By (2) the fixed text with the event's own literal
 * in the slot has the event's content; if the slot were any other value, the content would be the
 * same with the probe in the slot, and (1) and (3) could not both hold — so the slot is the delta's
 * content. A later event is `head` + one JSON string literal (checked by parsing it) + `tail` +
 * either `}` or `,` and top-level members (checked by parsing them as an object): its full parse
 * differs from the fixed text's only in that string and those members, and members that would change
 * the event (`error`, `choices`, `id`, `system_fingerprint`) send it to the full parser. `tail` ends
 * at the first `]` after which the fixed text closes as an object — the end of the `choices` member,
 * or (with unusual spacing) of a later one.
 */
import { isRecord } from '../json-shape.js';
import type { NormalizedUsage, StreamDecoder, StreamEvent } from '../types.js';
import { parseOpenAiStreamEvent } from './parse-stream-event.js';
import { parseOpenAiUsage } from './usage.js';

/**
 * Attempts to learn a template, per stream (successful ones included): a stream whose events never
 * repeat a shape, or alternate between two (several choices), stops paying for them.
 */
const MAX_LEARNING = 8;
/** `]` characters looked at for the end of the `choices` member when learning, and parses tried. */
const MAX_TAIL_CANDIDATES = 16;
const MAX_TAIL_PARSES = 4;
/** Longer events are parsed whole: the fixed text saved is small beside them, and scanning them is not free. */
const MAX_TEMPLATED_LENGTH = 4096;
const PROBE = '\u0000tollgate-probe\u0000';
const PROBE_LITERAL = JSON.stringify(PROBE);
const QUOTE = 34;
const BACKSLASH = 92;
const COMMA = 44;
const CLOSE_BRACE = 125;

interface Template {
  head: string;
  tail: string;
  upstreamId: string | null;
  systemFingerprint: string | null;
  index: number;
  /** Members after `choices` already seen to leave the event without usage. */
  plainRest: string | null;
}

export class OpenAiStreamDecoder implements StreamDecoder {
  private template: Template | null = null;
  private tries = 0;
  /** Events read through a template (the rest went through the full parser). */
  templated = 0;
  private readonly toolCalls = new ToolCallNumbers();

  /** A fully parsed event, its tool calls numbered. */
  private numbered(parsed: StreamEvent): StreamEvent {
    if (parsed.kind === 'chunk') for (const choice of parsed.choices) this.toolCalls.number(choice);
    return parsed;
  }

  parseStreamEvent(data: string, event: string | null): StreamEvent {
    if (event === 'error' || data.length > MAX_TEMPLATED_LENGTH)
      return this.numbered(parseOpenAiStreamEvent(data, event));
    if (this.template !== null) {
      const fast = fromTemplate(this.template, data);
      if (fast !== null) {
        this.templated++;
        return fast;
      }
    }
    const parsed = this.numbered(parseOpenAiStreamEvent(data, event));
    if (parsed.kind === 'chunk' && this.tries < MAX_LEARNING && hasContentDelta(parsed)) {
      this.tries++;
      this.template = learn(data, parsed.choices[0]!.delta.content as string) ?? this.template;
    }
    return parsed;
  }
}

/**
 * Numbers the tool calls as clients expect them: from 0, one index per call, the call's first fragment
 * carrying its `id` and `type`. Some OpenAI-compatible servers send whole calls without an `index`
 * (Google's, for Gemini), others their fragments too (Ollama, mistral.rs), some number from 1 or leave
 * out a later call's id; clients then drop the calls (openai's stream helper, the AI SDK: "tool call
 * snapshot missing `type`") or refuse the chunk (@openrouter/sdk). A fragment that names a call (a new
 * `id`, or a function name without an id) starts the next one; one that names none, or repeats an
 * earlier call's id, continues that call, as a client joins a numbered call's `arguments`. Upstream
 * indices map to ours in the order they first appear. A call's first fragment without an id gets
 * `call_<index>` (what a whole answer built from the stream names it) and `type: "function"`.
 */
class ToolCallNumbers {
  private readonly next = new Map<number, ToolCallState>();

  number(choice: { index: number; delta: Record<string, unknown> }): void {
    if (!Array.isArray(choice.delta.tool_calls)) return;
    let state = this.next.get(choice.index);
    if (state === undefined) {
      state = { next: 0, last: -1, ids: new Map(), upstream: new Map() };
      this.next.set(choice.index, state);
    }
    for (const call of choice.delta.tool_calls as unknown[]) {
      if (!isRecord(call)) continue;
      const id = typeof call.id === 'string' && call.id !== '' ? call.id : null;
      const known = id === null ? undefined : state.ids.get(id);
      let index: number;
      let starts = false;
      if (typeof call.index === 'number') {
        const mapped = state.upstream.get(call.index);
        if (mapped === undefined) {
          index = state.next++;
          state.upstream.set(call.index, index);
          starts = true;
        } else index = mapped;
      } else if (known !== undefined) {
        // A fragment repeating a call's id (some servers send it on each, interleaving calls): that call.
        index = known;
      } else if (state.last >= 0 && id === null && !namesAFunction(call)) {
        // A fragment naming no call: the one before it continues.
        index = state.last;
      } else {
        index = state.next++;
        starts = true;
      }
      call.index = state.last = index;
      if (starts) {
        if (id === null) call.id = `call_${index}`;
        if (typeof call.type !== 'string') call.type = 'function';
      }
      if (id !== null && !state.ids.has(id)) state.ids.set(id, index);
    }
  }
}

/** Per choice: the index the next new call gets, the last call's (-1: none yet), each id's, each upstream index's. */
interface ToolCallState {
  next: number;
  last: number;
  ids: Map<string, number>;
  upstream: Map<number, number>;
}

function namesAFunction(call: Record<string, unknown>): boolean {
  const fn = call.function;
  return isRecord(fn) && typeof fn.name === 'string' && fn.name !== '';
}

function fromTemplate(template: Template, data: string): StreamEvent | null {
  // `substring` + `===` rather than `startsWith`: measured ~3x faster on Node 20 for a 150-character head.
  const open = template.head.length;
  if (data.substring(0, open) !== template.head) return null;
  const end = stringEnd(data, open);
  if (end < 0) return null;
  const restAt = end + template.tail.length;
  if (data.substring(end, restAt) !== template.tail) return null;
  let content: unknown;
  try {
    content = JSON.parse(data.slice(open, end));
  } catch {
    return null; // a bad escape or a control character: the full parser says what is wrong
  }
  if (typeof content !== 'string') return null;
  const rest = data.substring(restAt);
  let usage = null;
  if (rest !== '}' && rest !== template.plainRest) {
    usage = restUsage(rest);
    if (usage === undefined) return null;
    // Members that are the same in every event (`,"usage":null}`) are parsed once per template.
    if (usage === null) template.plainRest = rest;
  }
  return {
    kind: 'chunk',
    upstreamId: template.upstreamId,
    choices: [{ index: template.index, delta: { content }, finish_reason: null, native_finish_reason: null }],
    usage,
    systemFingerprint: template.systemFingerprint,
  };
}

/**
 * What the members after `choices` (`,` members `}`) make of the event's usage, or undefined when
 * they are not JSON or would change more than the usage (the full parser reads those).
 */
function restUsage(rest: string): NormalizedUsage | null | undefined {
  if (rest.charCodeAt(0) !== COMMA) return undefined;
  let members: unknown;
  try {
    members = JSON.parse(`{${rest.slice(1)}`);
  } catch {
    return undefined;
  }
  // `,}` closes as `{}` but is not JSON in the event.
  if (!isRecord(members) || Object.keys(members).length === 0) return undefined;
  if (Object.hasOwn(members, 'error') || Object.hasOwn(members, 'choices')) return undefined;
  if (Object.hasOwn(members, 'id') || Object.hasOwn(members, 'system_fingerprint')) return undefined;
  return Object.hasOwn(members, 'usage') ? parseOpenAiUsage(members.usage) : null;
}

/**
 * Whether the event's only choice is a content delta and nothing else. A choice with `logprobs`
 * (which differ per event) is not: a template learnt from it would lose them.
 */
function hasContentDelta(event: Extract<StreamEvent, { kind: 'chunk' }>): boolean {
  if (event.choices.length !== 1) return false;
  const choice = event.choices[0]!;
  if (choice.finish_reason !== null || choice.native_finish_reason !== null) return false;
  if (choice.logprobs !== undefined) return false;
  const keys = Object.keys(choice.delta);
  return keys.length === 1 && keys[0] === 'content' && typeof choice.delta.content === 'string';
}

/** The template of an event whose only choice's delta is `{content: "…"}`, or null when it has none. */
function learn(data: string, content: string): Template | null {
  // (3): the probe must differ from the event's own content, or finding it there would prove nothing.
  if (content === PROBE) return null;
  const choicesAt = data.indexOf('"choices":');
  if (choicesAt < 1) return null;
  const keyAt = data.indexOf('"content":"', choicesAt);
  if (keyAt < 0) return null;
  const open = keyAt + '"content":'.length;
  const end = stringEnd(data, open);
  if (end < 0) return null;
  const head = data.slice(0, open);
  let candidates = 0;
  let parses = 0;
  for (let at = data.indexOf(']', end); at >= 0; at = data.indexOf(']', at + 1)) {
    if (++candidates > MAX_TAIL_CANDIDATES || parses === MAX_TAIL_PARSES) return null;
    const after = data.charCodeAt(at + 1);
    if (after !== COMMA && after !== CLOSE_BRACE) continue;
    parses++;
    const tail = data.slice(end, at + 1);
    // (2): what follows the fixed text must not change the event's content.
    const rest = data.substring(at + 1);
    if (rest !== '}' && restUsage(rest) === undefined) continue;
    // (1)
    const fixed = probe(`${head}${PROBE_LITERAL}${tail}}`);
    if (fixed === null) continue;
    return {
      head,
      tail,
      upstreamId: fixed.upstreamId,
      systemFingerprint: fixed.systemFingerprint,
      index: fixed.index,
      plainRest: null,
    };
  }
  return null;
}

/** The fixed fields of a template text whose slot holds the probe, when the slot is the content delta. */
function probe(text: string): { upstreamId: string | null; systemFingerprint: string | null; index: number } | null {
  const event = parseOpenAiStreamEvent(text, null);
  if (event.kind !== 'chunk' || event.usage !== null || !hasContentDelta(event)) return null;
  const choice = event.choices[0]!;
  if (choice.delta.content !== PROBE) return null;
  return { upstreamId: event.upstreamId, systemFingerprint: event.systemFingerprint, index: choice.index };
}

/** The index just past the JSON string literal that opens at `open`, or -1. */
function stringEnd(data: string, open: number): number {
  if (data.charCodeAt(open) !== QUOTE) return -1;
  let at = open;
  for (;;) {
    at = data.indexOf('"', at + 1);
    if (at < 0) return -1;
    let backslashes = 0;
    while (data.charCodeAt(at - 1 - backslashes) === BACKSLASH) backslashes++;
    if ((backslashes & 1) === 0) return at + 1;
  }
}
