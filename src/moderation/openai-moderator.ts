/**
 * Moderation by an OpenAI-compatible `POST {base_url}/moderations` endpoint (undici, own timeout).
 * All texts go in one call (`input: string[]`); the answer's `results` align with them. Reasons are
 * the flagged results' true categories (e.g. `violence`, `hate/threatening`), once each.
 */
import { request, type Dispatcher } from 'undici';
import { z } from 'zod';
import { abortSignalFor } from '../core/cancellation.js';
import { ModerationFailure, type ModerationInput, type ModerationVerdict, type Moderator } from './types.js';

export interface OpenAiModeratorOptions {
  baseUrl: string;
  apiKey: string | null;
  model: string;
  timeoutMs: number;
  name?: string;
  /** Connection pool; undici's global dispatcher when omitted. */
  dispatcher?: Dispatcher;
}

const responseSchema = z.looseObject({
  results: z
    .array(
      z.looseObject({
        flagged: z.boolean(),
        categories: z.record(z.string(), z.boolean().nullable()).optional(),
      }),
    )
    .min(1),
});

/** Moderation answers are small; a larger one is treated as invalid rather than buffered. */
const MAX_RESPONSE_BYTES = 1024 * 1024;

export class OpenAiModerator implements Moderator {
  readonly name: string;
  readonly #url: string;
  readonly #options: OpenAiModeratorOptions;

  constructor(options: OpenAiModeratorOptions) {
    this.#options = options;
    this.#url = `${options.baseUrl.replace(/\/+$/, '')}/moderations`;
    this.name = options.name ?? 'OpenAI';
  }

  async check(input: ModerationInput): Promise<ModerationVerdict> {
    if (input.texts.length === 0) return { flagged: false };
    const timeout = AbortSignal.timeout(this.#options.timeoutMs);
    const caller = input.signal ? abortSignalFor(input.signal) : null;
    const signal = caller ? AbortSignal.any([caller.signal, timeout]) : timeout;
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.#options.apiKey) headers.authorization = `Bearer ${this.#options.apiKey}`;
    let body: string;
    try {
      const response = await request(this.#url, {
        method: 'POST',
        headers,
        body: JSON.stringify({ model: this.#options.model, input: input.texts }),
        signal,
        ...(this.#options.dispatcher ? { dispatcher: this.#options.dispatcher } : {}),
      });
      if (response.statusCode !== 200) {
        await response.body.dump();
        throw new ModerationFailure(`the moderation endpoint answered HTTP ${response.statusCode}`);
      }
      body = await readLimited(response.body);
    } catch (error) {
      if (error instanceof ModerationFailure) throw error;
      const reason = timeout.aborted
        ? `no answer within ${this.#options.timeoutMs} ms`
        : input.signal?.aborted
          ? 'the caller went away'
          : `the moderation endpoint is unreachable (${(error as Error)?.message ?? 'error'})`;
      throw new ModerationFailure(reason, { cause: error });
    } finally {
      caller?.release();
    }
    return verdictOf(body, input.texts);
  }
}

async function readLimited(body: AsyncIterable<Uint8Array>): Promise<string> {
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > MAX_RESPONSE_BYTES) throw new ModerationFailure('the moderation endpoint sent an oversized answer');
    parts.push(chunk);
  }
  return Buffer.concat(parts).toString('utf8');
}

export function verdictOf(body: string, texts: readonly string[]): ModerationVerdict {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw new ModerationFailure('the moderation endpoint sent invalid JSON');
  }
  const parsed = responseSchema.safeParse(json);
  if (!parsed.success) throw new ModerationFailure('the moderation endpoint sent an answer without results');
  const reasons: string[] = [];
  let flaggedInput: string | null = null;
  // One result per input; a server answering otherwise judged the inputs together.
  const aligned = parsed.data.results.length === texts.length;
  parsed.data.results.forEach((result, i) => {
    if (!result.flagged) return;
    flaggedInput ??= aligned ? (texts[i] ?? '') : texts.join('\n');
    for (const [category, hit] of Object.entries(result.categories ?? {}))
      if (hit === true && !reasons.includes(category)) reasons.push(category);
  });
  if (flaggedInput === null) return { flagged: false };
  return { flagged: true, reasons: reasons.length > 0 ? reasons : ['flagged'], flaggedInput };
}
