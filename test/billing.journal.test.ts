/**
 * The charge journal on a real directory: group commit, recovery after a restart, torn tails,
 * checkpoints of cut streams, slots of several processes and of dead ones, compaction.
 */
import { appendFile, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ChargeJournal } from '../src/billing/charge-journal.js';
import { journalSettlement } from './helpers/journal.js';

let dir: string;
const open = (options: { compactMinBytes?: number } = {}) => ChargeJournal.open(dir, { now: Date.now, ...options });

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tollgate-journal-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('charge journal', () => {
  it('group-commits concurrent appends: far fewer fsyncs than charges', async () => {
    const { journal } = await open();
    await Promise.all(
      Array.from({ length: 300 }, (_, i) => journal.appendCharges([journalSettlement(`g${i}`, BigInt(i))])),
    );
    expect(journal.depth).toBe(300);
    // The first append goes alone; the others queue behind its fsync and share the next ones.
    expect(journal.syncs).toBeLessThan(30);
    await journal.close();
  });

  it('keeps every charge not marked done across a restart, exact to the unit', async () => {
    const first = await open();
    await first.journal.appendCharges([
      journalSettlement('a', 1n),
      journalSettlement('b', 2n),
      journalSettlement('c', 99_999_999_999n),
    ]);
    first.journal.markDone(['b']);
    await first.journal.close();
    const second = await open();
    expect(second.report.recovered).toBe(2);
    expect(second.journal.charges().map((e) => [e.id, e.settlement.generation.totalCost])).toEqual([
      ['a', 1n],
      ['c', 99_999_999_999n],
    ]);
    await second.journal.close();
  });

  it('a torn tail (crash mid-write) is reported and ignored; appends after it survive the next restart', async () => {
    const first = await open();
    await first.journal.appendCharges([journalSettlement('whole', 5n)]);
    await first.journal.close();
    // Half a record: a length that promises more bytes than follow.
    await appendFile(join(dir, 'slot-0.journal'), Buffer.from([200, 0, 0, 0, 1, 2, 3, 4, 123, 34]));
    const second = await open();
    expect(second.report.damagedTails).toEqual([expect.objectContaining({ reason: 'truncated', ignoredBytes: 10 })]);
    expect(second.journal.charges().map((e) => e.id)).toEqual(['whole']);
    await second.journal.appendCharges([journalSettlement('after', 6n)]);
    await second.journal.close();
    const third = await open();
    expect(third.report.damagedTails).toEqual([]);
    expect(
      third.journal
        .charges()
        .map((e) => e.id)
        .sort(),
    ).toEqual(['after', 'whole']);
    await third.journal.close();
  });

  it('a stream checkpoint is superseded by its final charge, and becomes the charge when its process died', async () => {
    const first = await open();
    await first.journal.appendCheckpoint(journalSettlement('s1', 10n));
    await first.journal.appendCheckpoint(journalSettlement('s1', 20n));
    await first.journal.appendCheckpoint(journalSettlement('s2', 30n));
    await first.journal.appendCharges([journalSettlement('s2', 35n)]);
    // A late checkpoint never undoes the final charge.
    await first.journal.appendCheckpoint(journalSettlement('s2', 31n));
    expect(first.journal.charges().map((e) => [e.id, e.settlement.generation.totalCost])).toEqual([['s2', 35n]]);
    await first.journal.close();
    const second = await open();
    expect(second.report.checkpointsCharged).toBe(1);
    const byId = Object.fromEntries(second.journal.charges().map((e) => [e.id, e.settlement.generation.totalCost]));
    expect(byId).toEqual({ s1: 20n, s2: 35n });
    await second.journal.close();
  });

  it('a checkpoint still being written when its charge is marked done does not come back live', async () => {
    const first = await open();
    const writing = first.journal.appendCheckpoint(journalSettlement('s1', 10n));
    first.journal.markDone(['s1']); // the final charge committed meanwhile
    await writing;
    expect(first.journal.depth).toBe(0);
    await first.journal.close();
    // Nor after a restart: the late record has a done marker of its own.
    const second = await open();
    expect(second.journal.charges()).toEqual([]);
    expect(second.report.checkpointsCharged).toBe(0);
    await second.journal.close();
  });

  it('live processes get their own slots; a dead process slot is taken over by the next start', async () => {
    const a = await open();
    const b = await open();
    expect([a.report.slot, b.report.slot]).toEqual([0, 1]);
    await b.journal.appendCharges([journalSettlement('from-b', 7n)]);
    await b.journal.close(); // b "dies" leaving a charge behind; a still holds slot 0
    await a.journal.close();
    const c = await open();
    expect(c.report.slot).toBe(0);
    expect(c.report.adoptedSlots).toEqual([1]);
    expect(c.journal.charges().map((e) => e.id)).toEqual(['from-b']);
    expect((await readdir(dir)).filter((f) => f.endsWith('.journal'))).toEqual(['slot-0.journal']);
    await c.journal.close();
  });

  it('compacts a file of mostly finished charges; the live ones survive it', async () => {
    const { journal } = await open({ compactMinBytes: 64 * 1024 });
    for (let round = 0; round < 40; round++) {
      const ids = Array.from({ length: 20 }, (_, i) => `r${round}-${i}`);
      await journal.appendCharges(ids.map((id) => journalSettlement(id, 1n)));
      journal.markDone(ids.slice(round === 39 ? 1 : 0));
    }
    await journal.probe();
    expect((await stat(join(dir, 'slot-0.journal'))).size).toBeLessThan(64 * 1024);
    await journal.close();
    const again = await open();
    expect(again.journal.charges().map((e) => e.id)).toEqual(['r39-0']);
    await again.journal.close();
  });
});
