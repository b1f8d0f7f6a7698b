import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalChangeBus } from '../core/change-bus.js';
import { TollgateError } from '../core/errors.js';
import type { FleetView, ResyncReason } from '../core/fleet.js';
import type { OutageHoldStore } from '../store/types.js';
import type { AccountRecord, GenerationRecord, KeyRecord, KeyUsage, Store } from '../store/types.js';
import { CreditGate } from './credit-gate.js';
import type { HoldStore } from './hold-store.js';
import { ZERO_USAGE } from './key-view.js';
import { MemoryHoldStore } from './memory-hold-store.js';
import { RedisHoldStore } from './redis-hold-store.js';

const X = 1_000_000n;

/** A store that serves one account whose totals the test sets, and counts reads. */
/** The processes' outage reports, as the database keeps them (store/sql-outage-hold-store.ts). */
function memoryOutageHolds(): OutageHoldStore {
  const reports = new Map<string, { at: number; holds: ReadonlyMap<string, bigint>; ended: boolean }>();
  return {
    async report(processId, at, holds) {
      reports.set(processId, { at, holds: new Map(holds), ended: false });
    },
    async others(processId, since, subjects) {
      let reporters = 0;
      const held = new Map<string, bigint>();
      for (const [id, report] of reports) {
        if (id === processId || report.at < since) continue;
        if (!report.ended) reporters++;
        for (const subject of subjects) {
          const amount = report.holds.get(subject);
          if (amount) held.set(subject, (held.get(subject) ?? 0n) + amount);
        }
      }
      return { reporters, held };
    },
    async end(processId) {
      const report = reports.get(processId);
      if (report) report.ended = true;
    },
    async withdraw(processId) {
      reports.delete(processId);
    },
  };
}

function fakeStore(account: AccountRecord, outageHolds: OutageHoldStore = memoryOutageHolds()) {
  const reads = { account: 0 };
  const store = {
    outageHolds,
    async getAccount(id: string) {
      reads.account++;
      return id === account.id ? { ...account } : null;
    },
    async getKeyUsage(hashes: readonly string[]) {
      return new Map<string, KeyUsage>(hashes.map((h) => [h, ZERO_USAGE]));
    },
  } as unknown as Store;
  return { store, reads, account };
}

/** The in-memory store behind a switch: `down` makes every call fail like an unreachable Redis. */
function switchable(inner: HoldStore) {
  const state = { down: false };
  const guard =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      if (state.down) throw new TollgateError('store.unavailable', 'The credit hold store (Redis) is unavailable');
      return fn(...args);
    };
  const store: HoldStore = {
    marks: guard(inner.marks.bind(inner)),
    admit: guard(inner.admit.bind(inner)),
    settle: guard(inner.settle.bind(inner)),
    release: guard(inner.release.bind(inner)),
    renew: guard(inner.renew.bind(inner)),
    restore: guard(inner.restore.bind(inner)),
    held: inner.held.bind(inner),
    close: inner.close.bind(inner),
  };
  return { store, state };
}

const key = (accountId: string, extra: Partial<KeyRecord> = {}): KeyRecord =>
  ({ hash: 'k1', accountId, limit: null, limitReset: null, includeByokInLimit: false, ...extra }) as KeyRecord;
const account = (credits: bigint): AccountRecord => ({
  id: 'acct',
  email: 'a@example.test',
  passwordHash: null,
  createdAt: 0,
  totalCredits: credits,
  totalPurchased: 0n,
  totalUsage: 0n,
});
const charge = (cost: bigint) =>
  ({ totalCost: cost, isByok: false, upstreamPromptCost: 0n, upstreamCompletionCost: 0n }) as GenerationRecord;

/** A fleet the test steers: how many processes, whether Redis is trusted, and resync events. */
function fakeFleet(size: number) {
  const listeners = new Set<(reason: ResyncReason) => void>();
  const trustListeners = new Set<(trusted: boolean) => void>();
  const fleet = {
    size,
    trusted: true as boolean,
    seen: true as boolean,
    onResync(listener: (reason: ResyncReason) => void) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    onTrustChange(listener: (trusted: boolean) => void) {
      trustListeners.add(listener);
      return () => trustListeners.delete(listener);
    },
    suspect() {
      fleet.setTrusted(false);
    },
    /** As a heartbeat finds it. */
    setTrusted(trusted: boolean) {
      if (fleet.trusted === trusted) return;
      fleet.trusted = trusted;
      for (const listener of trustListeners) listener(trusted);
    },
    resync(reason: ResyncReason) {
      for (const listener of listeners) listener(reason);
    },
  } satisfies FleetView & { resync(reason: ResyncReason): void; setTrusted(trusted: boolean): void };
  return fleet;
}

