/**
 * Group commit. Charges are queued and written by one flusher, many per transaction, so throughput
 * does not pay one durable commit per request; each caller still waits until its own charge is
 * durable before it reports the request done.
 *
 * With a charge journal (every `tollgate serve`), "durable" means: committed in the store, or — when
 * the store does not answer — fsync'd in the journal. A batch is written to both at once; when the
 * store commits, the caller gets the outcome and the journal entries are marked done. When the store
 * is unavailable (or slower than `storeWaitMs`), the journaled charges count as done for the caller
 * (`deferred` says when the store has them) and the backlog applies them, idempotently on the
 * generation id, as soon as the store answers — and at boot for what an earlier process left.
 *
 * The journal's copy is written at once (in the kernel's hands it outlives this process, `kill -9`
 * included) but fsync'd only when it may have to stand in for the store: when the store refuses or
 * fails the batch, or has not committed it within `journalSyncAfterMs`. A batch the store commits
 * promptly is durable in the store, and its journal entries are done before they could matter; not
 * syncing them keeps the journal's fdatasync from queueing on the disk beside the store's own fsync
 * (on the embedded store, the same disk), which was a fifth to a third of the wait for a charge at
 * 500 req/s.
 * Without a journal (unit tests of buildApp), a batch is retried for a few seconds and then fails.
 */
import { TIMED_OUT, within } from '../core/within.js';
import type { Logger } from '../observability/logger.js';
import type { SettleOutcome, Settlement, Store } from '../store/types.js';
import type { ChargeJournal, RefusedCaller } from './charge-journal.js';
import { isStoreUnavailable, type StoreHealth } from './store-health.js';

export interface SettlerOutcome extends SettleOutcome {
  /**
   * Set when the charge is durable in the journal but not yet in the store: resolves once the store
   * has it — `applied` as usual; `applied: false` when an earlier attempt had committed it after all
   * (a COMMIT whose answer was lost or came past its deadline) — or once it was given up (`recorded:
   * false`, logged). Never rejects.
   */
  deferred?: Promise<DeferredOutcome>;
}

export interface DeferredOutcome extends SettleOutcome {
  /** The store has the charge (false only when it was given up): what holds and counters must count. */
  recorded: boolean;
}

interface Pending {
  settlement: Settlement;
  resolve: (outcome: SettlerOutcome) => void;
  reject: (error: unknown) => void;
}

interface BacklogEntry {
  settlement: Settlement;
  /** Resolves the caller's `deferred` (absent for charges recovered at boot). */
  done?: (outcome: DeferredOutcome) => void;
  /** A store attempt that timed out may still commit: the backlog leaves the entry alone until it ends. */
  inFlight: boolean;
}

export interface SettlerOptions {
  store: Store;
  maxBatch?: number;
  /**
   * Without a journal: retries of a failed batch (the store may be restarting). After them, a batch
   * the store refused (not `store.unavailable`) is settled one charge at a time, so only a charge
   * that fails alone fails.
   */
  retries?: number;
  retryDelayMs?: number;
  onCommitted?: (settlements: readonly Settlement[], outcomes: readonly SettleOutcome[]) => void;
  /** Charges an earlier process journaled (recovered at boot), once the store has them. */
  onRecovered?: (settlements: readonly Settlement[]) => void;
  /**
   * A charge the store refused on its own (not an outage), after it was tried alone: it is given up
   * (logged in full; a metric counts it), so it cannot block the charges behind it.
   */
  onRefused?: (settlement: Settlement) => void;
  journal?: ChargeJournal | null;
  health?: StoreHealth;
  log?: Pick<Logger, 'warn' | 'error' | 'info'>;
  /** With a journal: how long a caller waits for the store before its journaled charge counts as done. Default 3000. */
  storeWaitMs?: number;
  /** With a journal: how long the store may take to commit a batch before its journal entries are fsync'd anyway. Default 50. */
  journalSyncAfterMs?: number;
  /** Backlog retry delay bounds (doubling). Defaults 200 ms and 5 s. */
  backlogDelayMs?: number;
  backlogMaxDelayMs?: number;
}

