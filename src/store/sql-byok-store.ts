/** BYOK provider keys over either SQL driver (same SQL text for SQLite and PostgreSQL). */
import { TollgateError } from '../core/errors.js';
import { BYOK_COLUMNS, byokFromRow, byokPatchAssignments, byokToParams } from './byok-rows.js';
import { placeholderTuple, type SqlDriver } from './sql-driver.js';
import type { ByokPatch, ByokRecord, ByokStore } from './types.js';

const COUNT = BYOK_COLUMNS.split(',').length;

export class SqlByokStore implements ByokStore {
  constructor(private readonly driver: SqlDriver) {}

  async insert(record: ByokRecord): Promise<void> {
    const result = await this.driver.run(
      `INSERT INTO byok_keys (${BYOK_COLUMNS}) VALUES ${placeholderTuple(COUNT)} ON CONFLICT (id) DO NOTHING`,
      byokToParams(record),
    );
    if (result.changes === 0) throw new TollgateError('resource.conflict', 'A BYOK entry with this id already exists');
  }

  async get(id: string): Promise<ByokRecord | null> {
    const [row] = await this.driver.all(`SELECT ${BYOK_COLUMNS} FROM byok_keys WHERE id = ? AND deleted_at IS NULL`, [
      id,
    ]);
    return row ? byokFromRow(row) : null;
  }

  async list(accountId: string): Promise<ByokRecord[]> {
    const rows = await this.driver.all(
      `SELECT ${BYOK_COLUMNS} FROM byok_keys WHERE account_id = ? AND deleted_at IS NULL ORDER BY created_at, id`,
      [accountId],
    );
    return rows.map(byokFromRow);
  }

  async listAll(): Promise<ByokRecord[]> {
    const rows = await this.driver.all(
      `SELECT ${BYOK_COLUMNS} FROM byok_keys WHERE deleted_at IS NULL ORDER BY created_at, id`,
    );
    return rows.map(byokFromRow);
  }

  async update(id: string, patch: ByokPatch, updatedAt: number): Promise<ByokRecord | null> {
    const { assignments, params } = byokPatchAssignments(patch);
    const [row] = await this.driver.all(
      `UPDATE byok_keys SET ${[...assignments, 'updated_at = ?'].join(', ')} WHERE id = ? AND deleted_at IS NULL RETURNING ${BYOK_COLUMNS}`,
      [...params, updatedAt, id],
    );
    return row ? byokFromRow(row) : null;
  }

  async delete(id: string, deletedAt: number): Promise<boolean> {
    const result = await this.driver.run('UPDATE byok_keys SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL', [
      deletedAt,
      id,
    ]);
    return result.changes > 0;
  }
}