const gates: CreditGate[] = [];
function gateOf(store: Store, holds: HoldStore, holdTtlMs = 120_000, now: () => number = Date.now) {
  const gate = new CreditGate({ store, bus: new LocalChangeBus(), now, ttlMs: 60_000, holds, holdTtlMs });
  gates.push(gate);
  return gate;
}
afterEach(() => gates.splice(0).forEach((g) => g.close()));

const codeOf = (promise: Promise<unknown>) =>
  promise.then(
    () => 'admitted',
    (e: unknown) => (e instanceof TollgateError ? e.code : String(e)),
  );

describe('CreditGate', () => {
  it('a settled charge counts at once, although the balance snapshot is older than it', async () => {
    const { store, reads } = fakeStore(account(3n * X));
    const gate = gateOf(store, new MemoryHoldStore());
    const first = await gate.admit(key('acct'), true, 2n * X);
    await gate.settle(first, charge(2n * X));
    expect(await gate.held('acct')).toBe(0n);
    // Snapshot still says 3X; 2X were charged since: 1X is left, so one more request fits, not two.
    await gate.admit(key('acct'), true, X);
    expect(await codeOf(gate.admit(key('acct'), true, X))).toBe('billing.insufficient_credits');
    expect(reads.account).toBe(1);
  });

  it('hold store down: paid → 503, free → checked on the snapshot alone; back up → paid admitted on a fresh snapshot', async () => {
    const { store, reads, account: record } = fakeStore(account(5n * X));
    const { store: holds, state } = switchable(new MemoryHoldStore());
    const gate = gateOf(store, holds);
    state.down = true;
    expect(await codeOf(gate.admit(key('acct'), true, X))).toBe('store.unavailable');
    expect(await codeOf(gate.admit(key('acct'), false, 0n))).toBe('admitted');
    const readsWhileDown = reads.account;
    expect(await codeOf(gate.admit(key('acct'), true, X))).toBe('store.unavailable');
    expect(reads.account).toBe(readsWhileDown); // no database read per refused request while Redis is down
    state.down = false;
    expect(await codeOf(gate.admit(key('acct'), true, X))).toBe('admitted');
    expect(reads.account).toBe(readsWhileDown + 1); // the mark-less snapshot was replaced
    // A negative balance still refuses a free request when only the snapshot is available.
    record.totalUsage = 6n * X;
    const other = fakeStore({ ...record });
    const gate2 = gateOf(other.store, holds);
    state.down = true;
    expect(await codeOf(gate2.admit(key('acct'), false, 0n))).toBe('billing.insufficient_credits');
  });

  it('renews the holds of running requests, so they outlive the TTL; a released hold is gone at once', async () => {
    const { store } = fakeStore(account(10n * X));
    const holds = new MemoryHoldStore();
    let now = Date.now();
    const t0 = now;
    const gate = gateOf(store, holds, 300, () => now); // renews every 100 ms of real time
    const hold = await gate.admit(key('acct'), true, 4n * X); // expires at t0 + 300 unless renewed
    now = t0 + 250;
    await new Promise((resolve) => setTimeout(resolve, 350)); // a renewal at t0 + 250 pushes it to t0 + 550
    expect(await holds.held('acct', t0 + 500)).toBe(4n * X);
    gate.release(hold);
    expect(await holds.held('acct', t0 + 500)).toBe(0n);
  });

  it('without renewals (a dead process) the hold lapses after its TTL', async () => {
    const { store } = fakeStore(account(10n * X));
    const holds = new MemoryHoldStore();
    const t0 = Date.now();
    const gate = gateOf(store, holds, 300, () => t0);
    await gate.admit(key('acct'), true, 4n * X);
    gate.close(); // stops renewing, as a killed process would
    expect(await holds.held('acct', t0 + 299)).toBe(4n * X);
    expect(await holds.held('acct', t0 + 300)).toBe(0n);
  });

  it('a key limit counts BYOK charges only when the key says so', async () => {
    const { store } = fakeStore(account(100n * X));
    const gate = gateOf(store, new MemoryHoldStore());
    const byok = {
      ...charge(0n),
      isByok: true,
      upstreamPromptCost: 2n * X,
      upstreamCompletionCost: X,
    } as GenerationRecord;
    const counting = key('acct', { hash: 'k-incl', limit: 4n * X, includeByokInLimit: true });
    await gate.settle(await gate.admit(counting, true, X), byok);
    expect(await codeOf(gate.admit(counting, true, X))).toBe('admitted'); // 4X − 3X = X left
    expect(await codeOf(gate.admit(counting, true, X))).toBe('billing.key_limit_exceeded');
    const notCounting = key('acct', { hash: 'k-excl', limit: 4n * X });
    await gate.settle(await gate.admit(notCounting, true, X), byok);
    for (let i = 0; i < 4; i++) expect(await codeOf(gate.admit(notCounting, true, X))).toBe('admitted');
  });

  describe('with a fleet sharing the hold store (Redis)', () => {
    function fleetGate(
      store: Store,
      holds: HoldStore,
      fleet: FleetView,
      onHoldStoreError?: 'share' | 'closed',
      reportWaitMs = 200,
    ) {
      const gate = new CreditGate({
        store,
        bus: new LocalChangeBus(),
        now: Date.now,
        ttlMs: 60_000,
        holds,
        fleet,
        reportWaitMs,
        ...(onHoldStoreError ? { onHoldStoreError } : {}),
      });
      gates.push(gate);
      return gate;
    }

    it('Redis down: each of three processes admits paid requests from its third of the balance, so together they hold at most the balance', async () => {
      const { store: holds, state } = switchable(new MemoryHoldStore());
      const reports = memoryOutageHolds();
      const processes = [0, 1, 2].map(() => {
        const fleet = fakeFleet(3);
        return { fleet, gate: fleetGate(fakeStore(account(9n * X), reports).store, holds, fleet) };
      });
      state.down = true;
      let admitted = 0;
      for (const { gate } of processes) {
        for (let i = 0; i < 5; i++) if ((await codeOf(gate.admit(key('acct'), true, X))) === 'admitted') admitted++;
      }
      // 3X each; a paid request needs share − held > 0: three of X each per process.
      expect(admitted).toBe(9);
      expect(processes.every((p) => !p.fleet.trusted)).toBe(true); // the failed call made each one stop trusting Redis
    });

    describe('against Redis: a count below the process’s own live holds', () => {
      const url = process.env.TOLLGATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
      const prefix = `tollgate:test:${Math.random().toString(36).slice(2)}:hold:`;
      const stores: RedisHoldStore[] = [];
      const emptyRedis = async () => {
        const client = new Redis(url);
        try {
          const keys = await client.keys(`${prefix}*`);
          if (keys.length > 0) await client.del(...keys);
        } finally {
          client.disconnect();
        }
      };
      afterEach(async () => {
        await emptyRedis();
        await Promise.all(stores.splice(0).map((h) => h.close()));
      });
      const redisHolds = async () => {
        const holds = new RedisHoldStore({ url, keyPrefix: prefix });
        await holds.ready();
        stores.push(holds);
        return holds;
      };

      it('Redis emptied with holds in flight and no charge to miss (FLUSHALL): the next admission has the fleet look, and the share decides', async () => {
        let looked = 0;
        const fleet = Object.assign(fakeFleet(2), {
          suspect: () => undefined,
          checkNow: async () => {
            looked++;
            fleet.setTrusted(false); // the heartbeat it asks for finds the new epoch
          },
        });
        const holds = await redisHolds();
        const reports = memoryOutageHolds();
        const mine = fleetGate(fakeStore(account(4n * X), reports).store, holds, fleet);
        const other = fleetGate(fakeStore(account(4n * X), reports).store, holds, fakeFleet(2));
        await mine.admit(key('acct'), true, X);
        await other.admit(key('acct'), true, X);
        expect(await holds.held('acct', Date.now())).toBe(2n * X);
        await emptyRedis();
        // Outside check: a burst here admitted on the emptied count, past the bound by the lost holds.
        await codeOf(mine.admit(key('acct'), true, X));
        expect(looked).toBe(1);
        expect(fleet.trusted).toBe(false);
      });

      it('one of its holds gone but no new epoch (a renewal that failed past the TTL): it is put back and the request decided again', async () => {
        const fleet = Object.assign(fakeFleet(1), { suspect: () => undefined, checkNow: async () => undefined });
        const holds = await redisHolds();
        const gate = fleetGate(fakeStore(account(4n * X)).store, holds, fleet);
        const first = await gate.admit(key('acct'), true, X);
        await holds.release(first); // gone from Redis, still live here
        expect(await codeOf(gate.admit(key('acct'), true, X))).toBe('admitted');
        expect(await holds.held('acct', Date.now())).toBe(2n * X);
        expect(fleet.trusted).toBe(true);
      });
    });

    it('Redis lost its data on a live connection: the gate has the fleet look now and decides from the share, not from an empty Redis', async () => {
      const inner = new MemoryHoldStore();
      const state = { lost: false };
      const holds: HoldStore = Object.assign(Object.create(inner) as HoldStore, {
        admit: async (...args: Parameters<HoldStore['admit']>) => {
          if (state.lost)
            throw new TollgateError('store.unavailable', 'The credit hold store (Redis) lost its data', {
              metadata: { reason: 'redis_resyncing' },
            });
          return inner.admit(...args);
        },
      });
      let looked = 0;
      const fleet = Object.assign(fakeFleet(2), {
        // A live connection: a failed call alone does not end the trust (as RedisFleet.suspect).
        suspect: () => undefined,
        // The heartbeat it asks for finds the new epoch: its resync window begins.
        checkNow: async () => {
          looked++;
          fleet.setTrusted(false);
        },
      });
      const gate = fleetGate(fakeStore(account(4n * X)).store, holds, fleet);
      state.lost = true;
      const codes = [];
      for (let i = 0; i < 4; i++) codes.push(await codeOf(gate.admit(key('acct'), true, X)));
      expect(looked).toBe(1);
      // Half of 4X for this process of two: two requests of X, then the share is spent.
      expect(codes).toEqual(['admitted', 'admitted', 'billing.insufficient_credits', 'billing.insufficient_credits']);
    });

    it('Redis down with the holds on one process: the others count them out of the balance before they share the rest', async () => {
      const { store: holds, state } = switchable(new MemoryHoldStore());
      const reports = memoryOutageHolds();
      const [a, b, c] = [0, 1, 2].map(() => {
        const fleet = fakeFleet(3);
        return { fleet, gate: fleetGate(fakeStore(account(10n * X), reports).store, holds, fleet) };
      });
      for (let i = 0; i < 9; i++) await a!.gate.admit(key('acct'), true, X); // in Redis: 9X of 10X held
      state.down = true;
      for (const p of [a, b, c]) p!.fleet.setTrusted(false); // each one's heartbeat fails
      let admitted = 0;
      for (const p of [b, c, a])
        for (let i = 0; i < 5; i++) if ((await codeOf(p!.gate.admit(key('acct'), true, X))) === 'admitted') admitted++;
      // X left, a third each: every process may pass its share by less than one request (as with Redis).
      expect(admitted).toBeLessThanOrEqual(3);
      expect(admitted).toBeGreaterThanOrEqual(1);
      // Without the reports, b and c would have taken 10X/3 each: six more.
    });

    it('Redis down: a process waits for the reports of the others, and not longer than reportWaitMs', async () => {
      const { store: holds, state } = switchable(new MemoryHoldStore());
      const reports = memoryOutageHolds();
      const [a, b] = [0, 1].map(() => {
        const fleet = fakeFleet(2);
        return { fleet, gate: fleetGate(fakeStore(account(10n * X), reports).store, holds, fleet, 'share', 2_000) };
      });
      for (let i = 0; i < 10; i++) await a!.gate.admit(key('acct'), true, X); // the whole balance, held in Redis
      state.down = true;
      b!.fleet.setTrusted(false);
      const pending = codeOf(b!.gate.admit(key('acct'), true, X));
      await new Promise((resolve) => setTimeout(resolve, 300));
      a!.fleet.setTrusted(false); // a notices the outage later: its report still comes before b's share is taken
      expect(await pending).toBe('billing.insufficient_credits'); // nothing is left to share
      // A fleet of four where one never reports (it died with Redis): not waited for longer than reportWaitMs.
      const lone = fakeFleet(4);
      const c = fleetGate(fakeStore(account(10n * X), reports).store, holds, lone, 'share', 1_000);
      lone.setTrusted(false);
      const started = Date.now();
      expect(await codeOf(c.admit(key('acct', { hash: 'k-c' }), true, X))).toBe('billing.insufficient_credits');
      expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    });

    it('a process that notices the outage late and settled its holds meanwhile: its charges are in the balance the others share', async () => {
      const { store: holds, state } = switchable(new MemoryHoldStore());
      const reports = memoryOutageHolds();
      const record = account(10n * X);
      const [fa, fb] = [fakeFleet(2), fakeFleet(2)];
      const a = fleetGate(fakeStore(record, reports).store, holds, fa, 'share', 2_000);
      const b = fleetGate(fakeStore(record, reports).store, holds, fb, 'share', 2_000);
      const held = [];
      for (let i = 0; i < 9; i++) held.push(await b.admit(key('acct'), true, X)); // 9X held on b, in Redis
      state.down = true; // Redis hangs on a live connection: b does not notice at once
      fb.suspect = () => undefined;
      fa.setTrusted(false);
      const first = codeOf(a.admit(key('acct'), true, X)); // waits for b's report
      await new Promise((resolve) => setTimeout(resolve, 100));
      for (const hold of held) {
        record.totalUsage += X; // b's streams end: charged in the database
        await b.settle(hold, charge(X));
      }
      fb.setTrusted(false); // b notices now, holding nothing
      let admitted = (await first) === 'admitted' ? 1 : 0;
      for (const gate of [a, b])
        for (let i = 0; i < 10; i++) if ((await codeOf(gate.admit(key('acct'), true, X))) === 'admitted') admitted++;
      // X left, half each, each may pass its share by less than one request: at most 2 (it was 6).
      expect(admitted).toBeLessThanOrEqual(2);
    });

    it('trust lost, back and lost again: the process reports again, and its report is not lost', async () => {
      const { store: holds, state } = switchable(new MemoryHoldStore());
      const reports = memoryOutageHolds();
      const [fa, fb] = [fakeFleet(2), fakeFleet(2)];
      const a = fleetGate(fakeStore(account(10n * X), reports).store, holds, fa, 'share', 500);
      const b = fleetGate(fakeStore(account(10n * X), reports).store, holds, fb, 'share', 500);
      for (let i = 0; i < 9; i++) await b.admit(key('acct'), true, X);
      state.down = true;
      fb.setTrusted(false);
      fb.setTrusted(true);
      fb.setTrusted(false); // 'ready', then 'close' again
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(await reports.others('someone', 0, ['a:acct'])).toEqual({
        reporters: 1,
        held: new Map([['a:acct', 9n * X]]),
      });
      fa.setTrusted(false);
      let admitted = 0;
      for (let i = 0; i < 10; i++) if ((await codeOf(a.admit(key('acct'), true, X))) === 'admitted') admitted++;
      expect(admitted).toBeLessThanOrEqual(1);
    });

    it('a process back on Redis keeps its report for those still cut off; closing withdraws it', async () => {
      const { store: holds, state } = switchable(new MemoryHoldStore());
      const reports = memoryOutageHolds();
      const [fa, fb] = [fakeFleet(3), fakeFleet(3)]; // the third process died with Redis: it never reports
      const a = fleetGate(fakeStore(account(30n * X), reports).store, holds, fa, 'share', 1_000);
      const b = fleetGate(fakeStore(account(30n * X), reports).store, holds, fb, 'share', 1_000);
      for (let i = 0; i < 29; i++) await b.admit(key('acct'), true, X);
      state.down = true;
      fa.setTrusted(false);
      fb.setTrusted(false);
      const pending = Array.from({ length: 12 }, () => codeOf(a.admit(key('acct'), true, X))); // during the wait
      await new Promise((resolve) => setTimeout(resolve, 300));
      fb.setTrusted(true); // b reaches Redis again; a does not
      const admitted = (await Promise.all(pending)).filter((code) => code === 'admitted').length;
      expect(admitted).toBeLessThanOrEqual(1); // X left, a third of it: one request at most (it was 10)
      b.close();
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect((await reports.others('someone', 0, [])).reporters).toBe(1); // a's alone
    });

    it('an admission Redis answers as the outage begins is decided again by the share (the report missed it)', async () => {
      const inner = new MemoryHoldStore();
      const { store: holds, state } = switchable(inner);
      let answer: (() => void) | null = null;
      const slow: HoldStore = Object.assign(Object.create(holds) as HoldStore, {
        admit: async (check: Parameters<HoldStore['admit']>[0], now: number) => {
          await new Promise<void>((resolve) => (answer = resolve));
          return inner.admit(check, now);
        },
      });
      const reports = memoryOutageHolds();
      const [fa, fb] = [fakeFleet(2), fakeFleet(2)];
      const a = fleetGate(fakeStore(account(10n * X), reports).store, slow, fa);
      const b = fleetGate(fakeStore(account(10n * X), reports).store, holds, fb);
      const pending = a.admit(key('acct'), true, 4n * X);
      await new Promise((resolve) => setTimeout(resolve, 10));
      state.down = true;
      fa.setTrusted(false); // a's report goes out without the 4X Redis is about to admit
      fb.setTrusted(false);
      answer!();
      const held = [(await pending).amount];
      for (const gate of [a, b])
        for (let i = 0; i < 8; i++) {
          const hold = await gate.admit(key('acct'), true, X).catch(() => null);
          if (hold) held.push(hold.amount);
        }
      // Half of 10X each: the 4X inside a's half (it was counted as a's hold from before the outage,
      // which b never heard of: 12X).
      expect(held.reduce((sum, amount) => sum + amount, 0n)).toBe(10n * X);
    });

    it('a second outage soon after a first: the reports of the first do not end the wait for the second', async () => {
      const { store: holds, state } = switchable(new MemoryHoldStore());
      const reports = memoryOutageHolds();
      const [fa, fb] = [fakeFleet(2), fakeFleet(2)];
      const a = fleetGate(fakeStore(account(10n * X), reports).store, holds, fa, 'share', 2_000);
      const b = fleetGate(fakeStore(account(10n * X), reports).store, holds, fb, 'share', 2_000);
      fa.setTrusted(false); // a blip: both report, holding nothing
      fb.setTrusted(false);
      await new Promise((resolve) => setTimeout(resolve, 20));
      fa.setTrusted(true);
      fb.setTrusted(true);
      for (let i = 0; i < 9; i++) await b.admit(key('acct'), true, X); // through Redis
      await new Promise((resolve) => setTimeout(resolve, 200));
      state.down = true;
      fa.setTrusted(false);
      const pending = Array.from({ length: 10 }, () => codeOf(a.admit(key('acct'), true, X)));
      setTimeout(() => fb.setTrusted(false), 300); // b notices later: its new report holds 9X
      const admitted = (await Promise.all(pending)).filter((code) => code === 'admitted').length;
      expect(admitted).toBeLessThanOrEqual(1); // it was 5: b's blip report counted as this outage's
    });

    it('trust lost while a trusted admission reads its snapshot: Redis admits it after the report, so it is decided again', async () => {
      const { store: holds } = switchable(new MemoryHoldStore()); // Redis still answers (a resync window)
      const reports = memoryOutageHolds();
      const [fa, fb] = [fakeFleet(2), fakeFleet(2)];
      const slowRead = fakeStore(account(10n * X), reports).store;
      const read = slowRead.getAccount.bind(slowRead);
      let release: (() => void) | null = null;
      slowRead.getAccount = async (id: string) => {
        if (release === null) await new Promise<void>((resolve) => (release = resolve));
        return read(id);
      };
      const a = fleetGate(slowRead, holds, fa);
      const b = fleetGate(fakeStore(account(10n * X), reports).store, holds, fb);
      const pending = a.admit(key('acct'), true, 4n * X);
      await new Promise((resolve) => setTimeout(resolve, 10));
      fa.setTrusted(false); // a's report: nothing held
      fb.setTrusted(false);
      release!();
      const held = [(await pending).amount];
      for (const gate of [a, b])
        for (let i = 0; i < 8; i++) {
          const hold = await gate.admit(key('acct'), true, X).catch(() => null);
          if (hold) held.push(hold.amount);
        }
      expect(held.reduce((sum, amount) => sum + amount, 0n)).toBe(10n * X); // it was 12X
    });

    it('an outage that begins and ends while Redis admits: the admission is decided again, its first hold taken back', async () => {
      const inner = new MemoryHoldStore();
      let answer: (() => void) | null = null;
      const slow: HoldStore = Object.assign(Object.create(inner) as HoldStore, {
        admit: async (check: Parameters<HoldStore['admit']>[0], now: number) => {
          if (answer === null) await new Promise<void>((resolve) => (answer = resolve));
          return inner.admit(check, now);
        },
      });
      const fleet = fakeFleet(2);
      const gate = fleetGate(fakeStore(account(10n * X)).store, slow, fleet);
      const pending = gate.admit(key('acct'), true, 4n * X);
      await new Promise((resolve) => setTimeout(resolve, 10));
      fleet.setTrusted(false);
      fleet.setTrusted(true);
      answer!();
      await pending;
      await new Promise((resolve) => setImmediate(resolve));
      expect(await inner.held('acct', Date.now())).toBe(4n * X); // once, by the second decision
    });

    it("trust back during a first share's wait: decided by Redis, and no share of the outage is kept", async () => {
      const inner = new MemoryHoldStore();
      const { store: holds } = switchable(inner);
      const fleet = fakeFleet(2); // the other process never reports
      const gate = fleetGate(fakeStore(account(10n * X)).store, holds, fleet, 'share', 1_000);
      fleet.setTrusted(false);
      const pending = gate.admit(key('acct'), true, X);
      await new Promise((resolve) => setTimeout(resolve, 300));
      fleet.setTrusted(true);
      await pending;
      expect(await inner.held('acct', Date.now())).toBe(X);
    });

    it('a report the database refuses does not hold up the wait past reportWaitMs', async () => {
      const { store: holds, state } = switchable(new MemoryHoldStore());
      const refusing: OutageHoldStore = {
        ...memoryOutageHolds(),
        report: () => Promise.reject(new TollgateError('store.unavailable', 'Storage is unavailable')),
      };
      const fleet = fakeFleet(2);
      const gate = fleetGate(fakeStore(account(10n * X), refusing).store, holds, fleet, 'share', 200);
      state.down = true;
      fleet.setTrusted(false);
      const started = Date.now();
      expect(await codeOf(gate.admit(key('acct'), true, X))).toBe('admitted');
      expect(Date.now() - started).toBeLessThan(1_000); // it was 2 s: the wait began after the 5 attempts
    });

    it("a process's own charges during the outage count against its share", async () => {
      const { store: holds, state } = switchable(new MemoryHoldStore());
      const fleet = fakeFleet(2);
      const gate = fleetGate(fakeStore(account(10n * X)).store, holds, fleet); // share: 5X
      state.down = true;
      const first = await gate.admit(key('acct'), true, 2n * X);
      await gate.settle(first, charge(4n * X)); // the snapshot still says 10X
      await gate.admit(key('acct'), true, X); // 5X − 4X charged = X > 0
      expect(await codeOf(gate.admit(key('acct'), true, X))).toBe('billing.insufficient_credits');
    });

    it('refuses paid requests (503) under onHoldStoreError: closed, and in a process that never reached Redis', async () => {
      const { store: holds, state } = switchable(new MemoryHoldStore());
      state.down = true;
      const closed = fleetGate(fakeStore(account(9n * X)).store, holds, fakeFleet(1), 'closed');
      expect(await codeOf(closed.admit(key('acct'), true, X))).toBe('store.unavailable');
      const neverSeen = { ...fakeFleet(1), seen: false };
      const fresh = fleetGate(fakeStore(account(9n * X)).store, holds, neverSeen);
      expect(await codeOf(fresh.admit(key('acct'), true, X))).toBe('store.unavailable');
      expect(await codeOf(fresh.admit(key('acct'), false, 0n))).toBe('admitted'); // free: the snapshot alone
    });

    it('Redis back empty: the holds admitted meanwhile are restored, and count for every process', async () => {
      const inner = new MemoryHoldStore();
      const { store: holds, state } = switchable(inner);
      const fleet = fakeFleet(1);
      const gate = fleetGate(fakeStore(account(10n * X)).store, holds, fleet);
      const before = await gate.admit(key('acct'), true, 2n * X); // in Redis
      state.down = true;
      await gate.admit(key('acct'), true, 3n * X); // by the share, only in this process
      await inner.close(); // Redis restarted without its data
      state.down = false;
      fleet.trusted = true;
      fleet.resync('epoch');
      await new Promise((resolve) => setImmediate(resolve));
      expect(await inner.held('acct', Date.now())).toBe(5n * X);
      // Another process now counts them: 10X − 5X held; after its own 5X nothing is left.
      const other = fleetGate(fakeStore(account(10n * X)).store, holds, fakeFleet(1));
      await other.admit(key('acct'), true, 5n * X);
      expect(await codeOf(other.admit(key('acct'), true, X))).toBe('billing.insufficient_credits');
      await gate.settle(before, charge(2n * X));
      expect(await inner.held('acct', Date.now())).toBe(8n * X);
    });
  });
});