type StoreAttempt = { ok: true; outcomes: SettleOutcome[] } | { ok: false; error: unknown };

export class Settler {
  private queue: Pending[] = [];
  private flushing: Promise<void> | null = null;
  private readonly maxBatch: number;
  private readonly retries: number;
  private readonly retryDelayMs: number;
  private readonly journal: ChargeJournal | null;
  private readonly backlog = new Map<string, BacklogEntry>();
  private applying: Promise<void> | null = null;
  private applyTimer: NodeJS.Timeout | null = null;
  private backlogDelay: number;
  /** Ids recovered at boot that are not applied yet: the gateway is not ready until they are. */
  private readonly bootIds = new Set<string>();
  private stopped = false;

  constructor(private readonly options: SettlerOptions) {
    this.maxBatch = options.maxBatch ?? 512;
    // 200 ms doubling five times rides out ~6 s of store unavailability (a PostgreSQL restart or failover).
    this.retries = options.retries ?? 5;
    this.retryDelayMs = options.retryDelayMs ?? 200;
    this.journal = options.journal ?? null;
    this.backlogDelay = options.backlogDelayMs ?? 200;
  }

  /** Queues the charges the journal holds from before this start (a crash, a store outage) and starts applying them. */
  recover(): number {
    if (!this.journal) return 0;
    for (const entry of this.journal.charges()) {
      if (this.backlog.has(entry.id)) continue;
      this.backlog.set(entry.id, { settlement: entry.settlement, inFlight: false });
      this.bootIds.add(entry.id);
    }
    this.kickBacklog(0);
    return this.bootIds.size;
  }

  /** True while charges recovered at boot are not all in the store yet. */
  get replaying(): boolean {
    return this.bootIds.size > 0;
  }

  /** Journaled charges waiting for the store. */
  get backlogSize(): number {
    return this.backlog.size;
  }

  settle(settlement: Settlement): Promise<SettlerOutcome> {
    return new Promise((resolve, reject) => {
      this.queue.push({ settlement, resolve, reject });
      // Wait one macrotask so that charges finishing in the same I/O phase share a commit.
      this.flushing ??= new Promise<void>((done) => setImmediate(done)).then(() => this.flush());
    });
  }

  /**
   * A running stream's usage so far, journaled so a process killed mid-stream still charges it.
   * Whether it was journaled. Never throws.
   */
  async checkpoint(settlement: Settlement): Promise<boolean> {
    if (!this.journal) return false;
    try {
      await this.journal.appendCheckpoint(settlement);
      return true;
    } catch (error) {
      this.options.log?.warn(
        { err: error, generation_id: settlement.generation.id },
        'could not journal a stream checkpoint',
      );
      return false;
    }
  }

  /** Takes back the checkpoints of an answer that ended with nothing to charge (all its attempts failed). Never throws. */
  async withdrawCheckpoints(id: string): Promise<void> {
    try {
      await this.journal?.withdraw(id);
    } catch (error) {
      this.options.log?.warn(
        { err: error, generation_id: id },
        'could not withdraw the checkpoints of a failed answer',
      );
    }
  }

