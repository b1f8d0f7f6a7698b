/**
 * Money is integer. Balances, charges and limits are `bigint` counts of nano-USD (1e-9 USD, "units").
 * Catalog prices are decimal strings of USD per token, parsed exactly into femto-USD (1e-15) per token,
 * so a cost is computed without floats and rounded once, half up, to units.
 * JSON numbers of USD exist only at the API edge (`unitsToUsd`, `usdToUnits`).
 */
export type Units = bigint;

export const UNITS_PER_USD = 1_000_000_000n;
const UNIT_DECIMALS = 9;
const FEMTO_PER_UNIT = 1_000_000n;
const PRICE_DECIMALS = 15;

const DECIMAL = /^(\d+)(?:\.(\d+))?$/;

function parseDecimal(text: string, decimals: number, what: string): bigint {
  const match = DECIMAL.exec(text.trim());
  if (!match) throw new RangeError(`${what} "${text}" is not a non-negative decimal number`);
  const whole = match[1] ?? '0';
  const fraction = (match[2] ?? '').replace(/0+$/, '');
  if (fraction.length > decimals) {
    throw new RangeError(`${what} "${text}" has more than ${decimals} decimal places`);
  }
  return BigInt(whole) * 10n ** BigInt(decimals) + BigInt(fraction.padEnd(decimals, '0') || '0');
}

/** Price per token in femto-USD, from a catalog decimal string ("0.00000015"). */
export function parsePricePerToken(text: string): bigint {
  return parseDecimal(text, PRICE_DECIMALS, 'price');
}

/** Converts a USD amount given by a caller (JSON number or decimal string) to units; rejects sub-unit precision. */
export function usdToUnits(amount: number | string): Units {
  if (typeof amount === 'number') {
    if (!Number.isFinite(amount)) throw new RangeError('amount must be a finite number');
    // Numbers arrive in shortest round-trip form; toFixed would invent digits, so go through the string.
    const negative = amount < 0;
    const text = Math.abs(amount).toString();
    if (text.includes('e')) {
      const fixed = Math.abs(amount).toFixed(UNIT_DECIMALS);
      if (Number(fixed) !== Math.abs(amount)) throw new RangeError('amount has more than 9 decimal places');
      const units = parseDecimal(fixed, UNIT_DECIMALS, 'amount');
      return negative ? -units : units;
    }
    const units = parseDecimal(text, UNIT_DECIMALS, 'amount');
    return negative ? -units : units;
  }
  const trimmed = amount.trim();
  const negative = trimmed.startsWith('-');
  const units = parseDecimal(negative ? trimmed.slice(1) : trimmed, UNIT_DECIMALS, 'amount');
  return negative ? -units : units;
}

const MAX_EXACT_UNITS = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * Units → USD as a JSON number: the double nearest the exact decimal value. Below 2^53 units (~9
 * million USD) both operands of the division are exact doubles and IEEE division rounds correctly,
 * so it gives what parsing the decimal text gives (property-tested), ~20× faster; above, through text.
 */
export function unitsToUsd(units: Units): number {
  const negative = units < 0n;
  const abs = negative ? -units : units;
  if (abs <= MAX_EXACT_UNITS) {
    const value = Number(abs) / 1e9;
    return negative ? -value : value;
  }
  const whole = abs / UNITS_PER_USD;
  const fraction = (abs % UNITS_PER_USD).toString().padStart(UNIT_DECIMALS, '0');
  const value = Number(`${whole}.${fraction}`);
  return negative ? -value : value;
}

/**
 * Units → USD as text for people (e-mail): to the cent, with the rest of the digits when there are
 * any, exactly (`5.00`, `4.9995`, `0.0001`, `-0.00005`), as the dashboard shows amounts; never
 * rounded, so a limit of 0.0001 USD is not "0.00" and a balance of 4.9995 not "5.00".
 */
export function formatUnitsUsd(units: Units): string {
  const negative = units < 0n;
  const abs = negative ? -units : units;
  const fraction = (abs % UNITS_PER_USD).toString().padStart(UNIT_DECIMALS, '0').replace(/0+$/, '').padEnd(2, '0');
  return `${negative ? '-' : ''}${abs / UNITS_PER_USD}.${fraction}`;
}

