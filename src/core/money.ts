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

/** Units → USD as a JSON number. Exact for every value below 2^53 units (~9 million USD) and correctly rounded above. */
export function unitsToUsd(units: Units): number {
  const negative = units < 0n;
  const abs = negative ? -units : units;
  const whole = abs / UNITS_PER_USD;
  const fraction = (abs % UNITS_PER_USD).toString().padStart(UNIT_DECIMALS, '0');
  const value = Number(`${whole}.${fraction}`);
  return negative ? -value : value;
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
}

export interface TokenCounts {
  promptTokens: number;
  completionTokens: number;
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
  const promptFemto = prices.prompt * BigInt(tokens.promptTokens) + prices.request;
  const completionFemto = prices.completion * BigInt(tokens.completionTokens);
  const total = femtoToUnits(promptFemto + completionFemto);
  const prompt = femtoToUnits(promptFemto);
  return { prompt, completion: total - prompt, total };
}

export function isZeroPrice(prices: TokenPrices): boolean {
  return prices.prompt === 0n && prices.completion === 0n && prices.request === 0n;
}

/** Femto-USD per token → the catalog's decimal string ("0.00000015"). */
export function formatPricePerToken(femto: bigint): string {
  const whole = femto / 10n ** BigInt(PRICE_DECIMALS);
  const fraction = (femto % 10n ** BigInt(PRICE_DECIMALS)).toString().padStart(PRICE_DECIMALS, '0').replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : `${whole}`;
}
