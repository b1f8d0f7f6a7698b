/**
 * One spec over every provider adapter (OpenAI, Anthropic, Gemini), each fed its own
 * fixtures: a whole answer, the same kind of answer streamed (read through the gateway's one stream
 * reader, cut at awkward byte boundaries), and HTTP errors. What the adapters must agree on is stated
 * once here; what each API says differently stays in its own tests.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CompletionAggregator } from '../routing/stream-aggregate.js';
import { UpstreamStream } from '../routing/stream-reader.js';
import { anthropicAdapter } from './anthropic/adapter.js';
import { geminiAdapter } from './gemini/adapter.js';
import { openAiAdapter } from './openai/adapter.js';
import type { FailureType, NormalizedCompletion, ProviderAdapter } from './types.js';

interface RecordedError {
  status: number;
  headers?: Record<string, string>;
  body: unknown;
}

interface Subject {
  adapter: ProviderAdapter;
  dir: string;
  text: string;
  stream: string;
  /** Each adapter's recorded error for the failures every provider has. */
  errors: Record<'bad_request' | 'context_length_exceeded' | 'auth' | 'rate_limited' | 'server', string>;
}

const SUBJECTS: Subject[] = [
  {
    adapter: openAiAdapter,
    dir: 'openai',
    text: 'completion-text.json',
    stream: 'stream-text.sse',
    errors: {
      bad_request: 'invalid_request',
      context_length_exceeded: 'context_length',
      auth: 'authentication',
      rate_limited: 'rate_limit',
      server: 'server_error',
    },
  },
  {
    adapter: anthropicAdapter,
    dir: 'anthropic',
    text: 'message-text.json',
    stream: 'stream-text.sse',
    errors: {
      bad_request: 'invalid_request',
      context_length_exceeded: 'prompt_too_long',
      auth: 'authentication',
      rate_limited: 'rate_limit',
      server: 'api_error',
    },
  },
  {
    adapter: geminiAdapter,
    dir: 'gemini',
    text: 'generate-text.json',
    stream: 'stream-text.sse',
    errors: {
      bad_request: 'invalid_argument',
      context_length_exceeded: 'context_length',
      auth: 'api_key_invalid',
      rate_limited: 'rate_limit',
      server: 'internal',
    },
  },
];

const fixture = (dir: string, name: string) =>
  readFileSync(new URL(`./${dir}/fixtures/${name}`, import.meta.url), 'utf8');

/** The streamed fixture through the stream reader, in 37-byte pieces (events and UTF-8 cut mid-way). */
async function readStreamed(subject: Subject): Promise<{ completion: NormalizedCompletion; end: string }> {
  const bytes = Buffer.from(fixture(subject.dir, subject.stream));
  const body = (async function* () {
    for (let at = 0; at < bytes.length; at += 37) yield bytes.subarray(at, at + 37);
  })();
  const stream = UpstreamStream.fromBody(
    { body, adapter: subject.adapter, armIdle: () => () => undefined },
    { signal: new AbortController().signal, abort: () => undefined },
  );
  const aggregate = new CompletionAggregator();
  const end = await stream.read((event) => aggregate.add(event));
  return { completion: aggregate.result(), end: end.kind };
}

function expectAnAnswer(completion: NormalizedCompletion): void {
  expect(completion.choices).toHaveLength(1);
  const [choice] = completion.choices;
  expect(choice?.message.role).toBe('assistant');
  expect(typeof choice?.message.content === 'string' && choice.message.content.length > 0).toBe(true);
  expect(choice?.finish_reason).toBe('stop');
  expect(completion.usage?.promptTokens).toBeGreaterThan(0);
  expect(completion.usage?.completionTokens).toBeGreaterThan(0);
}

describe.each(SUBJECTS)('provider adapter contract: $dir', (subject) => {
  const { adapter } = subject;

  it('a whole answer becomes one assistant choice with its finish reason and usage', () => {
    const parsed = adapter.parseResponse(JSON.parse(fixture(subject.dir, subject.text)));
    if ('kind' in parsed) throw new Error(parsed.reason);
    expectAnAnswer(parsed);
  });

  it('a streamed answer read through the stream reader folds into the same kind of answer, and ends cleanly', async () => {
    const { completion, end } = await readStreamed(subject);
    expectAnAnswer(completion);
    expect(['done', 'eof']).toContain(end);
  });

  it("each provider's recorded errors map to the failures routing acts on", () => {
    const recorded = JSON.parse(fixture(subject.dir, 'errors.json')) as Record<string, RecordedError>;
    for (const [type, name] of Object.entries(subject.errors)) {
      const error = recorded[name];
      if (!error) throw new Error(`${subject.dir}: no recorded error ${name}`);
      const failure = adapter.classifyError(error.status, error.headers ?? {}, JSON.stringify(error.body));
      expect({ name, type: failure.type, status: failure.status }).toEqual({ name, type, status: error.status });
      expect(failure.message.length).toBeGreaterThan(0);
    }
  });

  it.each<[number, string, Record<string, string>, FailureType, number | null]>([
    [502, 'Bad Gateway', {}, 'server', null],
    [503, '<html>Service Unavailable</html>', { 'retry-after': '7' }, 'server', 7_000],
    [504, '', {}, 'timeout', null],
    [408, '', {}, 'timeout', null],
    [429, '', { 'retry-after-ms': '250' }, 'rate_limited', 250],
    [401, '', {}, 'auth', null],
    [402, '', {}, 'auth', null],
    [403, 'Forbidden', {}, 'auth', null],
    [404, 'Not Found', {}, 'not_found', null],
    [302, '', {}, 'invalid_response', null],
  ])('HTTP %i with a body that is not the API’s error shape → %s', (status, body, headers, type, retryAfterMs) => {
    const failure = adapter.classifyError(status, headers, body);
    expect(failure).toMatchObject({ type, status, retryAfterMs, message: `HTTP ${status}` });
    expect(failure.raw).toBe(body);
  });
});
