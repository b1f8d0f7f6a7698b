/**
 * One Anthropic Messages stream → OpenAI-format chunks. Anthropic's events depend on earlier ones:
 * prompt usage arrives in `message_start` and the output count in `message_delta`; tool arguments
 * arrive by content-block index, which counts text blocks too, while OpenAI numbers tool calls
 * alone. So one decoder per stream keeps that state. Thinking streams as `reasoning` and, as
 * OpenRouter gives it, as `reasoning_details` fragments numbered per reasoning block (reasoning.ts):
 * each text piece, then the signature that closes the block, share its `index`, so the non-streamed
 * fold (routing/stream-aggregate.ts) makes one signed detail of them; a redacted_thinking block
 * arrives whole at its start.
 */
import { plainStreamError, unreadable } from '../http-error.js';
import { isRecord, parseUpstreamJson, stringOrNull } from '../json-shape.js';
import { KEEPALIVE, promptSide, type NormalizedUsage, type StreamDecoder, type StreamEvent } from '../types.js';
import { classifyAnthropicStreamError } from './classify-error.js';
import { normalizeAnthropicStopReason } from './finish-reason.js';
import type { AnswerOptions } from './parse-completion.js';
import { redactedDetail, thinkingDetail } from './reasoning.js';
import { mergeAnthropicUsage, parseAnthropicUsage } from './usage.js';

interface BlockState {
  kind: 'text' | 'tool' | 'thinking' | 'other';
  toolIndex: number;
  sentArguments: boolean;
  /** Thinking blocks: the index of their `reasoning_details` item. */
  detailIndex?: number;
}

export class AnthropicStreamDecoder implements StreamDecoder {
  private messageId: string | null = null;
  private startUsage: Record<string, unknown> = {};
  private readonly blocks = new Map<number, BlockState>();
  private toolCount = 0;
  /** Reasoning blocks (thinking and redacted_thinking) so far: the next one's detail index. */
  private reasoningCount = 0;

  constructor(private readonly options: AnswerOptions = {}) {}

  parseStreamEvent(data: string, event: string | null): StreamEvent {
    let json: unknown;
    try {
      json = parseUpstreamJson(data);
    } catch {
      if (event === 'error') return { kind: 'error', failure: plainStreamError(data) };
      if (data.trim() === '') return KEEPALIVE;
      return malformed(unreadable(data));
    }
    if (!isRecord(json)) return malformed('stream event is not a JSON object');
    const type = stringOrNull(json.type) ?? event;
    if (type === 'error' || isRecord(json.error)) return { kind: 'error', failure: classifyAnthropicStreamError(json) };
    switch (type) {
      case 'message_start':
        return this.messageStart(json.message);
      case 'content_block_start':
        return this.blockStart(json);
      case 'content_block_delta':
        return this.blockDelta(json);
      case 'content_block_stop':
        return this.blockStop(json);
      case 'message_delta':
        return this.messageDelta(json);
      case 'message_stop':
        return { kind: 'done' };
      case 'ping':
        return KEEPALIVE;
      default:
        return { kind: 'ignore' }; // event types Anthropic may add (its versioning policy allows it)
    }
  }

  private messageStart(message: unknown): StreamEvent {
    if (!isRecord(message)) return malformed('message_start without a message');
    this.messageId = stringOrNull(message.id);
    this.startUsage = isRecord(message.usage) ? message.usage : {};
    // The prompt's count is exact from here on; the output's comes with `message_delta`.
    return this.chunk({ role: 'assistant', content: '' }, null, promptSide(parseAnthropicUsage(this.startUsage)));
  }

  private blockStart(json: Record<string, unknown>): StreamEvent {
    const index = json.index;
    const block = json.content_block;
    if (typeof index !== 'number' || !isRecord(block))
      return malformed('content_block_start without an index or a block');
    if (block.type === 'text') {
      this.blocks.set(index, { kind: 'text', toolIndex: -1, sentArguments: false });
      return typeof block.text === 'string' && block.text !== ''
        ? this.chunk({ content: block.text })
        : { kind: 'ignore' };
    }
    if (block.type === 'thinking') {
      const state = this.thinkingBlock(index);
      // The text normally streams as deltas; any given here is its first piece.
      return typeof block.thinking === 'string' && block.thinking !== ''
        ? this.thinking(block.thinking, state)
        : { kind: 'ignore' };
    }
    if (block.type === 'redacted_thinking' && typeof block.data === 'string') {
      this.blocks.set(index, { kind: 'other', toolIndex: -1, sentArguments: false });
      const detail = redactedDetail(block.data, this.reasoningCount++);
      return this.options.excludeReasoning === true ? { kind: 'ignore' } : this.chunk({ reasoning_details: [detail] });
    }
    if (block.type !== 'tool_use') {
      this.blocks.set(index, { kind: 'other', toolIndex: -1, sentArguments: false });
      return { kind: 'ignore' };
    }
    const name = stringOrNull(block.name);
    if (name === null) return malformed('tool_use block without a name');
    const state: BlockState = { kind: 'tool', toolIndex: this.toolCount++, sentArguments: false };
    this.blocks.set(index, state);
    // The input is normally `{}` here and streamed as JSON fragments; a non-empty one is sent whole.
    const input = isRecord(block.input) && Object.keys(block.input).length > 0 ? JSON.stringify(block.input) : '';
    state.sentArguments = input !== '';
    const call = {
      index: state.toolIndex,
      id: stringOrNull(block.id) ?? `toolu_${index}`,
      type: 'function',
      function: { name, arguments: input },
    };
    return this.chunk({ tool_calls: [call] });
  }

