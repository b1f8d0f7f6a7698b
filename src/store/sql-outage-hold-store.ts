/**
 * The processes' reports of their holds at the start of a Redis outage (`OutageHoldStore`), over
 * either SQL driver: one row per process and subject, plus a row with the empty subject that says the
 * process reported (it may hold nothing). Reports older than an hour are nobody's any more (a process
 * that died mid-outage never withdraws its own): each report deletes them.
 */
import { asBigInt, asNumber, asString } from './row-values.js';
import { placeholderRows, placeholderTuple, type SqlDriver } from './sql-driver.js';
import type { OtherProcessesHolds, OutageHoldStore } from './types.js';

/** Rows per INSERT (4 parameters each). */
const ROWS_PER_STATEMENT = 200;
/** Subjects per lookup. */
const SUBJECTS_PER_LOOKUP = 200;
const FORGOTTEN_AFTER_MS = 60 * 60 * 1000;
/** The row that says a process reported. */
const REPORTED = '';

export class SqlOutageHoldStore implements OutageHoldStore {
  constructor(private readonly driver: SqlDriver) {}

  report(processId: string, at: number, holds: ReadonlyMap<string, bigint>): Promise<void> {
    const rows: [string, bigint][] = [[REPORTED, 0n]];
    for (const [subject, amount] of holds) if (amount > 0n && subject !== REPORTED) rows.push([subject, amount]);
    return this.driver.transaction(async (tx) => {
      await tx.run('DELETE FROM outage_holds WHERE process_id = ? OR reported_at < ?', [
        processId,
        at - FORGOTTEN_AFTER_MS,
      ]);
      for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) {
        const chunk = rows.slice(i, i + ROWS_PER_STATEMENT);
        await tx.run(
          `INSERT INTO outage_holds (process_id, subject, amount, reported_at) VALUES ${placeholderRows(4, chunk.length)}`,
          chunk.flatMap(([subject, amount]) => [processId, subject, amount, at]),
        );
      }
    });
  }

  async others(processId: string, since: number, subjects: readonly string[]): Promise<OtherProcessesHolds> {
    const [count] = await this.driver.all(
      'SELECT COUNT(*) AS n FROM outage_holds WHERE subject = ? AND reported_at >= ? AND process_id <> ?',
      [REPORTED, since, processId],
    );
    const held = new Map<string, bigint>();
    for (let i = 0; i < subjects.length; i += SUBJECTS_PER_LOOKUP) {
      const chunk = subjects.slice(i, i + SUBJECTS_PER_LOOKUP);
      const rows = await this.driver.all(
        `SELECT subject, SUM(amount) AS amount FROM outage_holds WHERE subject IN ${placeholderTuple(chunk.length)} ` +
          'AND reported_at >= ? AND process_id <> ? GROUP BY subject',
        [...chunk, since, processId],
      );
      for (const row of rows) held.set(asString(row.subject), asBigInt(row.amount));
    }
    return { reporters: count ? asNumber(count.n) : 0, held };
  }

  async end(processId: string): Promise<void> {
    await this.driver.run('DELETE FROM outage_holds WHERE process_id = ? AND subject = ?', [processId, REPORTED]);
  }

  async withdraw(processId: string): Promise<void> {
    await this.driver.run('DELETE FROM outage_holds WHERE process_id = ?', [processId]);
  }
}
