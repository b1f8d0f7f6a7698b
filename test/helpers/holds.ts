/**
 * Shared pieces of the in-flight hold suites: a model whose every request costs exactly X, and a
 * burst of concurrent requests spread over one or more gateways.
 */
import { Pool, request } from 'undici';

/** USD per completion token of the fixed-cost model. */
export const FIXED_COMPLETION_PRICE = '0.0001';
/** `max_tokens` of every fixed-cost request: the simulator then produces exactly this many tokens. */
export const FIXED_TOKENS = 10;
/** One fixed-cost request: 10 tokens × 0.0001 USD = 0.001 USD, and the hold estimate is the same. */
export const X_USD = 0.001;
export const X_UNITS = 1_000_000;

/** A catalog model that costs exactly X per request (no prompt price, so the prompt estimate cannot matter). */
export function fixedCostModel(id: string, upstream: string, provider = 'mock') {
  return {
    id,
    name: id,
    context_length: 8192,
    endpoints: [
      {
        provider,
        model: upstream,
        pricing: { prompt: '0', completion: FIXED_COMPLETION_PRICE },
        max_completion_tokens: 1024,
      },
    ],
  };
}

export function fixedBody(model: string, i: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { model, messages: [{ role: 'user', content: `burst ${i}` }], max_tokens: FIXED_TOKENS, ...extra };
}

export interface BurstResult {
  statuses: Map<number, number>;
  admitted: number;
  /** Sum of `usage.cost` of the admitted answers, in units. */
  chargedUnits: number;
  /** Bodies of answers other than 200 and 402 (first few), for diagnosis. */
  others: string[];
}

/** `count` concurrent POST /chat/completions, round-robin over `baseUrls`, one connection each. */
export async function burst(
  baseUrls: readonly string[],
  key: string,
  model: string,
  count: number,
): Promise<BurstResult> {
  const pools = baseUrls.map(
    (url) => new Pool(url, { connections: Math.ceil(count / baseUrls.length), pipelining: 1 }),
  );
  try {
    const answers = await Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const response = await request(`${baseUrls[i % baseUrls.length]}/api/v1/chat/completions`, {
          method: 'POST',
          dispatcher: pools[i % pools.length],
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify(fixedBody(model, i)),
        });
        const text = await response.body.text();
        return {
          status: response.statusCode,
          text,
          cost: response.statusCode === 200 ? Math.round(JSON.parse(text).usage.cost * 1e9) : 0,
        };
      }),
    );
    const statuses = new Map<number, number>();
    for (const a of answers) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
    const others = answers.filter((a) => a.status !== 200 && a.status !== 402).map((a) => `${a.status} ${a.text}`);
    return {
      statuses,
      admitted: statuses.get(200) ?? 0,
      chargedUnits: answers.reduce((sum, a) => sum + a.cost, 0),
      others: others.slice(0, 3),
    };
  } finally {
    await Promise.all(pools.map((pool) => pool.close()));
  }
}
