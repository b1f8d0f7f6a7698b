/**
 * SMTP through nodemailer, configured by one URL (`smtp://user:pass@host:587` upgrades with STARTTLS
 * when the server offers it; `smtps://host:465` is TLS from the start). One connection per message:
 * mail is rare and a pool would hold a socket open for nothing.
 */
import nodemailer from 'nodemailer';
import type { OutboxEntry } from '../store/mail-types.js';

export interface MailTransport {
  /** Resolves when the server accepted the message; rejects with the server's or the network's error. */
  send(message: OutboxEntry): Promise<void>;
  close(): void;
}

export function smtpTransport(url: string, from: string, timeoutMs: number): MailTransport {
  const transporter = nodemailer.createTransport({
    url,
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
  });
  return {
    async send(message) {
      await transporter.sendMail({
        from,
        to: message.recipient,
        subject: message.subject,
        text: message.text,
        html: message.html,
        messageId: message.messageId,
        date: new Date(message.createdAt),
        headers: { 'Auto-Submitted': 'auto-generated' },
      });
    },
    close: () => transporter.close(),
  };
}

/**
 * A refusal that will not change on retry: the server rejected the recipient or the message itself
 * (550–554) or the envelope is invalid. Everything else (connection refused, timeouts, 4xx, 421) is
 * retried with backoff.
 */
export function isPermanentSendFailure(error: unknown): boolean {
  const { responseCode, code } = (error ?? {}) as { responseCode?: unknown; code?: unknown };
  if (code === 'EENVELOPE' && typeof responseCode !== 'number') return true;
  return typeof responseCode === 'number' && responseCode >= 550 && responseCode <= 554;
}

/** The server could not be reached or talked to at all: the other due messages would fail the same way. */
export function isConnectionFailure(error: unknown): boolean {
  const { code, responseCode } = (error ?? {}) as { code?: unknown; responseCode?: unknown };
  return (
    responseCode === 421 ||
    code === 'ECONNECTION' ||
    code === 'ETIMEDOUT' ||
    code === 'ESOCKET' ||
    code === 'EDNS' ||
    code === 'ETLS' ||
    code === 'EAUTH'
  );
}

/** What the outbox records about a failure: the server's reply or the error code, never credentials. */
export function describeSendFailure(error: unknown): string {
  const { responseCode, code, response } = (error ?? {}) as {
    responseCode?: unknown;
    code?: unknown;
    response?: unknown;
  };
  if (typeof response === 'string') {
    // nodemailer's `response` is the server's line, which starts with the code already ("550 5.1.1 …").
    const code = typeof responseCode === 'number' ? String(responseCode) : '';
    return (response.startsWith(code) ? response : `${code} ${response}`).trim().slice(0, 300);
  }
  if (typeof code === 'string') return code;
  return 'send failed';
}
