/**
 * The `offset` query parameter of paged listings: decimal digits only (empty = 0), at most 1,000,000 — never
 * `1e20`, `0x10` or `-0`, which `Number()` would accept and the store would choke on.
 */
import { z } from 'zod';

export const MAX_OFFSET = 1_000_000;

/** `offset` up to `max` (a listing whose deep pages are read with a cursor instead: `before`). */
export function pageOffsetUpTo(max: number) {
  const message = `offset must be a whole number from 0 to ${max}`;
  return z
    .string()
    .regex(/^\d{0,7}$/, message)
    .transform(Number)
    .refine((n) => n <= max, message)
    .optional()
    .transform((n) => n ?? 0);
}

export const pageOffset = pageOffsetUpTo(MAX_OFFSET);
