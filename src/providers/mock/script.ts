/**
 * What the mock provider does with one request. A script comes from three layers, later ones
 * winning: the server's defaults, parameters in the model name, and the `x-mock-script` header.
 *
 *   model:  mock/anything@latency=200,tps=50,status=429,retry_after=2,behavior=reset
 *           mock/latency=200,tps=50            (after "mock/", the "@" may be left out)
 *   header: x-mock-script: {"latencyMs":200,"tokensPerSecond":50,"behavior":"stall"}
 *
 * Keys are matched ignoring case and underscores, so `retry_after`, `retryAfter` and `RETRYAFTER`
 * are one key; every key also has a short alias (see KEY_ALIASES). Values in a model name are
 * percent-decoded, so `content=Hello%2C%20world` carries a comma.
 */

export const MOCK_BEHAVIORS = [
  'ok',
  'reset', // destroy the socket before any response header
  'hang', // never answer
  'stall', // stream `breakAfter` tokens, then send nothing more, keeping the connection open
  'drop', // stream `breakAfter` tokens, then destroy the socket
  'malformed', // one event of invalid JSON after `breakAfter` tokens, then carry on
  'no_done', // end the stream without `data: [DONE]`
  'stream_error', // `breakAfter` tokens, then an in-band {"error":{...}} event, then end
  'context_length', // 400 context_length_exceeded
  'content_policy', // 400 content_policy_violation
] as const;

export type MockBehavior = (typeof MOCK_BEHAVIORS)[number];

export interface MockScript {
  latencyMs: number; // before response headers (non-streamed: before the whole response)
  ttftMs: number; // after headers, before the first chunk
  tokensPerSecond: number; // streaming pace; 0 sends everything at once
  completionTokens: number | null; // null: min(max_completion_tokens ?? max_tokens, 40), or the content's length
  content: string | null; // replaces the generated text
  usage: boolean; // false: never report usage
  status: number | null; // answer with this HTTP error status (OpenAI error body)
  errorCode: string | null; // overrides the error body's `code`
  errorMessage: string | null; // overrides the error body's `message`
  retryAfter: number | null; // seconds; sent as `retry-after` and `retry-after-ms`
  behavior: MockBehavior;
  failFirst: number; // the first N requests with this model + header fail (status, or behavior), later ones succeed
  breakAfter: number; // content chunks sent before stall/drop/malformed/stream_error strike
}

export const DEFAULT_MOCK_SCRIPT: Readonly<MockScript> = Object.freeze({
  latencyMs: 0,
  ttftMs: 0,
  tokensPerSecond: 0,
  completionTokens: null,
  content: null,
  usage: true,
  status: null,
  errorCode: null,
  errorMessage: null,
  retryAfter: null,
  behavior: 'ok',
  failFirst: 0,
  breakAfter: 3,
});

type Key = keyof MockScript;

/** Normalized spelling (lower case, no underscores) → field. Long names normalize to themselves. */
const KEY_ALIASES: Record<string, Key> = {
  latency: 'latencyMs',
  ttft: 'ttftMs',
  tps: 'tokensPerSecond',
  tokens: 'completionTokens',
  code: 'errorCode',
  message: 'errorMessage',
};
for (const key of Object.keys(DEFAULT_MOCK_SCRIPT) as Key[]) KEY_ALIASES[normalizeKey(key)] = key;

const NUMBER_KEYS = new Set<Key>([
  'latencyMs',
  'ttftMs',
  'tokensPerSecond',
  'completionTokens',
  'status',
  'retryAfter',
  'failFirst',
  'breakAfter',
]);
const NULLABLE_KEYS = new Set<Key>([
  'completionTokens',
  'content',
  'status',
  'errorCode',
  'errorMessage',
  'retryAfter',
]);

export type ScriptResult = { ok: true; script: Partial<MockScript> } | { ok: false; error: string };

/** The parameters in a model name; an empty script when it has none. */
export function parseModelScript(model: string): ScriptResult {
  const at = model.indexOf('@');
  let params: string;
  if (at !== -1) params = model.slice(at + 1);
  else if (model.startsWith('mock/') && model.includes('=')) params = model.slice('mock/'.length);
  else return { ok: true, script: {} };
  const entries: [string, unknown][] = [];
  for (const pair of params.split(',')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    if (eq === -1) return { ok: false, error: `model parameter "${pair}" is not key=value` };
    let value: string;
    try {
      value = decodeURIComponent(pair.slice(eq + 1));
    } catch {
      return { ok: false, error: `model parameter "${pair}" has a bad percent-encoding` };
    }
    entries.push([pair.slice(0, eq), value]);
  }
  return readEntries(entries);
}

/** The `x-mock-script` header: a JSON object with the same keys. */
export function parseHeaderScript(header: string): ScriptResult {
  let json: unknown;
  try {
    json = JSON.parse(header);
  } catch {
    return { ok: false, error: 'x-mock-script is not JSON' };
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    return { ok: false, error: 'x-mock-script is not a JSON object' };
  return readEntries(Object.entries(json));
}

function readEntries(entries: [string, unknown][]): ScriptResult {
  const script: Record<string, unknown> = {};
  for (const [rawKey, rawValue] of entries) {
    const key = KEY_ALIASES[normalizeKey(rawKey)];
    if (key === undefined) return { ok: false, error: `unknown mock script key "${rawKey}"` };
    const value = readValue(key, rawValue);
    if (value === undefined)
      return { ok: false, error: `bad value for mock script key "${rawKey}": ${JSON.stringify(rawValue)}` };
    script[key] = value;
  }
  return { ok: true, script: script as Partial<MockScript> };
}

/** The typed value, or undefined when it does not fit the key. */
function readValue(key: Key, value: unknown): unknown {
  if (value === null || value === 'null') return NULLABLE_KEYS.has(key) ? null : undefined;
  if (NUMBER_KEYS.has(key)) {
    const n =
      typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : Number.NaN;
    return Number.isFinite(n) && n >= 0 ? n : undefined;
  }
  if (key === 'usage') {
    if (value === true || value === 'true' || value === '1') return true;
    if (value === false || value === 'false' || value === '0') return false;
    return undefined;
  }
  if (key === 'behavior') return (MOCK_BEHAVIORS as readonly unknown[]).includes(value) ? value : undefined;
  return typeof value === 'string' ? value : undefined;
}

function normalizeKey(key: string): string {
  return key.toLowerCase().replaceAll('_', '').replaceAll('-', '');
}

/**
 * `failFirst`: requests before the Nth fail — with `status`, or the scripted failing behavior, or
 * 500 when neither is given — and later requests are healthy (status and behavior cleared).
 */
export function applyFailFirst(script: MockScript, previousRequests: number): MockScript {
  if (script.failFirst <= 0) return script;
  if (previousRequests >= script.failFirst) return { ...script, status: null, behavior: 'ok' };
  if (script.status === null && script.behavior === 'ok') return { ...script, status: 500 };
  return script;
}
