/**
 * The one place that talks HTTP to upstream providers (undici, keep-alive pools). Each attempt gets
 * its own Cancellation; timeouts, the caller's disconnect and shutdown all abort through it, and
 * the reason is kept so the failure is classified as a timeout or a cancellation, not a crash.
 */
import { Agent, type Dispatcher } from 'undici';
import type { Cancellation, CancelState } from '../core/cancellation.js';
import type { UpstreamRequest } from '../providers/types.js';

export type AbortReason = 'connect_timeout' | 'first_token_timeout' | 'idle_timeout' | 'client_closed' | 'shutdown';

export class AttemptAbort extends Error {
  constructor(readonly reason: AbortReason) {
    super(`attempt aborted: ${reason}`);
    this.name = 'AttemptAbort';
  }
}

export function createUpstreamAgent(): Agent {
  return new Agent({
    keepAliveTimeout: 30_000,
    keepAliveMaxTimeout: 300_000,
    connections: null,
    pipelining: 1,
    // Per-attempt timers below are the real budgets; these only stop undici's own defaults from cutting in first.
    headersTimeout: 0,
    bodyTimeout: 0,
    connect: { timeout: 30_000 },
  });
}

export interface UpstreamResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Dispatcher.ResponseData['body'];
}

/** An upstream URL's origin and path, parsed once per distinct URL (one per endpoint, in practice). */
const targets = new Map<string, { origin: string; path: string }>();
const MAX_TARGETS = 1024;

function targetOf(url: string): { origin: string; path: string } {
  let target = targets.get(url);
  if (target === undefined) {
    const parsed = new URL(url);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
      throw new TypeError(`upstream URL must be http or https: ${parsed.protocol}`);
    target = { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` };
    if (targets.size >= MAX_TARGETS) targets.clear();
    targets.set(url, target);
  }
  return target;
}

/**
 * Sends the request and resolves when response headers arrived (or rejects with the abort reason).
 * Straight to the dispatcher: undici's top-level `request(url, …)` parses the URL and copies the
 * options (a spread-first literal that adds keys: a hidden class of its own on Node 20) per call.
 */
export async function sendUpstream(
  dispatcher: Dispatcher,
  upstream: UpstreamRequest,
  signal: Cancellation,
): Promise<UpstreamResponse> {
  const { origin, path } = targetOf(upstream.url);
  const response = await dispatcher.request({
    origin,
    path,
    method: 'POST',
    headers: upstream.headers,
    body: upstream.body,
    signal,
  });
  return { status: response.statusCode, headers: response.headers, body: response.body };
}

export function abortReasonOf(signal: CancelState): AbortReason | null {
  const reason: unknown = signal.reason;
  return reason instanceof AttemptAbort ? reason.reason : null;
}

/** Reads an error body for classification, bounded so a hostile upstream cannot make us buffer megabytes. */
export async function readBounded(body: AsyncIterable<Uint8Array>, maxBytes = 64 * 1024): Promise<string> {
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    if (size + chunk.byteLength > maxBytes) {
      parts.push(chunk.subarray(0, maxBytes - size));
      break;
    }
    parts.push(chunk);
    size += chunk.byteLength;
  }
  return Buffer.concat(parts).toString('utf8');
}
