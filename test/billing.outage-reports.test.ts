/**
 * The outage-report protocol on its own (src/billing/outage-reports.ts), against the real stores:
 * what one process reports, what another reads of it, the wait for the others' reports, and the order
 * of one process's writes. The gate's use of it (shares, re-decided admissions) is in
 * src/billing/credit-gate.test.ts and test/billing.redis-outage.process.test.ts.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { OutageReports, type OutageReportsOptions } from '../src/billing/outage-reports.js';
import type { OutageHoldStore, Store } from '../src/store/types.js';
import { STORE_TARGETS, type StoreDatabase } from './helpers/store-targets.js';

const X = 1_000_000n;

/**
 * The store's outage reports with some calls replaced. Explicit delegation: the store is a class
 * instance, whose methods a spread (`{ ...store }`) would not copy.
 */
function withCalls(inner: OutageHoldStore, overrides: Partial<OutageHoldStore>): OutageHoldStore {
  return {
    report: (processId, at, holds) => inner.report(processId, at, holds),
    others: (processId, since, subjects) => inner.others(processId, since, subjects),
    end: (processId) => inner.end(processId),
    withdraw: (processId) => inner.withdraw(processId),
    ...overrides,
  };
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(STORE_TARGETS)('OutageReports ($name)', (target) => {
  let database: StoreDatabase;
  let store: Store;

  beforeEach(async () => {
    database = await target.createDatabase();
    store = database.openStore();
    await store.migrate();
  });
  afterEach(async () => {
    await database.cleanup();
  });

  const processOf = (processId: string, options: Partial<OutageReportsOptions> = {}) =>
    new OutageReports({
      store: store.outageHolds,
      processId,
      now: Date.now,
      fleetSize: () => 2,
      reportWaitMs: 2_000,
      onReportError: () => undefined,
      ...options,
    });

  it("a process reads the other's holds on its account and key once that one reported; its own are not counted", async () => {
    const a = processOf('a');
    const b = processOf('b');
    a.begin([
      { accountId: 'acct', keyHash: 'k1', amount: 3n * X },
      { accountId: 'acct', keyHash: 'k2', amount: 2n * X },
    ]);
    b.begin([{ accountId: 'acct', keyHash: 'k1', amount: X }]);
    const others = await b.othersHeld('acct', 'k1');
    expect(others).toEqual(
      new Map([
        ['a:acct', 5n * X],
        ['k:k1', 3n * X],
      ]),
    );
    await Promise.all([a.close(), b.close()]);
  });

  it('waits for the other live processes to report, at most reportWaitMs, and keeps what it read of an account and key for the outage', async () => {
    const a = processOf('a', { reportWaitMs: 300 });
    a.begin([]);
    const started = Date.now();
    expect(await a.othersHeld('acct', 'k1')).toEqual(new Map()); // nobody else reported: the wait ran out
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);

    const b = processOf('b');
    b.begin([{ accountId: 'acct', keyHash: 'k1', amount: X }]);
    while ((await store.outageHolds.others('a', 0, [])).reporters < 1) await pause(10); // b's report landed
    // The same outage's report, but a's lookup of this account and key was read already: it is kept.
    expect(await a.othersHeld('acct', 'k1')).toEqual(new Map());

    await expect(processOf('c').othersHeld('acct', 'k1')).rejects.toThrow('outside an outage');

    // Three live processes: a and b reported, so d's wait ends at its first look (one query for the
    // reporters, one for the holds), long before its reportWaitMs.
    let queries = 0;
    const counting = withCalls(store.outageHolds, {
      others: (processId, since, subjects) => {
        queries++;
        return store.outageHolds.others(processId, since, subjects);
      },
    });
    const d = processOf('d', { store: counting, fleetSize: () => 3, reportWaitMs: 60_000 });
    d.begin([]);
    expect(await d.othersHeld('acct', 'k1')).toEqual(
      new Map([
        ['a:acct', X],
        ['k:k1', X],
      ]),
    );
    expect(queries).toBe(2);
    await Promise.all([a.close(), b.close(), d.close()]);
  });

  it("one process's writes land in the order they were made: a slow report never lands after its end or withdrawal", async () => {
    const writes: string[] = [];
    let releaseReport!: () => void;
    const slow = withCalls(store.outageHolds, {
      report: async (processId, at, holds) => {
        await new Promise<void>((resolve) => (releaseReport = resolve));
        await store.outageHolds.report(processId, at, holds);
        writes.push('report');
      },
      end: async (processId) => {
        await store.outageHolds.end(processId);
        writes.push('end');
      },
      withdraw: async (processId) => {
        await store.outageHolds.withdraw(processId);
        writes.push('withdraw');
      },
    });
    const a = processOf('a', { store: slow });
    a.begin([{ accountId: 'acct', keyHash: 'k1', amount: X }]);
    expect(a.active).toBe(true);
    const epoch = a.epoch;
    a.end();
    expect([a.active, a.epoch]).toEqual([false, epoch + 1]);
    const closed = a.close();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(writes).toEqual([]); // all behind the report
    releaseReport();
    await closed;
    expect(writes).toEqual(['report', 'end', 'withdraw']);
    expect((await store.outageHolds.others('b', 0, ['a:acct'])).held).toEqual(new Map());
  });

  it('tries a refused report again while the outage lasts, 5 attempts in all, telling each refusal', async () => {
    const refusals: unknown[] = [];
    let calls = 0;
    const refusing = withCalls(store.outageHolds, {
      report: async () => {
        calls++;
        throw new Error('refused');
      },
    });
    const a = processOf('a', { store: refusing, onReportError: (error) => refusals.push(error) });
    a.begin([]);
    while (calls < 5) await pause(10); // attempts 500 ms apart
    await pause(700);
    expect(calls).toBe(5); // no sixth, though the outage goes on
    expect(refusals).toHaveLength(5);
    a.end();
    await a.close();

    calls = 0;
    const b = processOf('b', { store: refusing });
    b.begin([]);
    while (calls < 2) await pause(10);
    b.end(); // the outage is over: no more attempts
    await pause(700);
    expect(calls).toBe(2);
    await b.close();
  });
});
