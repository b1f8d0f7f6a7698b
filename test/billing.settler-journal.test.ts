/**
 * The settler's control flow with a charge journal, against a scripted store (the Store interface,
 * in memory, idempotent on the generation id like the real ones).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ChargeJournal } from '../src/billing/charge-journal.js';
import { Settler } from '../src/billing/settler.js';
import { StoreHealth } from '../src/billing/store-health.js';
import { TollgateError } from '../src/core/errors.js';
import type { Settlement, SettleOutcome, Store } from '../src/store/types.js';
import { journalSettlement } from './helpers/journal.js';

/** `lost-reply`: the batch commits, and the caller hears only that the store is unavailable (a COMMIT past its deadline). */
type Behaviour = 'ok' | 'down' | 'slow' | 'lost-reply';

function scriptedStore() {
  const committed = new Map<string, bigint>();
  const state = {
    behaviour: 'ok' as Behaviour,
    release: null as (() => void) | null,
    calls: 0,
    refuse: new Set<string>(),
  };
  const apply = (batch: readonly Settlement[]): SettleOutcome[] => {
    if (batch.some((s) => state.refuse.has(s.generation.id)))
      throw new Error('value too long for type character varying');
    return batch.map((s) => {
      const applied = !committed.has(s.generation.id);
      if (applied) committed.set(s.generation.id, s.generation.totalCost);
      return { id: s.generation.id, applied };
    });
  };
  const store = {
    async settle(batch: readonly Settlement[]) {
      state.calls += 1;
      if (state.behaviour === 'down') throw new TollgateError('store.unavailable', 'Storage is unavailable');
      if (state.behaviour === 'slow') await new Promise<void>((resolve) => (state.release = resolve));
      if (state.behaviour === 'lost-reply') {
        apply(batch);
        throw new TollgateError('store.unavailable', 'Storage is unavailable');
      }
      return apply(batch);
    },
    async ping() {
      if (state.behaviour === 'down') throw new TollgateError('store.unavailable', 'Storage is unavailable');
    },
  } as unknown as Store;
  return { store, committed, state };
}

const quietLog = { warn: () => undefined, error: () => undefined, info: () => undefined };
let dir: string;
let journal: ChargeJournal;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tollgate-settler-'));
  journal = (await ChargeJournal.open(dir, { now: Date.now })).journal;
});
afterEach(async () => {
  await journal.close();
  await rm(dir, { recursive: true, force: true });
});

