/**
 * What happens when a key is exposed: a code host's secret-scanning report or the operator disables
 * it as compromised and mails its holder (in the transaction that disables it, once per key); a key
 * pasted into a chat request only mails its holder (once per key).
 */
import { z } from 'zod';
import { hashKey, isWellFormedKey, redactKeys } from '../auth/key-format.js';
import type { ChangeBus } from '../core/change-bus.js';
import type { MailOutbox } from '../mail/mail-outbox.js';
import { keyCompromisedMail, keyInRequestMail } from '../mail/templates.js';
import type { Logger } from '../observability/logger.js';
import type { CompromisedKey, KeyRecord, Store } from '../store/types.js';
import type { KeyLeakAction } from './key-leak-step.js';

export interface ExposedKeyDeps {
  store: Store;
  bus: ChangeBus;
  mail: MailOutbox;
  now(): number;
}

export interface Exposure {
  /** A code host's secret-scanning report, or the gateway's operator (`POST /admin/keys/{hash}/compromised`). */
  reportedBy: 'scanner' | 'operator';
  url: string | null;
  source: string | null;
  reason: string | null;
}

/** A reporter's or operator's free text, as the mail, the outbox and the log get it: no key in it, bounded. */
export const exposureText = (text: string | null, max: number): string | null =>
  text === null ? null : redactKeys(text).slice(0, max);

/**
 * Disables the key as compromised and queues one message to its holder, in one transaction; a key
 * already reported changes nothing and is not mailed again. Null for an unknown or deleted key.
 */
export async function disableExposedKey(
  deps: ExposedKeyDeps,
  hash: string,
  exposure: Exposure,
): Promise<CompromisedKey | null> {
  const details = {
    reportedBy: exposure.reportedBy,
    url: exposureText(exposure.url, 2000),
    source: exposureText(exposure.source, 200),
    reason: exposureText(exposure.reason, 500),
  };
  const result = await deps.store.markKeyCompromised(hash, deps.now(), (key, account) => [
    deps.mail.compose(keyCompromisedMail({ key, ...details, dashboard: deps.mail.dashboardUrl }), {
      kind: 'key_compromised',
      recipient: account.email,
      accountId: account.id,
      dedupeKey: `key_compromised:${key.hash}`,
    }),
  ]);
  if (result?.newly) {
    await deps.bus.publish('key', hash);
    deps.mail.noteQueued([{ kind: 'key_compromised' }], result.queued);
  }
  return result;
}

// --- Secret-scanning reports (docs/api.md "Exposed keys") ---

export const scanningReportSchema = (maxTokens: number) =>
  z
    .array(
      z.looseObject({
        token: z.string(),
        type: z.string(),
        url: z.string().nullable().optional(),
        source: z.string().nullable().optional(),
      }),
    )
    .max(maxTokens, `a report may hold at most ${maxTokens} tokens`);

export type ScanningReport = z.output<ReturnType<typeof scanningReportSchema>>;

export interface ScanningVerdict {
  token_raw: string;
  token_type: string;
  label: 'true_positive' | 'false_positive';
}

/**
 * Each reported token that is a key of ours (live, disabled or already compromised; not deleted) is a
 * true positive and ends disabled as compromised; malformed, unknown and deleted tokens are false
 * positives. Answers in report order.
 */
export async function handleScanningReport(
  deps: ExposedKeyDeps,
  report: ScanningReport,
  log: Logger,
): Promise<ScanningVerdict[]> {
  const verdicts: ScanningVerdict[] = [];
  for (const entry of report) {
    let label: ScanningVerdict['label'] = 'false_positive';
    if (isWellFormedKey(entry.token)) {
      const result = await disableExposedKey(deps, hashKey(entry.token), {
        reportedBy: 'scanner',
        url: entry.url ?? null,
        source: entry.source ?? null,
        reason: null,
      });
      if (result) {
        label = 'true_positive';
        if (result.newly)
          log.warn(
            {
              key: result.key.hash.slice(0, 12),
              account: result.key.accountId,
              source: exposureText(entry.source ?? null, 200),
            },
            'key disabled as compromised (secret-scanning report)',
          );
      }
    }
    verdicts.push({ token_raw: entry.token, token_type: entry.type, label });
  }
  return verdicts;
}

// --- Keys pasted into chat requests ---

/** Mails the holder of each key (once per key, ever); failures are logged, never thrown. */
export async function notifyKeysInRequest(
  deps: ExposedKeyDeps,
  keys: readonly string[],
  action: KeyLeakAction,
  log: Logger,
): Promise<void> {
  for (const plaintext of keys) {
    const hash = hashKey(plaintext);
    try {
      const key = await deps.store.getKey(hash);
      // A key reported compromised is disabled for good and its holder was told: nothing new to say.
      if (!key || key.compromisedAt !== null) continue;
      const account = await deps.store.getAccount(key.accountId);
      if (!account) continue;
      log.warn(
        { key: hash.slice(0, 12), account: key.accountId, action },
        'a Tollgate key appeared inside a chat request',
      );
      await deps.mail.enqueue([
        deps.mail.compose(
          keyInRequestMail({ key, action, state: keyState(key, deps.now()), dashboard: deps.mail.dashboardUrl }),
          {
            kind: 'key_in_request',
            recipient: account.email,
            accountId: account.id,
            dedupeKey: `key_in_request:${hash}`,
          },
        ),
      ]);
    } catch (error) {
      log.warn({ err: error, key: hash.slice(0, 12) }, 'could not queue the notice about a key found in a request');
    }
  }
}

function keyState(key: KeyRecord, now: number): 'enabled' | 'disabled' | 'expired' {
  if (key.disabled) return 'disabled';
  return key.expiresAt !== null && key.expiresAt <= now ? 'expired' : 'enabled';
}
