/** Time is injected so windows, expiries and timeouts are testable. */
export interface Clock {
  now(): number; // epoch milliseconds
}

export const systemClock: Clock = { now: () => Date.now() };