describe('settler with a charge journal', () => {
  it('store up: outcomes as before, journal entries done', async () => {
    const { store, committed } = scriptedStore();
    const settler = new Settler({ store, journal, log: quietLog });
    const syncsBefore = journal.syncs;
    const outcomes = await Promise.all([
      settler.settle(journalSettlement('a', 1n)),
      settler.settle(journalSettlement('b', 2n)),
    ]);
    expect(outcomes.map((o) => [o.applied, o.deferred])).toEqual([
      [true, undefined],
      [true, undefined],
    ]);
    expect([...committed.keys()].sort()).toEqual(['a', 'b']);
    await settler.drain();
    await new Promise((resolve) => setTimeout(resolve, 20)); // the done marker follows the charges' write
    expect(journal.depth).toBe(0);
    // Committed by the store at once: the journal's copy was written, never fsync'd.
    expect(journal.syncs).toBe(syncsBefore);
  });

  it('a charge committed while the journal could not take its record (a full disk) leaves no checkpoint of it behind', async () => {
    const { store, committed } = scriptedStore();
    const settler = new Settler({ store, journal, log: quietLog });
    // A stream's checkpoint went in before the disk filled up.
    expect(await settler.checkpoint(journalSettlement('s', 1n))).toBe(true);
    expect(journal.depth).toBe(1);
    vi.spyOn(journal, 'appendCharges').mockRejectedValue(Object.assign(new Error('ENOSPC'), { code: 'ENOSPC' }));
    const outcome = await settler.settle(journalSettlement('s', 3n));
    expect(outcome.applied).toBe(true);
    expect(committed.get('s')).toBe(3n);
    await settler.drain();
    // Outside check: the entry stayed live (depth and oldest age growing) until the next start.
    expect(journal.depth).toBe(0);
  });

  it("store slower than journalSyncAfterMs: the journal entry is fsync'd while the store still works on it", async () => {
    const { store, committed, state } = scriptedStore();
    const settler = new Settler({ store, journal, log: quietLog, journalSyncAfterMs: 10 });
    state.behaviour = 'slow';
    const syncsBefore = journal.syncs;
    const settling = settler.settle(journalSettlement('late', 3n));
    // The store is held until released below: whatever the machine's pace, the sync comes first.
    await vi.waitFor(() => expect(journal.syncs).toBe(syncsBefore + 1), { timeout: 5_000, interval: 10 });
    expect(committed.has('late')).toBe(false);
    state.release!();
    expect(await settling).toEqual({ id: 'late', applied: true });
  });

  it('store down: the caller is answered once the charge is journaled; the backlog applies it when the store returns', async () => {
    const { store, committed, state } = scriptedStore();
    const health = new StoreHealth(Date.now);
    const settler = new Settler({ store, journal, health, log: quietLog, backlogDelayMs: 10, backlogMaxDelayMs: 20 });
    state.behaviour = 'down';
    const syncsBefore = journal.syncs;
    const outcome = await settler.settle(journalSettlement('d', 5n));
    expect(outcome.applied).toBe(false);
    expect(outcome.deferred).toBeInstanceOf(Promise);
    expect(journal.depth).toBe(1);
    // Standing in for the store: fsync'd before the caller was answered (the store failed at once).
    expect(journal.syncs).toBe(syncsBefore + 1);
    expect(health.writesFailing).toBe(true);
    state.behaviour = 'ok';
    expect(await outcome.deferred).toEqual({ id: 'd', applied: true, recorded: true });
    expect(committed.get('d')).toBe(5n);
    expect(journal.depth).toBe(0);
    expect(health.inOutage).toBe(false);
  });

  it('store known to be out: a new charge is answered once journaled, without waiting on the store again; the backlog applies it', async () => {
    const { store, committed, state } = scriptedStore();
    const health = new StoreHealth(Date.now);
    const settler = new Settler({
      store,
      journal,
      health,
      log: quietLog,
      storeWaitMs: 600_000, // were the caller to wait for the store, the test would time out
      backlogDelayMs: 10,
      backlogMaxDelayMs: 20,
    });
    state.behaviour = 'down';
    const first = await settler.settle(journalSettlement('first', 2n));
    expect(health.writesFailing).toBe(true);
    state.behaviour = 'slow'; // silent now: a new attempt would hang
    const second = await settler.settle(journalSettlement('second', 3n));
    expect(second.applied).toBe(false);
    expect(second.deferred).toBeInstanceOf(Promise);
    expect(journal.has('second')).toBe(true);
    state.behaviour = 'ok';
    state.release?.();
    expect(await second.deferred).toEqual({ id: 'second', applied: true, recorded: true });
    expect(await first.deferred).toMatchObject({ id: 'first', applied: true, recorded: true });
    expect([committed.get('first'), committed.get('second')]).toEqual([2n, 3n]);
    expect(health.inOutage).toBe(false);
  });

  it('a commit whose answer was lost: the backlog finds the charge recorded, and says so (its hold becomes the charge)', async () => {
    const { store, committed, state } = scriptedStore();
    const settler = new Settler({ store, journal, log: quietLog, backlogDelayMs: 10 });
    state.behaviour = 'lost-reply';
    const outcome = await settler.settle(journalSettlement('l', 3n));
    expect(outcome.deferred).toBeInstanceOf(Promise);
    state.behaviour = 'ok';
    expect(await outcome.deferred).toEqual({ id: 'l', applied: false, recorded: true });
    expect(committed.get('l')).toBe(3n);
    expect(journal.depth).toBe(0);
  });

  it('journal written but its sync fails, store down: the caller gets the error and the journal keeps no copy to replay', async () => {
    const { store, state } = scriptedStore();
    const settler = new Settler({ store, journal, log: quietLog, retries: 0 });
    state.behaviour = 'down';
    // Fault injection: the disk takes the write and refuses the sync (EIO on fdatasync).
    journal.sync = () => Promise.reject(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
    await expect(settler.settle(journalSettlement('lost', 9n))).rejects.toMatchObject({ code: 'store.unavailable' });
    expect(journal.depth).toBe(0);
    expect(journal.has('lost')).toBe(false);
  });

  it('store slower than storeWaitMs: deferred; the attempt still in flight commits it, and it is applied once', async () => {
    const { store, committed, state } = scriptedStore();
    const settler = new Settler({ store, journal, log: quietLog, storeWaitMs: 20, backlogDelayMs: 10 });
    state.behaviour = 'slow';
    const outcome = await settler.settle(journalSettlement('s', 7n));
    expect(outcome.deferred).toBeInstanceOf(Promise);
    const callsWhileSlow = state.calls;
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(state.calls).toBe(callsWhileSlow); // the backlog leaves an entry alone while its attempt runs
    state.behaviour = 'ok';
    state.release!();
    expect(await outcome.deferred).toEqual({ id: 's', applied: true, recorded: true });
    expect(committed.get('s')).toBe(7n);
  });

  it('a charge the store refuses fails alone; the others in its batch commit; the bad one leaves the journal, counted', async () => {
    const { store, committed, state } = scriptedStore();
    state.refuse.add('bad');
    const refused: string[] = [];
    const settler = new Settler({
      store,
      journal,
      log: quietLog,
      onRefused: (settlement) => refused.push(settlement.generation.id),
    });
    const results = await Promise.allSettled(['x', 'bad', 'y'].map((id) => settler.settle(journalSettlement(id, 1n))));
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect([...committed.keys()].sort()).toEqual(['x', 'y']);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(journal.depth).toBe(0);
    expect(refused).toEqual(['bad']);
    // Kept for the operator, one JSON line with the journal's record (bigints as { $big }).
    const lines = (await readFile(join(dir, 'refused.jsonl'), 'utf8')).trim().split('\n');
    expect(lines).toHaveLength(1);
    const kept = JSON.parse(lines[0]!);
    expect(kept.reason).toMatch(/value too long/); // the store's own words
    expect(kept.caller).toBe('failed'); // its request ended with an error
    expect(kept.record.t).toBe('charge');
    expect(kept.record.s.generation).toMatchObject({ id: 'bad', totalCost: { $big: '1' } });
    // A journal reopened on the directory does not read it as a slot.
    await journal.close();
    journal = (await ChargeJournal.open(dir, { now: Date.now })).journal;
    expect(journal.depth).toBe(0);
  });

  it('a journaled charge the store refuses when its backlog is applied is given up and counted; the rest are applied', async () => {
    const { store, committed, state } = scriptedStore();
    const refused: string[] = [];
    const settler = new Settler({
      store,
      journal,
      log: quietLog,
      backlogDelayMs: 10,
      onRefused: (settlement) => refused.push(settlement.generation.id),
    });
    state.behaviour = 'down';
    const outcomes = await Promise.all(['p', 'q'].map((id) => settler.settle(journalSettlement(id, 2n))));
    expect(outcomes.every((o) => o.deferred instanceof Promise)).toBe(true);
    state.refuse.add('q');
    state.behaviour = 'ok';
    expect(await outcomes[0]!.deferred).toEqual({ id: 'p', applied: true, recorded: true });
    expect(await outcomes[1]!.deferred).toEqual({ id: 'q', applied: false, recorded: false });
    expect([...committed.keys()]).toEqual(['p']);
    expect(refused).toEqual(['q']);
    expect(settler.backlogSize).toBe(0);
    // Its caller had been served and told done: the kept line says so, for the operator applying it.
    const lines = (await readFile(join(dir, 'refused.jsonl'), 'utf8')).trim().split('\n');
    expect(lines.map((line) => JSON.parse(line).caller)).toEqual(['done']);
  });

  it('boot: a recovered charge the store refuses is kept as an earlier process’s, its caller unknown', async () => {
    await journal.appendCharges([journalSettlement('left-bad', 3n)]);
    await journal.close();
    journal = (await ChargeJournal.open(dir, { now: Date.now })).journal;
    const { store, committed, state } = scriptedStore();
    state.refuse.add('left-bad');
    const settler = new Settler({ store, journal, log: quietLog, backlogDelayMs: 10 });
    expect(settler.recover()).toBe(1);
    await settler.drain();
    expect(committed.size).toBe(0);
    const lines = (await readFile(join(dir, 'refused.jsonl'), 'utf8')).trim().split('\n');
    expect(lines.map((line) => JSON.parse(line).caller)).toEqual(['unknown']);
  });

  it('boot: charges left in the journal are applied by recover(); replaying until then', async () => {
    await journal.appendCharges([journalSettlement('left-1', 3n), journalSettlement('left-2', 4n)]);
    await journal.close();
    journal = (await ChargeJournal.open(dir, { now: Date.now })).journal;
    const { store, committed } = scriptedStore();
    committed.set('left-1', 3n); // committed before the crash, its done marker lost: replay changes nothing
    const settler = new Settler({ store, journal, log: quietLog, backlogDelayMs: 10 });
    expect(settler.recover()).toBe(2);
    expect(settler.replaying).toBe(true);
    await settler.drain();
    expect(settler.replaying).toBe(false);
    expect(Object.fromEntries(committed)).toEqual({ 'left-1': 3n, 'left-2': 4n });
    expect(journal.depth).toBe(0);
  });
});
