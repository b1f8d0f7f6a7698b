/**
 * Turns an upstream SSE body into adapter events, one at a time, with the stall (idle) timer armed
 * only while we wait on the upstream — never while the caller is slow to take the next event, so a
 * slow client is backpressure, not a provider stall.
 */
import { SseLimitError, SseParser } from '../streaming/sse-parser.js';
import type { ProviderAdapter, StreamEvent, UpstreamFailure } from '../providers/types.js';

export interface StreamReaderOptions {
  body: AsyncIterable<Uint8Array>;
  adapter: ProviderAdapter;
  /** Called with the idle budget before each wait on the upstream; returns a disarm function. */
  armIdle: () => () => void;
}

export async function* readUpstreamEvents(options: StreamReaderOptions): AsyncGenerator<StreamEvent, void, undefined> {
  const parser = new SseParser();
  const decoder = options.adapter.openStream?.() ?? options.adapter;
  const iterator = options.body[Symbol.asyncIterator]();
  let drained = false;
  try {
    yield* read();
    drained = true;
  } finally {
    // The consumer stopped early (after [DONE], or on an error): read what is left so the keep-alive
    // connection returns to the pool, or destroy the body when the upstream does not end promptly.
    if (!drained) void drain(iterator);
  }

  async function* read(): AsyncGenerator<StreamEvent, void, undefined> {
    for (;;) {
      const disarm = options.armIdle();
      let next: IteratorResult<Uint8Array>;
      try {
        next = await iterator.next();
      } finally {
        disarm();
      }
      let events;
      try {
        events = next.done ? parser.end() : parser.push(next.value);
      } catch (error) {
        if (!(error instanceof SseLimitError)) throw error;
        // An invalid response like any other: fails over before the first byte, in-band error after.
        yield { kind: 'error', failure: oversized(error) };
        return;
      }
      for (const event of events) yield decoder.parseStreamEvent(event.data, event.event);
      if (next.done) return;
    }
  }
}

function oversized(error: SseLimitError): UpstreamFailure {
  return {
    type: 'invalid_response',
    status: null,
    message: `Invalid response from provider: ${error.message}`,
    providerCode: null,
    retryAfterMs: null,
    raw: null,
  };
}

const DRAIN_LIMIT_BYTES = 64 * 1024;
const DRAIN_WAIT_MS = 1000;

async function drain(iterator: AsyncIterator<Uint8Array>): Promise<void> {
  let bytes = 0;
  try {
    for (;;) {
      const timer = setTimeout(() => void iterator.return?.(), DRAIN_WAIT_MS);
      let next: IteratorResult<Uint8Array>;
      try {
        next = await iterator.next();
      } finally {
        clearTimeout(timer);
      }
      if (next.done) return;
      bytes += next.value.byteLength;
      if (bytes > DRAIN_LIMIT_BYTES) {
        await iterator.return?.();
        return;
      }
    }
  } catch {
    // Aborted or reset: nothing left to release.
  }
}

/** Content the caller can see: text, reasoning, a tool call, a refusal or a finish reason. Role-only deltas are not. */
export function carriesContent(event: StreamEvent): boolean {
  if (event.kind !== 'chunk') return false;
  return event.choices.some((choice) => {
    if (choice.finish_reason !== null) return true;
    const delta = choice.delta;
    const text = (value: unknown) => typeof value === 'string' && value.length > 0;
    return text(delta.content) || text(delta.reasoning) || text(delta.refusal) || Array.isArray(delta.tool_calls);
  });
}