  /** Resolves when every queued charge is durable (committed, journaled or failed); one more pass over the backlog. */
  async drain(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.backlog.size > 0 && !this.applying) {
      if (this.applyTimer) clearTimeout(this.applyTimer);
      this.applyTimer = null;
      this.applying = this.applyBacklog().finally(() => (this.applying = null));
    }
    while (this.applying) await this.applying;
  }

  /** Stops retrying the backlog (shutdown); what is left stays in the journal for the next start. */
  stop(): void {
    this.stopped = true;
    if (this.applyTimer) clearTimeout(this.applyTimer);
    this.applyTimer = null;
  }

  private async flush(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.maxBatch);
        await (this.journal ? this.commitJournaled(batch) : this.commit(batch));
      }
    } finally {
      this.flushing = null;
    }
  }

  // --- with a journal ---------------------------------------------------------------------------

  private async commitJournaled(batch: Pending[]): Promise<void> {
    const journal = this.journal!;
    const settlements = batch.map((p) => p.settlement);
    const journaled = journal.appendCharges(settlements, { sync: false }).then(
      () => true,
      (error: unknown) => {
        this.options.log?.error({ err: error }, 'could not write charges to the charge journal');
        return false;
      },
    );
    // Only a journal entry that may stand in for the store is fsync'd (see the header).
    let synced: Promise<boolean> | null = null;
    const durable = (): Promise<boolean> =>
      (synced ??= journaled.then(
        (written) =>
          written &&
          journal.sync().then(
            () => true,
            (error: unknown) => {
              this.options.log?.error({ err: error }, 'could not sync the charge journal');
              return false;
            },
          ),
      ));
    // The store known to be out (its writes failing): the charge is done for the caller once the
    // journal holds it, without a new attempt to wait for — each batch waited `storeWaitMs` again,
    // answers came 3–8 s late through a whole outage (an outside check). The backlog applies these
    // on its own schedule, and its first commit ends the outage.
    if (this.options.health?.writesFailing === true && (await durable())) {
      for (const pending of batch) this.defer(pending, false);
      this.kickBacklog(this.backlogDelay);
      return;
    }
    const slow = setTimeout(() => void durable(), this.options.journalSyncAfterMs ?? 50);
    const storing = this.storeAttempt(settlements);
    const waited = await this.withinWait(storing);
    clearTimeout(slow);
    /**
     * The journal cannot stand in (its write or its sync failed): the store alone decides, as without
     * a journal. A copy that was written is dropped either way — committed, or failed to its caller,
     * it must not be applied by a later start.
     */
    const withoutJournal = async (settle: () => Promise<void>): Promise<void> => {
      await settle();
      // Only a copy that was written: when it was not, a stream's checkpoint of the same id stays, and
      // charges what was delivered at the next start should this charge have failed too.
      if (await journaled) journal.markDone(settlements.map((s) => s.generation.id));
    };

    if (waited && waited.ok) {
      this.committed(settlements, waited.outcomes);
      batch.forEach((p, i) => p.resolve(waited.outcomes[i]!));
      // After the charge's own record when it was written; also when it was not (a full disk): the
      // store has the charge, so a stream's checkpoints of the same id go too, or they stay live (and
      // counted in the journal's depth) until the next start.
      await journaled;
      journal.markDone(settlements.map((s) => s.generation.id));
      return;
    }
    if (waited && !isStoreUnavailable(waited.error)) {
      // The store answered and refused the batch: settle each alone so only the bad charge fails.
      if (!(await durable())) {
        await withoutJournal(() => this.commit(batch));
        return;
      }
      for (const pending of batch) await this.commitAloneJournaled(pending);
      return;
    }
    if (waited) this.options.health?.failed(waited.error, 'write');
    if (!(await durable())) {
      // Neither the store nor the journal holds these charges: the old way, retries then an error.
      await withoutJournal(async () => {
        const late = waited ? null : await storing;
        if (late && late.ok) {
          this.committed(settlements, late.outcomes);
          batch.forEach((p, i) => p.resolve(late.outcomes[i]!));
          return;
        }
        await this.commit(batch);
      });
      return;
    }
    // Durable in the journal: done for the caller; the store gets them later.
    const entries = batch.map((p) => this.defer(p, !waited));
    if (!waited) {
      // Timed out: that attempt may still commit. Until it ends, the backlog leaves these alone.
      void storing.then((late) => {
        for (const entry of entries) entry.inFlight = false;
        if (late.ok) this.appliedFromBacklog(settlements, late.outcomes);
        else this.options.health?.failed(late.error, 'write');
        this.kickBacklog(0);
      });
    } else this.kickBacklog(this.backlogDelay);
  }

  private async commitAloneJournaled(pending: Pending): Promise<void> {
    const id = pending.settlement.generation.id;
    const attempt = await this.storeAttempt([pending.settlement]);
    if (attempt.ok) {
      this.committed([pending.settlement], attempt.outcomes);
      pending.resolve(attempt.outcomes[0]!);
      this.journal!.markDone([id]);
    } else if (isStoreUnavailable(attempt.error)) {
      this.options.health?.failed(attempt.error, 'write');
      this.defer(pending, false);
      this.kickBacklog(this.backlogDelay);
    } else {
      this.giveUp(pending.settlement, attempt.error, 'failed');
      pending.reject(attempt.error);
    }
  }

  private defer(pending: Pending, inFlight: boolean): BacklogEntry {
    const id = pending.settlement.generation.id;
    let done!: (outcome: DeferredOutcome) => void;
    const deferred = new Promise<DeferredOutcome>((resolve) => (done = resolve));
    const entry: BacklogEntry = { settlement: pending.settlement, done, inFlight };
    this.backlog.set(id, entry);
    pending.resolve({ id, applied: false, deferred });
    return entry;
  }

  private async withinWait(storing: Promise<StoreAttempt>): Promise<StoreAttempt | null> {
    const attempt = await within(storing, this.options.storeWaitMs ?? 3000);
    return attempt === TIMED_OUT ? null : attempt;
  }

  private async storeAttempt(settlements: readonly Settlement[]): Promise<StoreAttempt> {
    try {
      return { ok: true, outcomes: await this.options.store.settle(settlements) };
    } catch (error) {
      return { ok: false, error: error ?? new Error('store.settle failed') };
    }
  }

  private committed(settlements: readonly Settlement[], outcomes: readonly SettleOutcome[]): void {
    this.options.health?.recovered('write');
    try {
      this.options.onCommitted?.(settlements, outcomes);
    } catch {
      // A metrics hook; the charges are committed whatever it does.
    }
  }

  /** Charges of the backlog committed: callers' `deferred` resolve, journal entries go. */
  private appliedFromBacklog(settlements: readonly Settlement[], outcomes: readonly SettleOutcome[]): void {
    this.committed(settlements, outcomes);
    const ids: string[] = [];
    const recovered: Settlement[] = [];
    settlements.forEach((settlement, i) => {
      const id = settlement.generation.id;
      const entry = this.backlog.get(id);
      this.backlog.delete(id);
      this.bootIds.delete(id);
      if (entry?.done) entry.done({ ...outcomes[i]!, recorded: true });
      else recovered.push(settlement);
      ids.push(id);
    });
    this.journal?.markDone(ids);
    if (recovered.length > 0) this.options.onRecovered?.(recovered);
  }

  /**
   * A charge the store refuses on its own (not an outage): kept in the journal's `refused.jsonl`,
   * logged, and dropped from the journal, so it cannot block the rest.
   */
  private giveUp(settlement: Settlement, error: unknown, caller: RefusedCaller): void {
    const id = settlement.generation.id;
    const reason = error instanceof Error ? error.message : String(error);
    const kept = this.journal?.keepRefused(settlement, reason, caller) ?? false;
    this.options.log?.error(
      {
        err: error,
        generation_id: id,
        account_id: settlement.generation.accountId,
        total_cost_units: settlement.generation.totalCost.toString(),
        ...(kept ? { kept_in: this.journal!.refusedPath } : {}),
      },
      kept
        ? 'the store refused a journaled charge; it leaves the journal and is kept in refused.jsonl for the operator'
        : 'the store refused a charge; it is dropped (no journal file could keep it)',
    );
    const entry = this.backlog.get(id);
    this.backlog.delete(id);
    this.bootIds.delete(id);
    entry?.done?.({ id, applied: false, recorded: false });
    this.journal?.markDone([id]);
    this.refused(settlement);
  }

  private refused(settlement: Settlement): void {
    try {
      this.options.onRefused?.(settlement);
    } catch {
      // A metrics hook: the charge is given up whatever it does.
    }
  }

  private kickBacklog(delayMs: number): void {
    if (this.stopped || this.applying || this.applyTimer || this.backlog.size === 0) return;
    this.applyTimer = setTimeout(() => {
      this.applyTimer = null;
      this.applying = this.applyBacklog().finally(() => {
        this.applying = null;
        this.kickBacklog(this.backlogDelay);
      });
    }, delayMs);
    this.applyTimer.unref();
  }

  /** One pass: applies the backlog in batches until it is empty or the store fails. */
  private async applyBacklog(): Promise<void> {
    const maxDelay = this.options.backlogMaxDelayMs ?? 5000;
    for (;;) {
      const ready = [...this.backlog.values()].filter((e) => !e.inFlight).slice(0, this.maxBatch);
      if (ready.length === 0) {
        this.backlogDelay = this.options.backlogDelayMs ?? 200;
        return;
      }
      const settlements = ready.map((e) => e.settlement);
      const attempt = await this.storeAttempt(settlements);
      if (attempt.ok) {
        this.appliedFromBacklog(settlements, attempt.outcomes);
        continue;
      }
      if (isStoreUnavailable(attempt.error)) {
        this.options.health?.failed(attempt.error, 'write');
        this.backlogDelay = Math.min(maxDelay, this.backlogDelay * 2);
        return;
      }
      // Refused: find the bad charge(s) one at a time; the rest go through.
      for (const settlement of settlements) {
        const alone = await this.storeAttempt([settlement]);
        if (alone.ok) this.appliedFromBacklog([settlement], alone.outcomes);
        else if (isStoreUnavailable(alone.error)) {
          this.options.health?.failed(alone.error, 'write');
          return;
        } else {
          // A deferred charge's caller was served and told done; one recovered at boot is an earlier process's.
          const caller = this.backlog.get(settlement.generation.id)?.done ? 'done' : 'unknown';
          this.giveUp(settlement, alone.error, caller);
        }
      }
    }
  }

  // --- without a journal ------------------------------------------------------------------------

  private async commit(batch: Pending[]): Promise<void> {
    const error = await this.commitWithRetries(batch);
    if (error === null) return;
    if (batch.length === 1 || isStoreUnavailable(error)) {
      for (const p of batch) p.reject(error);
      if (!isStoreUnavailable(error)) this.refused(batch[0]!.settlement);
      return;
    }
    // The store answered but refused the batch: one bad charge (a value the database rejects) must not
    // fail up to maxBatch unrelated callers. Settle each on its own, once, so only the bad one fails;
    // if the store goes away meanwhile, the rest get that error without more tries.
    let unavailable: unknown = null;
    for (const pending of batch) {
      if (unavailable !== null) {
        pending.reject(unavailable);
        continue;
      }
      const alone = await this.tryCommit([pending]);
      if (alone === null) continue;
      pending.reject(alone);
      if (isStoreUnavailable(alone)) unavailable = alone;
      else this.refused(pending.settlement);
    }
  }

  /** Commits the batch, retrying with backoff; the last error when every try failed, else null. */
  private async commitWithRetries(batch: Pending[]): Promise<unknown> {
    for (let attempt = 0; ; attempt++) {
      const error = await this.tryCommit(batch);
      if (error === null) return null;
      if (attempt >= this.retries) return error;
      await new Promise((r) => setTimeout(r, this.retryDelayMs * 2 ** attempt));
    }
  }

  /** One store.settle of the batch; resolves its callers when it committed. The error, or null. */
  private async tryCommit(batch: Pending[]): Promise<unknown> {
    const settlements = batch.map((p) => p.settlement);
    const attempt = await this.storeAttempt(settlements);
    if (!attempt.ok) {
      this.options.health?.failed(attempt.error, 'write');
      return attempt.error;
    }
    this.committed(settlements, attempt.outcomes);
    batch.forEach((p, i) => p.resolve(attempt.outcomes[i]!));
    return null;
  }
}
