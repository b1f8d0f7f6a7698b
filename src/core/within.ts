/** Waiting for a promise no longer than a deadline. */

export const TIMED_OUT: unique symbol = Symbol('timed out');

/**
 * `promise`'s value, or `TIMED_OUT` when it has not settled within `ms`. A rejection within the
 * deadline is rethrown; one after it is ignored (the caller has moved on).
 */
export async function within<T>(promise: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<typeof TIMED_OUT>((resolve) => (timer = setTimeout(() => resolve(TIMED_OUT), ms)));
  promise.catch(() => undefined);
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}