  private blockDelta(json: Record<string, unknown>): StreamEvent {
    const delta = json.delta;
    if (typeof json.index !== 'number' || !isRecord(delta))
      return malformed('content_block_delta without an index or a delta');
    if (delta.type === 'text_delta')
      return typeof delta.text === 'string'
        ? this.chunk({ content: delta.text })
        : malformed('text_delta without text');
    if (delta.type === 'thinking_delta')
      return typeof delta.thinking === 'string'
        ? this.thinking(delta.thinking, this.thinkingBlock(json.index))
        : { kind: 'ignore' };
    if (delta.type === 'signature_delta') return this.signature(json.index, stringOrNull(delta.signature));
    if (delta.type !== 'input_json_delta') return { kind: 'ignore' }; // citations_delta
    const block = this.blocks.get(json.index);
    if (block?.kind !== 'tool')
      return malformed(`input_json_delta for block ${json.index}, which is not a tool_use block`);
    const fragment = stringOrNull(delta.partial_json);
    if (fragment === null || fragment === '') return { kind: 'ignore' };
    block.sentArguments = true;
    return this.chunk({ tool_calls: [{ index: block.toolIndex, function: { arguments: fragment } }] });
  }

  /** The state of thinking block `index`, numbered as the next reasoning block when it is new. */
  private thinkingBlock(index: number): BlockState {
    const known = this.blocks.get(index);
    if (known?.kind === 'thinking') return known;
    const state: BlockState = {
      kind: 'thinking',
      toolIndex: -1,
      sentArguments: false,
      detailIndex: this.reasoningCount++,
    };
    this.blocks.set(index, state);
    return state;
  }

  /** A piece of thinking text: as `reasoning`, and as a fragment of the block's detail. */
  private thinking(text: string, block: BlockState): StreamEvent {
    if (this.options.excludeReasoning === true) return { kind: 'ignore' };
    return this.chunk({ reasoning: text, reasoning_details: [thinkingDetail(text, null, block.detailIndex ?? 0)] });
  }

  /** The signature that closes a thinking block: the last fragment of its detail, with no text of its own. */
  private signature(index: number, signature: string | null): StreamEvent {
    if (signature === null || signature === '' || this.options.excludeReasoning === true) return { kind: 'ignore' };
    const block = this.thinkingBlock(index);
    return this.chunk({ reasoning_details: [thinkingDetail('', signature, block.detailIndex ?? 0)] });
  }

  private blockStop(json: Record<string, unknown>): StreamEvent {
    const block = typeof json.index === 'number' ? this.blocks.get(json.index) : undefined;
    // A tool without parameters streams no fragment at all; callers JSON.parse the arguments.
    if (block?.kind === 'tool' && !block.sentArguments) {
      block.sentArguments = true;
      return this.chunk({ tool_calls: [{ index: block.toolIndex, function: { arguments: '{}' } }] });
    }
    return { kind: 'ignore' };
  }

  private messageDelta(json: Record<string, unknown>): StreamEvent {
    const nativeFinish = isRecord(json.delta) ? stringOrNull(json.delta.stop_reason) : null;
    // The complete usage comes with the finish: a stream cut before it is charged its prompt's count
    // (from message_start) and an estimate of its output.
    const usage = parseAnthropicUsage(mergeAnthropicUsage(this.startUsage, json.usage));
    return this.chunk({}, nativeFinish, usage);
  }

  private chunk(
    delta: Record<string, unknown>,
    nativeFinish: string | null = null,
    usage: NormalizedUsage | null = null,
  ): StreamEvent {
    return {
      kind: 'chunk',
      upstreamId: this.messageId,
      choices: [
        {
          index: 0,
          delta,
          finish_reason: normalizeAnthropicStopReason(nativeFinish),
          native_finish_reason: nativeFinish,
        },
      ],
      usage,
      systemFingerprint: null,
    };
  }
}

function malformed(reason: string): StreamEvent {
  return { kind: 'malformed', reason };
}
