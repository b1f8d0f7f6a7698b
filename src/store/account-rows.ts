import type { AccountRecord } from './types.js';
import { asBigInt, asNullableString, asNumber, asString } from './row-values.js';
import type { SqlRow } from './sql-driver.js';

export const ACCOUNT_COLUMNS = 'id, email, password_hash, created_at, total_credits, total_purchased, total_usage';

export function accountFromRow(row: SqlRow): AccountRecord {
  return {
    id: asString(row.id),
    email: asString(row.email),
    passwordHash: asNullableString(row.password_hash),
    createdAt: asNumber(row.created_at),
    totalCredits: asBigInt(row.total_credits),
    totalPurchased: asBigInt(row.total_purchased),
    totalUsage: asBigInt(row.total_usage),
  };
}
