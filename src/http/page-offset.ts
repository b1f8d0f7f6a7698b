/**
 * The `offset` query parameter of paged listings: decimal digits only (empty = 0), at most 1,000,000 — never
 * `1e20`, `0x10` or `-0`, which `Number()` would accept and the store would choke on.
 */
import { z } from 'zod';

export const MAX_OFFSET = 1_000_000;

export const pageOffset = z
  .string()
  .regex(/^\d{0,7}$/, `offset must be a whole number from 0 to ${MAX_OFFSET}`)
  .transform(Number)
  .refine((n) => n <= MAX_OFFSET, `offset must be a whole number from 0 to ${MAX_OFFSET}`)
  .optional()
  .transform((n) => n ?? 0);
