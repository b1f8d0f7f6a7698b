/**
 * The `mail`, `secret_scanning` and `notifications` sections of the config file. SMTP itself comes
 * from the environment (`TOLLGATE_SMTP_URL`: it carries a password); everything here is safe to commit.
 * Public keys of the secret-scanning partner are parsed at boot, so a broken PEM stops the gateway
 * with the other config errors instead of answering 401 to every report.
 */
import { createPublicKey } from 'node:crypto';
import { z } from 'zod';

/** `Name <user@host>` or `user@host`. */
const MAILBOX = /^(?:[^<>]*<\s*[^\s<>@]+@[^\s<>@]+\s*>|[^\s<>@]+@[^\s<>@]+)$/;

/** The sender when none is set: a domain that cannot exist (RFC 2606), so an unset sender is plain to see. */
export const DEFAULT_MAIL_FROM = 'Tollgate <noreply@tollgate.invalid>';

export const mailSchema = z
  .object({
    /** The sender of every message. */
    from: z
      .string()
      .regex(MAILBOX, 'must be an address, e.g. "Tollgate <noreply@example.com>"')
      .default(DEFAULT_MAIL_FROM),
    /** Where account holders open the dashboard (links in messages, e.g. password reset); null: no links. */
    public_url: z.string().url().nullable().default(null),
    /** How often a sender looks for due messages (it is also woken when this process queues one). */
    poll_interval_ms: z.number().int().positive().default(5_000),
    /** Backoff after a failed send: base · 2^(attempt−1), ±20 % jitter, capped at retry_max_ms. */
    retry_base_ms: z.number().int().positive().default(30_000),
    retry_max_ms: z.number().int().positive().default(3_600_000),
    /** Sends tried before a message is given up (it stays listed in GET /admin/outbox). */
    max_attempts: z.number().int().positive().default(20),
    /** Connection, greeting and socket timeout of one send. */
    send_timeout_ms: z.number().int().positive().default(30_000),
  })
  .strict();

const publicKeySchema = z
  .object({
    key_identifier: z.string().min(1).max(200),
    key: z.string().min(1),
  })
  .strict()
  .superRefine((entry, ctx) => {
    const problem = p256KeyProblem(entry.key);
    if (problem) ctx.addIssue({ code: 'custom', path: ['key'], message: problem });
  });

/** Null when `pem` is an ECDSA P-256 public key, else what is wrong with it. */
export function p256KeyProblem(pem: string): string | null {
  try {
    const key = createPublicKey(pem);
    if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1')
      return 'must be an ECDSA P-256 public key (PEM)';
    return null;
  } catch {
    return 'is not a PEM public key';
  }
}

export const secretScanningSchema = z
  .object({
    /** The code host's public keys, by identifier (PEM). */
    public_keys: z.array(publicKeySchema).default([]),
    /** Optional: refresh the keys from a URL serving `{ public_keys: [{ key_identifier, key, is_current }] }`. */
    keys_url: z.string().url().nullable().default(null),
    /** Fetched keys are kept this long; an unknown identifier refetches at most once a minute. */
    keys_refresh_ms: z.number().int().positive().default(3_600_000),
    /** A Tollgate key inside a chat request: replace it by its masked label, refuse the request (400), or let it pass. */
    in_requests: z.enum(['redact', 'block', 'off']).default('redact'),
    /** Largest report accepted (bytes) and most tokens in one report. */
    max_body_bytes: z
      .number()
      .int()
      .positive()
      .max(16 * 1024 * 1024)
      .default(256 * 1024),
    max_tokens: z.number().int().positive().max(100_000).default(1000),
  })
  .strict();

export const notificationsSchema = z
  .object({
    /** Default low-balance threshold (USD) of accounts that did not choose one. */
    low_balance_threshold: z.number().nonnegative().max(1e9).default(1),
    /** Keys expiring within this many days are announced (once per expiry date). */
    key_expiry_days: z.number().int().positive().max(365).default(7),
    /** How often the expiry sweep runs. */
    sweep_interval_ms: z.number().int().positive().default(3_600_000),
    /** Balance and key-limit checks run this long after a charge, coalesced per account and key. */
    check_delay_ms: z.number().int().nonnegative().default(1_000),
  })
  .strict();

export type MailConfig = z.output<typeof mailSchema>;
export type SecretScanningConfig = z.output<typeof secretScanningSchema>;
export type NotificationsConfig = z.output<typeof notificationsSchema>;
