/**
 * Converts between the two shapes of an answer: a stream of OpenAI-format chunks folded into one
 * completion (non-streamed callers are served from an upstream stream, so the first-token and stall
 * timeouts bound them too), and a whole completion unfolded into chunks (an upstream that ignored
 * `stream: true` and answered with JSON still serves a streaming caller).
 */
import type {
  ChoiceLogprobs,
  ChunkChoice,
  CompletionChoice,
  NormalizedCompletion,
  NormalizedUsage,
  StreamEvent,
} from '../providers/types.js';
import { mergeReasoningDetail } from '../providers/reasoning-details.js';

/**
 * Delta fields that arrive as lists, folded into the message in order: OpenRouter's
 * `reasoning_details` (which @openrouter/ai-sdk-provider reads from the message and sends back on the
 * next turn; streamed as fragments, merged by `mergeReasoningDetail`), `annotations` (citations) and
 * `images` (whole items, concatenated).
 */
const LIST_FIELDS = ['reasoning_details', 'annotations', 'images'] as const;
type ListField = (typeof LIST_FIELDS)[number];

/** The chunks' `logprobs`, one list per side, null until a chunk carries that side. */
interface LogprobParts {
  content: unknown[] | null;
  refusal: unknown[] | null;
}

interface ToolCallParts {
  id: string | undefined;
  type: string;
  name: string;
  arguments: string;
  /** Provider extensions on the call (e.g. Gemini's `extra_content`): kept, last value wins. */
  extra: Record<string, unknown>;
}

interface ChoiceParts {
  role: string;
  content: string[];
  sawContent: boolean;
  reasoning: string[];
  refusal: string[];
  toolCalls: Map<number, ToolCallParts>;
  /** The list fields some delta carried (only those: a field no delta had stays out of the message). */
  lists: Partial<Record<ListField, unknown[]>> | null;
  /** Null until a chunk carried a `logprobs` object. */
  logprobs: LogprobParts | null;
  finishReason: string | null;
  nativeFinishReason: string | null;
}

type Chunk = Extract<StreamEvent, { kind: 'chunk' }>;

export class CompletionAggregator {
  private readonly choices = new Map<number, ChoiceParts>();
  private upstreamId: string | null = null;
  private usage: NormalizedUsage | null = null;
  private fingerprint: string | null = null;

  get finished(): boolean {
    return this.choices.size > 0 && [...this.choices.values()].every((c) => c.finishReason !== null);
  }

  add(event: Chunk): void {
    this.upstreamId ??= event.upstreamId;
    this.fingerprint ??= event.systemFingerprint;
    if (event.usage) this.usage = event.usage;
    for (const choice of event.choices) this.addChoice(choice);
  }

  private addChoice(choice: ChunkChoice): void {
    let parts = this.choices.get(choice.index);
    if (!parts) {
      parts = {
        role: 'assistant',
        content: [],
        sawContent: false,
        reasoning: [],
        refusal: [],
        toolCalls: new Map(),
        lists: null,
        logprobs: null,
        finishReason: null,
        nativeFinishReason: null,
      };
      this.choices.set(choice.index, parts);
    }
    const delta = choice.delta;
    if (typeof delta.role === 'string') parts.role = delta.role;
    // The role chunk's `content: ""` is not content: a tool-calls-only or refusal-only answer has `content: null`.
    if (typeof delta.content === 'string' && delta.content !== '') {
      parts.content.push(delta.content);
      parts.sawContent = true;
    }
    if (typeof delta.reasoning === 'string') parts.reasoning.push(delta.reasoning);
    if (typeof delta.refusal === 'string') parts.refusal.push(delta.refusal);
    if (Array.isArray(delta.tool_calls)) {
      for (const raw of delta.tool_calls as Record<string, unknown>[]) this.addToolCall(parts, raw);
    }
    for (let i = 0; i < LIST_FIELDS.length; i++) {
      const field = LIST_FIELDS[i]!;
      const items = delta[field];
      if (!Array.isArray(items)) continue;
      const list = ((parts.lists ??= {})[field] ??= []);
      if (field === 'reasoning_details') for (const item of items) mergeReasoningDetail(list, item);
      else append(list, items);
    }
    if (choice.logprobs !== undefined) addLogprobs(parts, choice.logprobs);
    if (choice.finish_reason !== null) {
      parts.finishReason = choice.finish_reason;
      parts.nativeFinishReason = choice.native_finish_reason ?? choice.finish_reason;
    }
  }