/** Price per million tokens (USD) → femto-USD per token, for `max_price` comparisons. */
export function perMillionToPricePerToken(amount: number | string): bigint {
  const text = typeof amount === 'number' ? amount.toString() : amount;
  // USD per 1e6 tokens == 1e-6 USD per token: shift the decimal by parsing with 9 fewer places.
  return parseDecimal(
    text.includes('e') ? Number(text).toFixed(PRICE_DECIMALS - 6) : text,
    PRICE_DECIMALS - 6,
    'max_price',
  );
}

export interface TokenPrices {
  prompt: bigint; // femto-USD per token
  completion: bigint;
  request: bigint; // femto-USD per request
  /** A prompt token read from the provider's prompt cache; absent: the prompt price. */
  cacheRead?: bigint;
  /** A prompt token written to the provider's prompt cache; absent: the prompt price. */
  cacheWrite?: bigint;
  /** A prompt token written to the cache for an hour (Anthropic's `ttl: "1h"`); absent: `cacheWrite`. */
  cacheWrite1h?: bigint;
}

export interface TokenCounts {
  /** Every prompt token, the cached ones included. */
  promptTokens: number;
  completionTokens: number;
  /** Of the prompt tokens, those read from the provider's cache. */
  cachedTokens?: number;
  /** Of the prompt tokens, those written to the provider's cache. */
  cacheWriteTokens?: number;
  /** Of the cache writes, those for an hour (priced at `cacheWrite1h`). */
  cacheWrite1hTokens?: number;
}

export interface CostBreakdown {
  prompt: Units;
  completion: Units;
  total: Units;
}

function femtoToUnits(femto: bigint): Units {
  // Half up; femto is never negative here.
  return (femto + FEMTO_PER_UNIT / 2n) / FEMTO_PER_UNIT;
}

/** Cost of a completion. The total is rounded once from the exact femto sum, so total >= each part's rounding error. */
export function computeCost(prices: TokenPrices, tokens: TokenCounts): CostBreakdown {
  const promptFemto = promptCostFemto(prices, tokens) + prices.request;
  const completionFemto = prices.completion * BigInt(tokens.completionTokens);
  const total = femtoToUnits(promptFemto + completionFemto);
  const prompt = femtoToUnits(promptFemto);
  return { prompt, completion: total - prompt, total };
}

/**
 * The prompt side in femto-USD: cache reads and cache writes at their own prices, the rest at the
 * prompt price. The cache counts are parts of the prompt count; a provider reporting more cached
 * tokens than prompt tokens has them capped (reads first), so no token is priced twice.
 */
function promptCostFemto(prices: TokenPrices, tokens: TokenCounts): bigint {
  const all = tokens.promptTokens;
  const read = Math.min(Math.max(0, tokens.cachedTokens ?? 0), all);
  const written = Math.min(Math.max(0, tokens.cacheWriteTokens ?? 0), all - read);
  const hour = Math.min(Math.max(0, tokens.cacheWrite1hTokens ?? 0), written);
  const write = prices.cacheWrite ?? prices.prompt;
  return (
    prices.prompt * BigInt(all - read - written) +
    (prices.cacheRead ?? prices.prompt) * BigInt(read) +
    write * BigInt(written - hour) +
    (prices.cacheWrite1h ?? write) * BigInt(hour)
  );
}

/**
 * The most one prompt token can cost: the prompt price, or a dearer cache write (Anthropic's 1.25×),
 * or — for a request that asks for hour-long cache writes (`hourWrites`) — their price (Anthropic's 2×).
 */
export function worstPromptPrice(prices: TokenPrices, hourWrites = false): bigint {
  let worst = prices.prompt;
  const write = prices.cacheWrite ?? prices.prompt;
  if (write > worst) worst = write;
  if (hourWrites && prices.cacheWrite1h !== undefined && prices.cacheWrite1h > worst) worst = prices.cacheWrite1h;
  return worst;
}

export function isZeroPrice(prices: TokenPrices): boolean {
  return (
    prices.prompt === 0n &&
    prices.completion === 0n &&
    prices.request === 0n &&
    (prices.cacheRead ?? 0n) === 0n &&
    (prices.cacheWrite ?? 0n) === 0n &&
    (prices.cacheWrite1h ?? 0n) === 0n
  );
}

/** Femto-USD per token → the catalog's decimal string ("0.00000015"). */
export function formatPricePerToken(femto: bigint): string {
  const whole = femto / 10n ** BigInt(PRICE_DECIMALS);
  const fraction = (femto % 10n ** BigInt(PRICE_DECIMALS)).toString().padStart(PRICE_DECIMALS, '0').replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : `${whole}`;
}
