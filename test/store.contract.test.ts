import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usagePeriods } from '../src/core/usage-window.js';
import { TollgateError } from '../src/core/errors.js';
import { MIGRATIONS } from '../src/store/migrations.js';
import pg from 'pg';
import { openPostgresStore } from '../src/store/open-store.js';
import { openPgDriver, toPgPlaceholders } from '../src/store/pg-driver.js';
import { asNumber } from '../src/store/row-values.js';
import type { GenerationRecord, KeyRecord, Settlement, Store } from '../src/store/types.js';
import { pgTestUrl } from './helpers/pg.js';
import { STORE_TARGETS, type StoreDatabase } from './helpers/store-targets.js';
import {
  creditEntryFixture,
  generationFixture,
  keyFixture,
  newAccountFixture,
  settlementFixture,
} from './helpers/store-fixtures.js';

const USD = 1_000_000_000n;
const DAY_MS = 86_400_000;
// Wednesday 2026-11-18 12:00 UTC: its week started on Monday the 16th.
const WEDNESDAY = Date.UTC(2026, 10, 18, 12);

async function expectCode(promise: Promise<unknown>, code: string): Promise<void> {
  const error: unknown = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(TollgateError);
  expect((error as TollgateError).code).toBe(code);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The messages of the process warnings emitted while `fn` runs (and on the tick after, when Node emits them). */
async function warningsDuring(fn: () => Promise<void>): Promise<string[]> {
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(warning.message);
  process.on('warning', onWarning);
  try {
    await fn();
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('warning', onWarning);
  }
  return warnings;
}

for (const target of STORE_TARGETS) {
  describe(`Store contract: ${target.name}`, { timeout: 60_000 }, () => {
    let database: StoreDatabase;
    let store: Store;

    beforeAll(async () => {
      database = await target.createDatabase();
      store = database.openStore();
      await store.migrate();
    });

    afterAll(async () => {
      await database?.cleanup();
    });

    async function newAccount(): Promise<string> {
      const account = await store.createAccount(newAccountFixture());
      return account.id;
    }

    async function newKey(accountId: string, overrides: Partial<KeyRecord> = {}): Promise<KeyRecord> {
      const key = keyFixture(accountId, overrides);
      await store.insertKey(key);
      return key;
    }

    describe('migrations', () => {
      it('reports its dialect and answers ping', async () => {
        expect(store.dialect).toBe(target.name);
        await store.ping();
      });

      it('is idempotent', async () => {
        await store.migrate();
        await store.migrate();
        const rows = await database.openDriver().all('SELECT version FROM schema_migrations ORDER BY version');
        expect(rows.map((row) => asNumber(row.version))).toEqual(MIGRATIONS.map((m) => m.version));
      });

      it('is safe when three instances migrate the same database at once', async () => {
        const fresh = await target.createDatabase();
        try {
          const stores = [fresh.openStore(), fresh.openStore(), fresh.openStore()];
          await Promise.all(stores.map((instance) => instance.migrate()));
          const rows = await fresh
            .openDriver()
            .all('SELECT version, COUNT(*) AS n FROM schema_migrations GROUP BY version ORDER BY version');
          expect(rows.map((row) => [asNumber(row.version), asNumber(row.n)])).toEqual(
            MIGRATIONS.map((m) => [m.version, 1]),
          );
          for (const instance of stores) expect(await instance.countAccounts()).toBe(0);
        } finally {
          await fresh.cleanup();
        }
      });
    });

    describe('driver transactions', () => {
      it('never lets a statement from another caller join an open transaction', async () => {
        const driver = database.openDriver();
        const inside = newAccountFixture();
        const outside = newAccountFixture();
        const insert = 'INSERT INTO accounts (id, email, password_hash, created_at) VALUES (?, ?, ?, ?)';
        const failing = driver.transaction(async (tx) => {
          await tx.run(insert, [inside.id, inside.email, null, inside.createdAt]);
          await sleep(30);
          throw new Error('roll me back');
        });
        const rolledBack = expect(failing).rejects.toThrow('roll me back');
        await sleep(5);
        await driver.run(insert, [outside.id, outside.email, null, outside.createdAt]);
        await rolledBack;
        expect(await store.getAccount(inside.id)).toBeNull();
        expect(await store.getAccount(outside.id)).not.toBeNull();
      });
    });

    describe('driver statements issued at once', () => {
      const insert = 'INSERT INTO accounts (id, email, password_hash, created_at) VALUES (?, ?, ?, ?)';

      it('run in the order issued inside a transaction, without leaning on a deprecated driver queue', async () => {
        const driver = database.openDriver();
        const first = newAccountFixture();
        let rows: unknown;
        const warnings = await warningsDuring(async () => {
          [, , rows] = await driver.transaction((tx) =>
            Promise.all([
              tx.run(insert, [first.id, first.email, null, first.createdAt]),
              tx.run('UPDATE accounts SET email = ? WHERE id = ?', [`renamed-${first.email}`, first.id]),
              tx.all('SELECT email FROM accounts WHERE id = ?', [first.id]),
            ]),
          );
        });
        expect(rows).toEqual([{ email: `renamed-${first.email}` }]);
        expect(warnings).toEqual([]);
      });

      it('roll back together when one of them fails, leaving no warning behind', async () => {
        const driver = database.openDriver();
        const [a, b] = [newAccountFixture(), newAccountFixture()];
        const warnings = await warningsDuring(async () => {
          const failing = driver.transaction((tx) =>
            Promise.all([
              tx.run(insert, [a.id, a.email, null, a.createdAt]),
              tx.run(insert, [a.id, `again-${a.email}`, null, a.createdAt]), // the same primary key
              tx.run(insert, [b.id, b.email, null, b.createdAt]),
            ]),
          );
          await expect(failing).rejects.toThrow();
        });
        expect(await store.getAccount(a.id)).toBeNull();
        expect(await store.getAccount(b.id)).toBeNull();
        expect(warnings).toEqual([]);
      });
    });

    describe('driver batches', () => {
      const insert =
        'INSERT INTO accounts (id, email, password_hash, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING RETURNING id';
      const row = (a: ReturnType<typeof newAccountFixture>) => [a.id, a.email, null, a.createdAt];

      it('runs its statements in one transaction and returns their rows', async () => {
        const driver = database.openDriver();
        const [a, b] = [newAccountFixture(), newAccountFixture()];
        const results = await driver.batch([
          { sql: insert, params: row(a), expectRows: 1 },
          { sql: insert, params: row(b) },
          { sql: 'UPDATE accounts SET total_usage = total_usage + ? WHERE id = ?', params: [5n, a.id] },
        ]);
        expect(results).toEqual([[{ id: a.id }], [{ id: b.id }], []]);
        expect((await store.getAccount(a.id))?.totalUsage).toBe(5n);
        expect(await store.getAccount(b.id)).not.toBeNull();
      });

      it('writes nothing and answers null when a statement returns other rows than expected', async () => {
        const driver = database.openDriver();
        const [a, b] = [newAccountFixture(), newAccountFixture()];
        await driver.all(insert, row(a));
        const results = await driver.batch([
          { sql: insert, params: row(b), expectRows: 1 },
          { sql: 'UPDATE accounts SET total_usage = total_usage + ? WHERE id = ?', params: [5n, a.id] },
          { sql: insert, params: row(a), expectRows: 1 }, // already there: returns no row
        ]);
        expect(results).toBeNull();
        expect(await store.getAccount(b.id)).toBeNull();
        expect((await store.getAccount(a.id))?.totalUsage).toBe(0n);
      });

      it('rolls back and rejects when a statement fails, and the driver goes on', async () => {
        const driver = database.openDriver();
        const a = newAccountFixture();
        await expect(
          driver.batch([
            { sql: insert, params: row(a) },
            { sql: 'UPDATE no_such_table SET x = 1', params: [] },
          ]),
        ).rejects.toThrow();
        expect(await store.getAccount(a.id)).toBeNull();
        expect(await driver.batch([{ sql: insert, params: row(a), expectRows: 1 }])).toEqual([[{ id: a.id }]]);
      });
    });

    describe('accounts', () => {
      it('creates an account with zero totals and reads it back', async () => {
        const before = await store.countAccounts();
        const input = newAccountFixture({ passwordHash: 'scrypt$abc' });
        const created = await store.createAccount(input);
        const expected = { ...input, totalCredits: 0n, totalPurchased: 0n, totalUsage: 0n };
        expect(created).toEqual(expected);
        expect(await store.getAccount(input.id)).toEqual(expected);
        expect(await store.countAccounts()).toBe(before + 1);
      });

      it('returns null for an unknown account', async () => {
        expect(await store.getAccount('acct_missing')).toBeNull();
      });

      it('rejects a duplicate e-mail with resource.conflict', async () => {
        const first = newAccountFixture();
        await store.createAccount(first);
        await expectCode(store.createAccount(newAccountFixture({ email: first.email })), 'resource.conflict');
        await expectCode(store.createAccount(newAccountFixture({ id: first.id })), 'resource.conflict');
      });
    });

    describe('credits', () => {
      it('adds purchases, grants and adjustments (negative too) to the right totals', async () => {
        const accountId = await newAccount();
        let result = await store.addCredits(creditEntryFixture(accountId, { kind: 'purchase', amount: 5n * USD }));
        expect(result.applied).toBe(true);
        expect(result.account).toMatchObject({ totalCredits: 5n * USD, totalPurchased: 5n * USD, totalUsage: 0n });
        result = await store.addCredits(creditEntryFixture(accountId, { kind: 'grant', amount: 2n * USD }));
        expect(result.account).toMatchObject({ totalCredits: 7n * USD, totalPurchased: 5n * USD });
        result = await store.addCredits(creditEntryFixture(accountId, { kind: 'adjustment', amount: -1_500_000_000n }));
        expect(result.account).toMatchObject({ totalCredits: 5_500_000_000n, totalPurchased: 5n * USD });
        expect(await store.getAccount(accountId)).toMatchObject({
          totalCredits: 5_500_000_000n,
          totalPurchased: 5n * USD,
        });
      });

      it('is idempotent on (account, reference)', async () => {
        const accountId = await newAccount();
        const otherId = await newAccount();
        const first = await store.addCredits(
          creditEntryFixture(accountId, { kind: 'purchase', amount: USD, reference: 'stripe:pi_1' }),
        );
        expect(first.applied).toBe(true);
        const replay = await store.addCredits(
          creditEntryFixture(accountId, { kind: 'purchase', amount: USD, reference: 'stripe:pi_1' }),
        );
        expect(replay).toEqual({ applied: false, account: first.account });
        // The reference for another amount or kind is not a replay: refused, nothing changed.
        await expectCode(
          store.addCredits(
            creditEntryFixture(accountId, { kind: 'purchase', amount: 9n * USD, reference: 'stripe:pi_1' }),
          ),
          'resource.conflict',
        );
        await expectCode(
          store.addCredits(creditEntryFixture(accountId, { kind: 'grant', amount: USD, reference: 'stripe:pi_1' })),
          'resource.conflict',
        );
        expect((await store.getAccount(accountId))?.totalCredits).toBe(USD);
        const elsewhere = await store.addCredits(
          creditEntryFixture(otherId, { kind: 'purchase', amount: USD, reference: 'stripe:pi_1' }),
        );
        expect(elsewhere.applied).toBe(true);
        // Entries without a reference are never deduplicated.
        await store.addCredits(creditEntryFixture(accountId, { amount: 1n }));
        const again = await store.addCredits(creditEntryFixture(accountId, { amount: 1n }));
        expect(again.applied).toBe(true);
        expect(again.account.totalCredits).toBe(USD + 2n);
      });

      it('rejects an unknown account with resource.not_found', async () => {
        await expectCode(store.addCredits(creditEntryFixture('acct_missing')), 'resource.not_found');
      });
    });

    describe('keys', () => {
      it('round-trips every field', async () => {
        const accountId = await newAccount();
        const key = await newKey(accountId, {
          isManagement: true,
          limit: 25n * USD,
          limitReset: 'weekly',
          includeByokInLimit: true,
          expiresAt: 1_800_000_000_000,
          updatedAt: 1_700_000_000_500,
          creatorUserId: 'user_1',
          externalUser: 'ext-42',
          workspaceId: 'ws_1',
          allowedModels: ['openai/gpt-4o-mini', 'demo/echo'],
          allowedProviders: [],
          compromisedAt: 1_700_000_000_900,
        });
        expect(await store.getKey(key.hash)).toEqual(key);
        const plain = await newKey(accountId);
        expect(await store.getKey(plain.hash)).toEqual(plain);
        expect(await store.getKey('0'.repeat(64))).toBeNull();
      });

      it('rejects a duplicate hash', async () => {
        const accountId = await newAccount();
        const key = await newKey(accountId);
        await expectCode(store.insertKey({ ...key, name: 'again' }), 'resource.conflict');
      });

      it('lists newest first with a hash tiebreak, pages, and hides disabled and deleted keys', async () => {
        const accountId = await newAccount();
        const a = await newKey(accountId, { createdAt: 1000 });
        const b = await newKey(accountId, { createdAt: 3000 });
        const c = await newKey(accountId, { createdAt: 2000, hash: 'a'.repeat(64) });
        const d = await newKey(accountId, { createdAt: 2000, hash: 'b'.repeat(64) });
        const disabled = await newKey(accountId, { createdAt: 4000, disabled: true });
        const deleted = await newKey(accountId, { createdAt: 5000 });
        await store.deleteKey(deleted.hash, 6000);
        await newKey(await newAccount(), { createdAt: 9000 });

        const hashes = (keys: KeyRecord[]) => keys.map((key) => key.hash);
        const all = await store.listKeys(accountId, { offset: 0, limit: 100, includeDisabled: true });
        expect(hashes(all)).toEqual([disabled.hash, b.hash, d.hash, c.hash, a.hash]);
        expect(all[0]).toEqual(disabled);
        const enabled = await store.listKeys(accountId, { offset: 0, limit: 100, includeDisabled: false });
        expect(hashes(enabled)).toEqual([b.hash, d.hash, c.hash, a.hash]);
        const page = await store.listKeys(accountId, { offset: 1, limit: 2, includeDisabled: false });
        expect(hashes(page)).toEqual([d.hash, c.hash]);
        expect(await store.listKeys(accountId, { offset: 10, limit: 2, includeDisabled: true })).toEqual([]);
      });

      it('updates only the patched fields and stamps updatedAt', async () => {
        const accountId = await newAccount();
        const key = await newKey(accountId, { limit: 5n * USD, limitReset: 'daily', allowedModels: ['a/b'] });
        const updated = await store.updateKey(
          key.hash,
          {
            name: 'renamed',
            disabled: true,
            limit: null,
            limitReset: null,
            allowedProviders: ['openai'],
            includeByokInLimit: true,
          },
          1_700_000_123_000,
        );
        const expected: KeyRecord = {
          ...key,
          name: 'renamed',
          disabled: true,
          limit: null,
          limitReset: null,
          allowedProviders: ['openai'],
          includeByokInLimit: true,
          updatedAt: 1_700_000_123_000,
        };
        expect(updated).toEqual(expected);
        expect(await store.getKey(key.hash)).toEqual(expected);
        const again = await store.updateKey(
          key.hash,
          { limit: 7n, limitReset: 'monthly', expiresAt: 42, compromisedAt: 43, allowedModels: null },
          1_700_000_124_000,
        );
        expect(again).toEqual({
          ...expected,
          limit: 7n,
          limitReset: 'monthly',
          expiresAt: 42,
          compromisedAt: 43,
          allowedModels: null,
          updatedAt: 1_700_000_124_000,
        });
        expect(await store.updateKey('f'.repeat(64), { name: 'x' }, 1)).toBeNull();
      });

      it('soft-deletes: the key disappears from get, list and update', async () => {
        const accountId = await newAccount();
        const key = await newKey(accountId);
        expect(await store.deleteKey(key.hash, 1_700_000_001_000)).toBe(true);
        expect(await store.deleteKey(key.hash, 1_700_000_002_000)).toBe(false);
        expect(await store.getKey(key.hash)).toBeNull();
        expect(await store.updateKey(key.hash, { name: 'zombie' }, 1)).toBeNull();
        expect(await store.listKeys(accountId, { offset: 0, limit: 10, includeDisabled: true })).toEqual([]);
        expect(await store.deleteKey('e'.repeat(64), 1)).toBe(false);
        const [row] = await database.openDriver().all('SELECT deleted_at FROM api_keys WHERE hash = ?', [key.hash]);
        expect(row && asNumber(row.deleted_at)).toBe(1_700_000_001_000);
      });
    });

    describe('settle', () => {
      async function setup(): Promise<{ accountId: string; keyHash: string }> {
        const accountId = await newAccount();
        const key = await newKey(accountId);
        return { accountId, keyHash: key.hash };
      }

      it('applies a settlement: generation, account usage and all four windows', async () => {
        const { accountId, keyHash } = await setup();
        const generation = generationFixture(accountId, keyHash, { createdAt: WEDNESDAY, totalCost: 1234n });
        const outcome = await store.settle([settlementFixture(generation)]);
        expect(outcome).toEqual([{ id: generation.id, applied: true }]);
        expect((await store.getAccount(accountId))?.totalUsage).toBe(1234n);
        const usage = (await store.getKeyUsage([keyHash], usagePeriods(WEDNESDAY))).get(keyHash);
        const spent = { usage: 1234n, byokUsage: 0n };
        expect(usage).toEqual({ all: spent, day: spent, week: spent, month: spent });
        expect(await store.getGeneration(generation.id)).toEqual(generation);
      });

      it('is idempotent: a replay (even with other numbers) changes nothing', async () => {
        const { accountId, keyHash } = await setup();
        const generation = generationFixture(accountId, keyHash, { createdAt: WEDNESDAY, totalCost: 100n });
        await store.settle([settlementFixture(generation)]);
        const replay = await store.settle([settlementFixture({ ...generation, totalCost: 999n, model: 'other' })]);
        expect(replay).toEqual([{ id: generation.id, applied: false }]);
        expect((await store.getAccount(accountId))?.totalUsage).toBe(100n);
        expect((await store.getKeyUsage([keyHash], usagePeriods(WEDNESDAY))).get(keyHash)?.all.usage).toBe(100n);
        expect(await store.getGeneration(generation.id)).toEqual(generation);
      });

      it('applies the new generations of a batch that also replays a recorded one, and only them', async () => {
        const { accountId, keyHash } = await setup();
        const recorded = generationFixture(accountId, keyHash, { createdAt: WEDNESDAY, totalCost: 100n });
        await store.settle([settlementFixture(recorded)]);
        const fresh = [7n, 11n].map((totalCost) =>
          generationFixture(accountId, keyHash, { createdAt: WEDNESDAY, totalCost }),
        );
        const outcome = await store.settle([
          settlementFixture(fresh[0]!),
          settlementFixture({ ...recorded, totalCost: 999n }),
          settlementFixture(fresh[1]!),
        ]);
        expect(outcome).toEqual([
          { id: fresh[0]!.id, applied: true },
          { id: recorded.id, applied: false },
          { id: fresh[1]!.id, applied: true },
        ]);
        expect((await store.getAccount(accountId))?.totalUsage).toBe(118n);
        const usage = (await store.getKeyUsage([keyHash], usagePeriods(WEDNESDAY))).get(keyHash);
        const spent = { usage: 118n, byokUsage: 0n };
        expect(usage).toEqual({ all: spent, day: spent, week: spent, month: spent });
        for (const generation of fresh) expect(await store.getGeneration(generation.id)).toEqual(generation);
      });

      it('applies only the first of two settlements with the same id in one batch', async () => {
        const { accountId, keyHash } = await setup();
        const generation = generationFixture(accountId, keyHash, { totalCost: 10n });
        const outcome = await store.settle([
          settlementFixture(generation),
          settlementFixture({ ...generation, totalCost: 20n }),
        ]);
        expect(outcome).toEqual([
          { id: generation.id, applied: true },
          { id: generation.id, applied: false },
        ]);
        expect((await store.getAccount(accountId))?.totalUsage).toBe(10n);
        expect(await store.settle([])).toEqual([]);
      });

      it('keeps day, week and month windows apart', async () => {
        const { accountId, keyHash } = await setup();
        const lastMonth = Date.UTC(2026, 9, 31, 12); // Saturday, previous month and week
        const monday = Date.UTC(2026, 10, 16, 8); // same week and month as WEDNESDAY, other day
        await store.settle(
          [
            generationFixture(accountId, keyHash, { createdAt: lastMonth, totalCost: 1n }),
            generationFixture(accountId, keyHash, { createdAt: monday, totalCost: 10n }),
            generationFixture(accountId, keyHash, { createdAt: WEDNESDAY, totalCost: 100n }),
            generationFixture(accountId, keyHash, { createdAt: WEDNESDAY + 1000, totalCost: 1000n }),
          ].map(settlementFixture),
        );
        const usage = (await store.getKeyUsage([keyHash], usagePeriods(WEDNESDAY))).get(keyHash);
        expect(usage?.all.usage).toBe(1111n);
        expect(usage?.month.usage).toBe(1110n);
        expect(usage?.week.usage).toBe(1110n);
        expect(usage?.day.usage).toBe(1100n);
        const nextDay = (await store.getKeyUsage([keyHash], usagePeriods(WEDNESDAY + DAY_MS))).get(keyHash);
        expect(nextDay).toMatchObject({ all: { usage: 1111n }, day: { usage: 0n }, week: { usage: 1110n } });
        expect((await store.getAccount(accountId))?.totalUsage).toBe(1111n);
      });

      it('counts BYOK: the fee in usage, the upstream cost in byokUsage', async () => {
        const { accountId, keyHash } = await setup();
        const byok = generationFixture(accountId, keyHash, {
          createdAt: WEDNESDAY,
          isByok: true,
          totalCost: 50n,
          upstreamPromptCost: 400n,
          upstreamCompletionCost: 600n,
        });
        const credit = generationFixture(accountId, keyHash, {
          createdAt: WEDNESDAY,
          totalCost: 7n,
          upstreamPromptCost: 3n,
          upstreamCompletionCost: 4n,
        });
        await store.settle([settlementFixture(byok), settlementFixture(credit)]);
        const usage = (await store.getKeyUsage([keyHash], usagePeriods(WEDNESDAY))).get(keyHash);
        const totals = { usage: 57n, byokUsage: 1000n };
        expect(usage).toEqual({ all: totals, day: totals, week: totals, month: totals });
        expect((await store.getAccount(accountId))?.totalUsage).toBe(57n);
      });

      it('settles a batch of 500 in one call, exact to the unit', async () => {
        const { accountId, keyHash } = await setup();
        const other = await newKey(accountId);
        const batch: Settlement[] = Array.from({ length: 500 }, (_, i) =>
          settlementFixture(
            generationFixture(accountId, i % 2 === 0 ? keyHash : other.hash, {
              createdAt: WEDNESDAY,
              totalCost: BigInt(1_000_003 + i),
            }),
          ),
        );
        const outcome = await store.settle(batch);
        expect(outcome.every((o, i) => o.applied && o.id === batch[i]?.generation.id)).toBe(true);
        const sum = (parity: number) =>
          batch.reduce((total, s, i) => (i % 2 === parity ? total + s.generation.totalCost : total), 0n);
        expect((await store.getAccount(accountId))?.totalUsage).toBe(sum(0) + sum(1));
        const usage = await store.getKeyUsage([keyHash, other.hash], usagePeriods(WEDNESDAY));
        expect(usage.get(keyHash)?.day.usage).toBe(sum(0));
        expect(usage.get(other.hash)?.month.usage).toBe(sum(1));
      });

      it('stays exact under 20 concurrent settle() calls of 25 each', async () => {
        const { accountId, keyHash } = await setup();
        const batches = Array.from({ length: 20 }, (_, b) =>
          Array.from({ length: 25 }, (_, i) =>
            settlementFixture(
              generationFixture(accountId, keyHash, { createdAt: WEDNESDAY, totalCost: BigInt(b * 1000 + i + 1) }),
            ),
          ),
        );
        const outcomes = await Promise.all(batches.map((batch) => store.settle(batch)));
        expect(outcomes.flat().filter((o) => o.applied)).toHaveLength(500);
        const expected = batches.flat().reduce((total, s) => total + s.generation.totalCost, 0n);
        expect((await store.getAccount(accountId))?.totalUsage).toBe(expected);
        const usage = (await store.getKeyUsage([keyHash], usagePeriods(WEDNESDAY))).get(keyHash);
        expect(usage).toMatchObject({
          all: { usage: expected },
          day: { usage: expected },
          week: { usage: expected },
          month: { usage: expected },
        });
      });

      it('getKeyUsage returns zeroes for every requested hash without counters', async () => {
        const usage = await store.getKeyUsage(
          ['1'.repeat(64), '2'.repeat(64), '1'.repeat(64)],
          usagePeriods(WEDNESDAY),
        );
        const zero = { usage: 0n, byokUsage: 0n };
        expect([...usage.keys()]).toEqual(['1'.repeat(64), '2'.repeat(64)]);
        for (const entry of usage.values()) expect(entry).toEqual({ all: zero, day: zero, week: zero, month: zero });
        expect((await store.getKeyUsage([], usagePeriods(WEDNESDAY))).size).toBe(0);
      });
    });

    describe('generations', () => {
      it('round-trips every field, with values and with nulls', async () => {
        const accountId = await newAccount();
        const key = await newKey(accountId);
        const full: GenerationRecord = generationFixture(accountId, key.hash, {
          providerName: 'OpenAI',
          isByok: true,
          streamed: true,
          cancelled: true,
          finishReason: 'length',
          nativeFinishReason: 'max_tokens',
          tokensReasoning: 12,
          tokensCached: 3,
          usageEstimated: true,
          latencyMs: 250,
          generationTimeMs: 1900,
          upstreamId: 'chatcmpl-123',
          appTitle: 'My "App" ✓',
          httpReferer: 'https://example.test/',
          userAgent: 'openai-node/6',
          externalUser: 'ext-1',
          providerResponses: [
            { provider_name: 'Groq', status: 429, latency: 40 },
            { provider_name: 'Together', status: null, latency: 10_000 },
            { provider_name: 'OpenAI', status: 200, latency: 250 },
          ],
        });
        const sparse: GenerationRecord = generationFixture(accountId, key.hash, {
          providerName: null,
          finishReason: null,
          nativeFinishReason: null,
          latencyMs: null,
          generationTimeMs: null,
          totalCost: 0n,
          upstreamPromptCost: 0n,
          upstreamCompletionCost: 0n,
          providerResponses: [],
        });
        await store.settle([settlementFixture(full), settlementFixture(sparse)]);
        expect(await store.getGeneration(full.id)).toEqual(full);
        expect(await store.getGeneration(sparse.id)).toEqual(sparse);
        expect(await store.getGeneration('gen-missing')).toBeNull();
      });
    });

    describe('large values', () => {
      it('keeps bigint amounts above 2^53 exact', async () => {
        const huge = 2n ** 60n + 7n;
        const accountId = await newAccount();
        const { account } = await store.addCredits(creditEntryFixture(accountId, { kind: 'purchase', amount: huge }));
        expect(account).toMatchObject({ totalCredits: huge, totalPurchased: huge });
        expect((await store.getAccount(accountId))?.totalCredits).toBe(huge);

        const key = await newKey(accountId, { limit: 2n ** 62n + 1n });
        expect((await store.getKey(key.hash))?.limit).toBe(2n ** 62n + 1n);

        const cost = 2n ** 54n + 3n;
        const generation = generationFixture(accountId, key.hash, {
          createdAt: WEDNESDAY,
          isByok: true,
          totalCost: cost,
          upstreamPromptCost: 2n ** 55n + 1n,
          upstreamCompletionCost: 2n ** 56n + 1n,
        });
        await store.settle([settlementFixture(generation)]);
        expect(await store.getGeneration(generation.id)).toEqual(generation);
        expect((await store.getAccount(accountId))?.totalUsage).toBe(cost);
        const usage = (await store.getKeyUsage([key.hash], usagePeriods(WEDNESDAY))).get(key.hash);
        expect(usage?.week).toEqual({ usage: cost, byokUsage: 2n ** 55n + 2n ** 56n + 2n });
      });
    });

    it("outage reports: the other processes' holds per subject since a time, a report replacing the last, withdrawn", async () => {
      const t = WEDNESDAY;
      const holds = store.outageHolds;
      // Several hundred subjects: more rows than one INSERT and one lookup take.
      const many = new Map(Array.from({ length: 450 }, (_, i) => [`k:key-${i}`, BigInt(i + 1)] as const));
      await holds.report('p1', t, new Map([...many, ['a:acct', 9n * USD]]));
      await holds.report('p2', t + 5, new Map([['a:acct', 2n ** 60n]]));
      await holds.report('p3', t + 10, new Map()); // holds nothing, but reported
      await holds.report('p0', t - 2 * 60 * 60 * 1000, new Map([['a:acct', USD]])); // an hour gone: forgotten by the next report
      await holds.report('p4', t, new Map([['a:acct', 0n]]));
      const seen = await holds.others('p3', t, [
        'a:acct',
        'a:none',
        'k:key-0',
        'k:key-449',
        ...[...many.keys()].slice(1, 300),
      ]);
      expect(seen.reporters).toBe(3); // p1, p2, p4
      expect(seen.held.get('a:acct')).toBe(9n * USD + 2n ** 60n);
      expect(seen.held.has('a:none')).toBe(false);
      expect(seen.held.get('k:key-0')).toBe(1n);
      expect(seen.held.get('k:key-449')).toBe(450n);
      expect(seen.held.get('k:key-299')).toBe(300n);
      expect((await holds.others('p3', t + 1, ['a:acct'])).held.get('a:acct')).toBe(2n ** 60n); // reported since
      await holds.report('p1', t + 20, new Map([['a:acct', USD]])); // replaces its first report
      expect((await holds.others('p9', t, ['a:acct', 'k:key-0'])).held).toEqual(new Map([['a:acct', USD + 2n ** 60n]]));
      await holds.end('p1'); // its outage is over: no longer a reporter, its holds still count
      expect(await holds.others('p9', t, ['a:acct'])).toEqual({
        reporters: 3, // p2, p3, p4
        held: new Map([['a:acct', USD + 2n ** 60n]]),
      });
      await holds.withdraw('p2');
      expect(await holds.others('p9', 0, ['a:acct'])).toEqual({ reporters: 2, held: new Map([['a:acct', USD]]) });
    });
  });
}

describe('PostgreSQL driver', () => {
  it('numbers placeholders, skipping quoted text', () => {
    expect(toPgPlaceholders(`SELECT ?, '?', "a?" FROM t WHERE x = ? AND y IN (?, ?)`)).toBe(
      `SELECT $1, '?', "a?" FROM t WHERE x = $2 AND y IN ($3, $4)`,
    );
  });

  it('parses int8 and numeric as bigint without touching the global pg.types', async () => {
    const driver = openPgDriver(await pgTestUrl());
    try {
      const [row] = await driver.all(
        'SELECT CAST(? AS BIGINT) AS big, SUM(x) AS total, COUNT(*) AS n FROM (VALUES (CAST(? AS BIGINT))) AS v (x)',
        [2n ** 62n, 2n ** 61n],
      );
      expect(row).toMatchObject({ big: 2n ** 62n, total: 2n ** 61n, n: 1n });
      expect(pg.types.getTypeParser(20, 'text')('5')).toBe('5');
    } finally {
      await driver.close();
    }
  });

  it('rejects a schema name that is not a plain identifier', () => {
    expect(() => openPgDriver('postgres://x@127.0.0.1/test', { schema: 'a; DROP' })).toThrow(RangeError);
  });

  it('reports connection failures as store.unavailable', async () => {
    const url = new URL(await pgTestUrl());
    url.port = '1'; // nothing listens there: connection refused
    const store = openPostgresStore(url.toString(), { connectionTimeoutMillis: 2000 });
    try {
      await expectCode(store.ping(), 'store.unavailable');
      await expectCode(store.settle([settlementFixture(generationFixture('acct_x', 'k'))]), 'store.unavailable');
    } finally {
      await store.close();
    }
  });
});
