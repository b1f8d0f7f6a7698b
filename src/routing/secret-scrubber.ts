/**
 * Upstream texts (error messages, error bodies relayed as `metadata.raw`, in-stream error chunks, and
 * what reaches the logs) can echo the credentials they were sent: an upstream that prints its
 * `Authorization` header leaked the operator's provider key to callers. Every upstream text is
 * scrubbed here before anything else sees it: configured provider keys and the request's BYOK keys
 * by value, and anything shaped like a bearer token or an `sk-…` / Google API key by pattern.
 */
import { CUT } from '../providers/http-error.js';
import type { ProviderAdapter, StreamDecoder, StreamEvent, UpstreamFailure } from '../providers/types.js';

export const REDACTED = '[redacted]';
/** Shorter configured "keys" (`EMPTY`, `none` for keyless local servers) are not secrets, and removing them would mangle text. */
const MIN_SECRET_LENGTH = 8;
const MAX_DEPTH = 12;
const SHAPED: readonly [RegExp, string][] = [
  [/\bBearer\s+[^\s"',;]+/gi, `Bearer ${REDACTED}`],
  [/\bsk-[A-Za-z0-9_*.-]{6,}/g, REDACTED],
  [/\bAIza[0-9A-Za-z_-]{20,}/g, REDACTED],
];

/** The shortest beginning of a configured key removed from a cut text's end. */
const MIN_TAIL = 4;
/** The start of a shaped key at a cut text's end (the whole shapes need more characters than were left). */
const SHAPED_TAIL = /\b(?:sk-|AIza)[0-9A-Za-z_*.-]*$/;

/** A configured extra header that carries a credential (Azure's `api-key`, a gateway's token, a custom auth scheme). */
const CREDENTIAL_HEADER = /auth|key|token|secret|pass|cookie|sig|credential|session/i;

/**
 * The secrets among a provider's configured extra headers: each credential header's value, and its
 * credential alone when the value names a scheme first (`Basic …`, `Token …`), which an upstream may
 * echo without it.
 */
export function headerSecrets(headers: Readonly<Record<string, string>>): string[] {
  const secrets: string[] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (!CREDENTIAL_HEADER.test(name)) continue;
    secrets.push(value);
    const scheme = /^[A-Za-z][A-Za-z0-9-]*\s+(\S+)$/.exec(value);
    if (scheme) secrets.push(scheme[1]!);
  }
  return secrets;
}

export class SecretScrubber {
  private readonly literals: readonly string[];

  constructor(secrets: Iterable<string | null | undefined> = []) {
    const unique = new Set<string>();
    for (const secret of secrets)
      if (typeof secret === 'string' && secret.length >= MIN_SECRET_LENGTH) unique.add(secret);
    // Longest first, so a key that contains another is removed whole.
    this.literals = [...unique].sort((a, b) => b.length - a.length);
  }

  /** This scrubber plus more secrets (a request's BYOK keys). */
  with(more: Iterable<string | null | undefined>): SecretScrubber {
    return new SecretScrubber([...this.literals, ...more]);
  }

  text(text: string): string {
    let out = text;
    for (const secret of this.literals) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
    for (const [pattern, replacement] of SHAPED) out = out.replace(pattern, replacement);
    return out.endsWith(CUT) ? this.cutTail(out) : out;
  }

  /**
   * A text cut short (an adapter's 80-character preview, an error body past its read limit: they end
   * in `…`) may end in the first characters of a key, which no longer match it whole: a tail that
   * begins a configured key (4 characters or more), or a key's shape, is removed too.
   */
  private cutTail(text: string): string {
    const body = text.slice(0, -CUT.length);
    for (const secret of this.literals) {
      for (let n = Math.min(secret.length - 1, body.length); n >= MIN_TAIL; n--)
        if (body.endsWith(secret.slice(0, n))) return `${body.slice(0, -n)}${REDACTED}${CUT}`;
    }
    return body.replace(SHAPED_TAIL, REDACTED) + CUT;
  }

  /** A parsed upstream body: every string (keys included) scrubbed; nesting beyond a sane depth dropped. */
  value(value: unknown, depth = 0): unknown {
    if (typeof value === 'string') return this.text(value);
    if (value === null || typeof value !== 'object') return value;
    if (depth >= MAX_DEPTH) return REDACTED;
    if (Array.isArray(value)) return value.map((item: unknown) => this.value(item, depth + 1));
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([key, item]) => [
        this.text(key),
        this.value(item, depth + 1),
      ]),
    );
  }

  failure(failure: UpstreamFailure): UpstreamFailure {
    return {
      ...failure,
      message: this.text(failure.message),
      providerCode: typeof failure.providerCode === 'string' ? this.text(failure.providerCode) : failure.providerCode,
      raw: this.value(failure.raw),
    };
  }

  event(event: StreamEvent): StreamEvent {
    if (event.kind === 'error') return { kind: 'error', failure: this.failure(event.failure) };
    if (event.kind === 'malformed') return { kind: 'malformed', reason: this.text(event.reason) };
    return event;
  }
}

/** The adapter, with every failure, in-stream error and malformed-event reason it produces scrubbed. */
export function scrubbingAdapter(adapter: ProviderAdapter, scrubber: SecretScrubber): ProviderAdapter {
  const wrapped: ProviderAdapter = {
    kind: adapter.kind,
    buildRequest: (target, body, stream) => adapter.buildRequest(target, body, stream),
    parseResponse: (json, request) => {
      const parsed = adapter.parseResponse(json, request);
      return 'kind' in parsed ? { kind: 'malformed', reason: scrubber.text(parsed.reason) } : parsed;
    },
    parseStreamEvent: (data, event) => scrubber.event(adapter.parseStreamEvent(data, event)),
    classifyError: (status, headers, bodyText) => scrubber.failure(adapter.classifyError(status, headers, bodyText)),
  };
  const open = adapter.openStream?.bind(adapter);
  if (open) {
    wrapped.openStream = (request): StreamDecoder => {
      const decoder = open(request);
      return { parseStreamEvent: (data, event) => scrubber.event(decoder.parseStreamEvent(data, event)) };
    };
  }
  return wrapped;
}
