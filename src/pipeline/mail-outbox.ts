/** The operator's view of mail not delivered yet (`GET /admin/outbox`, docs/api.md). */
import type { OutboxEntry } from '../store/mail-types.js';
import type { Store } from '../store/types.js';

export function undeliveredMail(deps: { store: Store }, limit: number, offset: number): Promise<OutboxEntry[]> {
  return deps.store.outbox.listUndelivered(limit, offset);
}
