/** `accounts:` in the config file: who may sign up, how long sessions live, sign-in and reset-request limits. */
import { z } from 'zod';

const sessionSchema = z
  .object({
    /** A session ends this long after sign-in, however active (absolute expiry). */
    absolute_hours: z
      .number()
      .int()
      .positive()
      .max(24 * 365)
      .default(24 * 30),
    /** A session unused this long ends (rolling: each use pushes it forward). */
    idle_hours: z
      .number()
      .int()
      .positive()
      .max(24 * 365)
      .default(24 * 7),
    /** The rolling renewal is written at most this often per session (a store write per request would be waste). */
    renew_every_minutes: z
      .number()
      .int()
      .positive()
      .max(24 * 60)
      .default(5),
  })
  .strict();

const signInLimitsSchema = z
  .object({
    /**
     * Failed sign-ins allowed per e-mail address from one client address within the window: one source
     * guessing is stopped without locking the account for its holder elsewhere.
     */
    per_account_and_address: z.number().int().positive().default(5),
    /** Failed sign-ins allowed per e-mail address from all client addresses together (guessing from many sources). */
    per_account: z.number().int().positive().default(20),
    /** Failed sign-ins allowed per client address within the window (and sign-ups, counted apart). */
    per_address: z.number().int().positive().default(20),
    /** Password-reset requests per client address within the window, whatever the e-mails. */
    password_reset_per_address: z.number().int().positive().default(20),
    window_minutes: z
      .number()
      .int()
      .positive()
      .max(24 * 60)
      .default(15),
  })
  .strict();

export const accountsSchema = z
  .object({
    /** `closed`: the operator creates accounts (CLI, admin API); `open`: anyone may sign up on the dashboard. */
    signup: z.enum(['closed', 'open']).default('closed'),
    session: sessionSchema.prefault({}),
    sign_in_limits: signInLimitsSchema.prefault({}),
  })
  .strict();

export type AccountsConfig = z.output<typeof accountsSchema>;
