/** GET /api/v1/admin/outbox — mail not delivered yet (waiting for a retry, or given up), oldest first. */
import { undeliveredMail } from '../../pipeline/mail-outbox.js';
import type { OutboxEntry } from '../../store/mail-types.js';
import { z } from 'zod';
import { pageOffset } from '../../core/page-offset.js';
import { parseBody } from '../parse-body.js';
import type { RouteTable } from '../route-table.js';
import { json } from '../route-doc.js';
import { outboxEntrySchema } from '../../pipeline/response-schemas.js';
import type { Services } from '../services.js';

const PAGE = 100;

const outboxQuery = z.object({ offset: pageOffset });

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

function renderEntry(entry: OutboxEntry) {
  return {
    id: entry.id,
    kind: entry.kind,
    to: entry.recipient,
    subject: entry.subject,
    message_id: entry.messageId,
    created_at: iso(entry.createdAt),
    attempts: entry.attempts,
    status: entry.failedAt === null ? 'pending' : 'failed',
    next_attempt_at: entry.failedAt === null ? iso(entry.nextAttemptAt) : null,
    failed_at: iso(entry.failedAt),
    last_error: entry.lastError,
  };
}

export function registerOutboxAdminRoutes(routes: RouteTable, services: Services): void {
  routes.add(
    'GET',
    '/api/v1/admin/outbox',
    async (request) => {
      const { offset } = parseBody(outboxQuery, request.query);
      const entries = await undeliveredMail(services.keys, PAGE, offset);
      return { data: entries.map(renderEntry), sending: services.config.smtpUrl !== null };
    },
    {
      auth: 'admin',
      doc: {
        summary: 'Mail not delivered yet, oldest first (100 per page)',
        tag: 'Admin',
        query: outboxQuery,
        responses: {
          200: json(
            z.object({
              data: z.array(outboxEntrySchema),
              sending: z.boolean().meta({ description: 'Whether SMTP is configured' }),
            }),
          ),
        },
      },
    },
  );
}