  private addToolCall(parts: ChoiceParts, raw: Record<string, unknown>): void {
    const index = typeof raw.index === 'number' ? raw.index : parts.toolCalls.size;
    let call = parts.toolCalls.get(index);
    if (!call) {
      call = { id: undefined, type: 'function', name: '', arguments: '', extra: {} };
      parts.toolCalls.set(index, call);
    }
    for (const [field, value] of Object.entries(raw)) {
      if (field !== 'index' && field !== 'id' && field !== 'type' && field !== 'function') call.extra[field] = value;
    }
    if (typeof raw.id === 'string') call.id = raw.id;
    if (typeof raw.type === 'string') call.type = raw.type;
    const fn = raw.function as { name?: unknown; arguments?: unknown } | undefined;
    // OpenAI sends the name once; some upstreams repeat it whole on every fragment (kept once), a
    // few split it (joined).
    if (typeof fn?.name === 'string') call.name = joinName(call.name, fn.name);
    if (typeof fn?.arguments === 'string') call.arguments += fn.arguments;
  }

  result(): NormalizedCompletion {
    const choices: CompletionChoice[] = [...this.choices.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, parts]) => {
        const message: CompletionChoice['message'] = {
          role: parts.role,
          // An answer of tool calls or a refusal alone has `content: null`, as OpenAI's; "" only when there was nothing else.
          content:
            parts.sawContent || (parts.toolCalls.size === 0 && parts.refusal.length === 0)
              ? parts.content.join('')
              : null,
        };
        if (parts.reasoning.length > 0) message.reasoning = parts.reasoning.join('');
        if (parts.lists?.reasoning_details) message.reasoning_details = parts.lists.reasoning_details;
        if (parts.refusal.length > 0) message.refusal = parts.refusal.join('');
        if (parts.toolCalls.size > 0) {
          message.tool_calls = [...parts.toolCalls.entries()]
            .sort(([a], [b]) => a - b)
            .map(([i, call]) => ({
              ...call.extra,
              id: call.id ?? `call_${i}`,
              type: call.type,
              function: { name: call.name, arguments: call.arguments },
            }));
        }
        if (parts.lists?.annotations) message.annotations = parts.lists.annotations;
        if (parts.lists?.images) message.images = parts.lists.images;
        const choice: CompletionChoice = {
          index,
          message,
          finish_reason: parts.finishReason,
          native_finish_reason: parts.nativeFinishReason,
        };
        if (parts.logprobs !== null)
          choice.logprobs = { content: parts.logprobs.content, refusal: parts.logprobs.refusal };
        return choice;
      });
    return { upstreamId: this.upstreamId, choices, usage: this.usage, systemFingerprint: this.fingerprint };
  }
}

/** One chunk's `logprobs` added to the choice's: its `content` and `refusal` lists appended. */
function addLogprobs(parts: ChoiceParts, logprobs: ChoiceLogprobs): void {
  const folded = (parts.logprobs ??= { content: null, refusal: null });
  if (Array.isArray(logprobs.content)) append((folded.content ??= []), logprobs.content);
  if (Array.isArray(logprobs.refusal)) append((folded.refusal ??= []), logprobs.refusal);
}

/** `push(...items)` without spreading a long list onto the stack. */
function append(list: unknown[], items: readonly unknown[]): void {
  for (const item of items) list.push(item);
}

/** A whole completion as stream events: one content chunk per choice (with its finish reason), the usage, done. */
export function completionToEvents(
  completion: NormalizedCompletion,
): [Extract<StreamEvent, { kind: 'chunk' }>, ...StreamEvent[]] {
  const choices: ChunkChoice[] = completion.choices.map((choice) => {
    const { role, content, tool_calls: toolCalls, ...rest } = choice.message;
    const delta: Record<string, unknown> = { role, content: content ?? '', ...rest };
    if (Array.isArray(toolCalls))
      delta.tool_calls = toolCalls.map((call: unknown, index: number) => ({ index, ...(call as object) }));
    const unfolded: ChunkChoice = {
      index: choice.index,
      delta,
      finish_reason: choice.finish_reason,
      native_finish_reason: choice.native_finish_reason,
    };
    if (choice.logprobs !== undefined) unfolded.logprobs = choice.logprobs;
    return unfolded;
  });
  const base = { upstreamId: completion.upstreamId, systemFingerprint: completion.systemFingerprint };
  return [
    { kind: 'chunk', ...base, choices, usage: null },
    { kind: 'chunk', ...base, choices: [], usage: completion.usage },
    { kind: 'done' },
  ];
}

/** A tool call's name so far and a fragment's: the fragment again (or a longer repeat) replaces it, a new piece is appended. */
function joinName(sofar: string, piece: string): string {
  if (piece.startsWith(sofar)) return piece;
  return sofar.endsWith(piece) ? sofar : sofar + piece;
}
