import { describe, expect, it } from 'vitest';
import { openAiAdapter } from '../providers/openai/adapter.js';
import { HealthRegistry } from './health.js';
import { isProgress, isProviderError, STOP, UpstreamStream, type ChunkEvent } from './stream-reader.js';
import { AttemptAbort, type AbortReason } from './upstream-client.js';

const chunk = (content: string, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'u1', choices: [{ index: 0, delta: { content }, finish_reason: finish }] })}\n\n`;

/** An SSE body from text pieces; `hang` leaves it open after the last piece until the signal aborts. */
function body(pieces: string[], signal: AbortSignal, hang = false): AsyncIterable<Uint8Array> {
  return (async function* () {
    for (const piece of pieces) yield new TextEncoder().encode(piece);
    if (hang) await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason as Error)));
  })();
}

function open(pieces: string[], options: { hang?: boolean; health?: HealthRegistry } = {}) {
  const controller = new AbortController();
  let closed = 0;
  const stream = UpstreamStream.fromBody(
    { body: body(pieces, controller.signal, options.hang), adapter: openAiAdapter, armIdle: () => () => undefined },
    {
      signal: controller.signal,
      abort: (reason: AbortReason) => controller.abort(new AttemptAbort(reason)),
      onClose: () => closed++,
      ...(options.health ? { health: { registry: options.health, key: 'p/m', attemptStartedAt: 1_000 } } : {}),
    },
  );
  return { stream, controller, closed: () => closed };
}

const texts = (events: ChunkEvent[]) => events.map((e) => e.choices[0]?.delta.content).join('');

describe('UpstreamStream: one reader for every path', () => {
  it('stops at a STOP and goes on from there on the next read; [DONE] ends it and closes it once', async () => {
    const { stream, closed } = open([chunk('a'), chunk('b'), chunk('c', 'stop'), 'data: [DONE]\n\n']);
    const first: ChunkEvent[] = [];
    expect(await stream.read((e) => (first.push(e), STOP))).toEqual({ kind: 'stopped' });
    expect(closed()).toBe(0);
    const rest: ChunkEvent[] = [];
    expect(await stream.read((e) => void rest.push(e))).toEqual({ kind: 'done' });
    expect([texts(first), texts(rest)]).toEqual(['a', 'bc']);
    expect(closed()).toBe(1);
  });

  it('calls the stream broken at its first malformed event (reporting it): what it carried is not skipped', async () => {
    const bad = 'data: {not json\n\n';
    const reasons: string[] = [];
    const seen: ChunkEvent[] = [];
    const { stream, closed } = open([chunk('a'), bad, chunk('b', 'stop'), 'data: [DONE]\n\n']);
    const end = await stream.read(
      (e) => void seen.push(e),
      (r) => reasons.push(r),
    );
    expect(end).toMatchObject({ kind: 'broken', cause: 'malformed', failure: { type: 'invalid_response' } });
    expect(texts(seen)).toBe('a');
    expect(reasons).toEqual([expect.stringContaining('not JSON')]);
    expect(closed()).toBe(1);
    const first = open([bad, chunk('a', 'stop')]).stream;
    expect(await first.read(() => undefined)).toMatchObject({ kind: 'broken', cause: 'malformed' });
  });

  it('passes nothing more of a choice that finished: no second finish, no text after it; usage still comes', async () => {
    const usage = `data: ${JSON.stringify({ id: 'u1', choices: [], usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } })}\n\n`;
    const { stream } = open([
      chunk('a'),
      chunk('', 'stop'),
      chunk('late'),
      chunk('', 'length'),
      usage,
      'data: [DONE]\n\n',
    ]);
    const seen: ChunkEvent[] = [];
    expect(await stream.read((e) => void seen.push(e))).toEqual({ kind: 'done' });
    expect(
      seen.map((e) => [e.choices.map((c) => [c.delta.content ?? null, c.finish_reason]), e.usage !== null]),
    ).toEqual([
      [[['a', null]], false],
      [[['', 'stop']], false],
      [[], true],
    ]);
  });

  it("ends a stream the provider finishes with its own 'error' as broken; a reason mapped to 'error' (Gemini's) is an answer", async () => {
    const { stream } = open([chunk('a'), chunk('', 'error')]);
    expect(await stream.read(() => undefined)).toMatchObject({
      kind: 'broken',
      cause: 'event',
      failure: { type: 'server' },
    });
    expect(isProviderError({ finish_reason: 'error', native_finish_reason: null })).toBe(true);
    expect(isProviderError({ finish_reason: 'error', native_finish_reason: 'error' })).toBe(true);
    expect(isProviderError({ finish_reason: 'error', native_finish_reason: 'MALFORMED_FUNCTION_CALL' })).toBe(false);
    expect(isProviderError({ finish_reason: 'stop', native_finish_reason: 'error' })).toBe(false);
  });

  it('counts as progress what carries part of the answer, not keep-alives, empty deltas or a usage count alone', () => {
    const usage = { promptTokens: 1, completionTokens: 1 } as ChunkEvent['usage'];
    const chunkOf = (delta: Record<string, unknown>, finish: string | null = null, withUsage = false): ChunkEvent => ({
      kind: 'chunk',
      upstreamId: null,
      choices: [{ index: 0, delta, finish_reason: finish, native_finish_reason: finish }],
      usage: withUsage ? usage : null,
      systemFingerprint: null,
    });
    expect(isProgress(chunkOf({ content: 'a' }))).toBe(true);
    expect(isProgress(chunkOf({ reasoning_details: [{ type: 'reasoning.text' }] }))).toBe(true);
    expect(isProgress(chunkOf({}, 'stop'))).toBe(true);
    expect(isProgress({ kind: 'ignore' })).toBe(true);
    expect(isProgress({ kind: 'keepalive' })).toBe(false);
    expect(isProgress(chunkOf({ content: '' }))).toBe(false);
    expect(isProgress(chunkOf({ role: 'assistant', tool_calls: [] }))).toBe(false);
    // Gemini repeats its usage on every event: an empty part with usage is still nothing of the answer.
    expect(isProgress(chunkOf({ content: '' }, null, true))).toBe(false);
  });

  it("tells the upstream's in-band error, a stall and our own cancel apart", async () => {
    const inBand = open([chunk('a'), `data: ${JSON.stringify({ error: { message: 'overloaded', code: 502 } })}\n\n`]);
    expect(await inBand.stream.read(() => undefined)).toMatchObject({ kind: 'broken', cause: 'event' });

    const stalled = open([chunk('a')], { hang: true });
    setTimeout(() => stalled.stream.abort('idle_timeout'), 10);
    expect(await stalled.stream.read(() => undefined)).toMatchObject({
      kind: 'broken',
      cause: 'transport',
      failure: { type: 'timeout' },
    });

    const left = open([chunk('a')], { hang: true });
    setTimeout(() => left.stream.abort('client_closed'), 10);
    expect(await left.stream.read(() => undefined)).toMatchObject({ kind: 'cancelled' });
    expect(left.closed()).toBe(1);
  });

  it("a consumer's error closes the stream and reaches the consumer; it is not the provider's fault", async () => {
    const { stream, closed } = open([chunk('a'), chunk('b')], { hang: true });
    await expect(
      stream.read(() => {
        throw new Error('sink failed');
      }),
    ).rejects.toThrow('sink failed');
    expect(closed()).toBe(1);
  });

  it("reports a committed stream's outcome to its endpoint's health", async () => {
    const health = new HealthRegistry();
    const { stream } = open([chunk('a', 'stop')], { health });
    stream.firstContentAt = 1_200;
    stream.reportEnd({ fault: null, incomplete: false, finishedAt: 2_200, completionTokens: 50 });
    expect(health.snapshot('p/m', 2_200)).toMatchObject({
      uptime5m: 100,
      latency30m: { p50: 200 },
      throughput30m: { p50: 50 },
    });
    stream.reportEnd({ fault: 'connection', incomplete: true, finishedAt: 2_300, completionTokens: null });
    expect(health.snapshot('p/m', 2_300)?.uptime5m).toBe(50);
  });

  it("waits for a handler's promise (a caller reading slowly) and goes on; a promise of STOP stops", async () => {
    const { stream } = open([chunk('a'), chunk('b'), chunk('c', 'stop'), 'data: [DONE]\n\n']);
    const seen: string[] = [];
    let release!: () => void;
    const reading = stream.read((event) => {
      seen.push(texts([event]));
      if (seen.length === 1) return new Promise<void>((resolve) => (release = resolve));
      if (seen.length === 2) return Promise.resolve(STOP);
      return undefined;
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(seen).toEqual(['a']); // nothing more until the handler is ready
    release();
    expect(await reading).toEqual({ kind: 'stopped' });
    expect(seen).toEqual(['a', 'b']);
    expect(await stream.read((event) => void seen.push(texts([event])))).toEqual({ kind: 'done' });
    expect(seen).toEqual(['a', 'b', 'c']);
  });
});
