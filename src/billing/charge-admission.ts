/**
 * Admission of paid requests under store and journal failures, and the readiness it implies.
 *
 * Paid requests are refused (503 `store.unavailable`, nothing forwarded) when their charge could not
 * be made durable or the operator chose so:
 *   - the charge journal is full (`billing.journal.max_entries` live entries) or its disk refuses
 *     writes, or the data directory's free space is under `billing.journal.min_free_bytes`;
 *   - the store is out and `billing.on_store_error` is `closed`;
 *   - under `grace`, once the outage is older than `grace.max_duration_ms`, or when the account's last
 *     known balance minus its holds and its grace exposure does not cover the request, or the
 *     account's grace exposure would pass `grace.max_exposure_usd`.
 * Grace admissions count their estimate against the account's exposure for the rest of the outage
 * (never given back before it ends), so per outage an account can spend at most `max_exposure_usd`
 * that the store did not vouch for: across the fleet when it shares Redis, else per process
 * (billing/grace-exposure.ts).
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { statfs } from 'node:fs/promises';
import { TollgateError } from '../core/errors.js';
import type { Units } from '../core/money.js';
import type { Logger } from '../observability/logger.js';
import type { KeyRecord, Store } from '../store/types.js';
import type { ChargeJournal } from './charge-journal.js';
import type { CreditGate, Hold } from './credit-gate.js';
import { limitedUsage } from './key-view.js';
import type { LastKnown } from './last-known-store.js';
import type { Settler } from './settler.js';
import { isStoreUnavailable, type StoreHealth } from './store-health.js';
import { usagePeriods } from '../core/usage-window.js';
import { LocalGraceExposure, type GraceDecision, type GraceExposure } from './grace-exposure.js';

export interface StoreErrorPolicy {
  onStoreError: 'closed' | 'grace';
  /** Per account and per outage (per process without Redis). */
  maxExposure: Units;
  maxDurationMs: number;
  maxJournalEntries: number;
  minFreeBytes: number;
}

export interface ChargeAdmissionOptions {
  gate: CreditGate;
  settler: Settler;
  journal: ChargeJournal | null;
  health: StoreHealth;
  lastKnown: LastKnown;
  store: Store;
  policy: StoreErrorPolicy;
  /** Where grace admissions are counted (main.ts: Redis, shared by the fleet); in this process when omitted. */
  grace?: GraceExposure;
  /** Where the journal (and the embedded store) live: free space is watched there. Null: not watched. */
  dataDir: string | null;
  now: () => number;
  log: Pick<Logger, 'warn' | 'error' | 'info'>;
  registry?: Registry;
  /** How often the disk, the journal and a store in outage are probed. Default 1000 ms. */
  probeIntervalMs?: number;
}

export type AdmissionState = 'ok' | 'degraded' | 'unavailable';

export interface AdmissionStatus {
  /** ok: serving; degraded: serving paid requests under grace; unavailable: paid requests refused, or not started. */
  state: AdmissionState;
  reasons: string[];
  journal: { depth: number; oldest_entry_age_ms: number | null; backlog: number; writable: boolean } | null;
  free_bytes: number | null;
}

const REASON_MESSAGES: Record<string, string> = {
  journal_full: 'The charge journal is full: paid requests are paused until the store catches up',
  journal_unwritable: 'The charge journal cannot be written: paid requests are paused',
  disk_low: 'The data directory is almost out of space: paid requests are paused',
  store_unavailable: 'Storage is unavailable',
  grace_expired: 'Storage has been unavailable for longer than the grace period',
  grace_not_covered: 'Storage is unavailable and the last known balance does not cover this request',
  grace_exposure: 'Storage is unavailable and this account reached its grace exposure',
  starting: 'The gateway is starting (storage not reachable yet)',
  redis_unavailable: 'Storage is unavailable and the shared counters (Redis) cannot be reached',
  redis_resyncing: 'Storage is unavailable and the shared counters (Redis) are being restored',
};

/** Why a read of the shared counters (Redis: holds, the grace count) failed, as `metadata.reason`. */
function sharedStoreReason(error: unknown): string {
  const reason = error instanceof TollgateError ? error.metadata?.reason : undefined;
  return reason === 'redis_unavailable' || reason === 'redis_resyncing' ? reason : 'store_unavailable';
}

function refused(reason: string): TollgateError {
  return new TollgateError('store.unavailable', REASON_MESSAGES[reason] ?? 'Storage is unavailable', {
    metadata: { reason },
  });
}

export class ChargeAdmission {
  private readonly grace: GraceExposure;
  private freeBytes: number | null = null;
  private readonly booting = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private probing = false;
  private readonly graceAdmissions: Counter | null = null;
  private readonly refusals: Counter | null = null;
  private lastState: AdmissionState = 'ok';

  constructor(private readonly options: ChargeAdmissionOptions) {
    this.grace = options.grace ?? new LocalGraceExposure();
    options.health.onChange((inOutage) => {
      if (!inOutage) this.grace.ended();
      options.log[inOutage ? 'warn' : 'info'](
        { on_store_error: options.policy.onStoreError },
        inOutage
          ? `store outage: paid requests ${options.policy.onStoreError === 'closed' ? 'refused (503)' : 'served under the grace policy'}`
          : 'store reachable again',
      );
    });
    if (options.registry) {
      const registers = [options.registry];
      const journal = options.journal;
      const freeBytes = () => this.freeBytes;
      new Gauge({
        name: 'tollgate_charge_journal_depth',
        help: 'Live entries in the charge journal (charges not yet in the store, stream checkpoints)',
        registers,
        collect() {
          this.set(journal?.depth ?? 0);
        },
      });
      new Gauge({
        name: 'tollgate_charge_journal_backlog',
        help: 'Journaled charges waiting for the store',
        registers,
        collect() {
          this.set(options.settler.backlogSize);
        },
      });
      new Gauge({
        name: 'tollgate_charge_journal_oldest_entry_age_seconds',
        help: 'Age of the oldest live charge journal entry (0 when empty)',
        registers,
        collect() {
          const oldest = journal?.oldestAt() ?? null;
          this.set(oldest === null ? 0 : Math.max(0, options.now() - oldest) / 1000);
        },
      });
      new Gauge({
        name: 'tollgate_charge_journal_writable',
        help: '1 while the charge journal accepts writes',
        registers,
        collect() {
          this.set(journal === null || journal.writable ? 1 : 0);
        },
      });
      new Gauge({
        name: 'tollgate_data_dir_free_bytes',
        help: 'Free bytes in TOLLGATE_DATA_DIR (journal and embedded store headroom)',
        registers,
        collect() {
          const free = freeBytes();
          if (free !== null) this.set(free);
        },
      });
      new Gauge({
        name: 'tollgate_store_outage',
        help: '1 while the store is unavailable to this process',
        registers,
        collect() {
          this.set(options.health.inOutage ? 1 : 0);
        },
      });
      this.graceAdmissions = new Counter({
        name: 'tollgate_grace_admissions_total',
        help: 'Paid requests admitted under billing.on_store_error: grace',
        registers,
      });
      this.refusals = new Counter({
        name: 'tollgate_charge_admission_refusals_total',
        help: 'Paid requests refused because a charge could not be made durable, by reason',
        labelNames: ['reason'],
        registers,
      });
    }
  }

  /** Marks a boot step not done yet (e.g. migrations while the database is down): not ready meanwhile. */
  markBooting(step: string): void {
    this.booting.add(step);
  }

  booted(step: string): void {
    this.booting.delete(step);
  }

  /** Measures the disk now and then every `probeIntervalMs`; probes the journal and an out store. */
  async start(): Promise<void> {
    await this.measureDisk();
    this.timer = setInterval(() => void this.probe(), this.options.probeIntervalMs ?? 1000);
    this.timer.unref();
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  get dataDirFreeBytes(): number | null {
    return this.freeBytes;
  }

  /** Why paid requests cannot be admitted now (empty: they can, perhaps under grace). */
  private blockers(): string[] {
    const { journal, policy, health } = this.options;
    const reasons: string[] = [];
    if (this.booting.size > 0) reasons.push('starting');
    if (journal) {
      if (journal.depth >= policy.maxJournalEntries) reasons.push('journal_full');
      if (!journal.writable) reasons.push('journal_unwritable');
      if (this.freeBytes !== null && this.freeBytes < policy.minFreeBytes) reasons.push('disk_low');
    }
    if (health.inOutage) {
      // closed: refused while charges cannot be committed; while only reads fail, the gate's own
      // reads decide (and their success ends the outage at once).
      if (policy.onStoreError === 'closed') {
        if (health.writesFailing) reasons.push('store_unavailable');
      } else if (this.options.now() - health.since! > policy.maxDurationMs) reasons.push('grace_expired');
    }
    return reasons;
  }

  status(): AdmissionStatus {
    const { journal, health, settler } = this.options;
    const blockers = this.blockers();
    const reasons = [...blockers];
    if (settler.replaying) reasons.push('replaying_journal');
    let state: AdmissionState = 'ok';
    if (reasons.length > 0) state = 'unavailable';
    else if (health.inOutage && this.options.policy.onStoreError === 'closed') {
      // Only reads failed so far: admission still tries its reads (one that works ends the outage at
      // once), but a process with no grace is no place to send paid requests meanwhile.
      state = 'unavailable';
      reasons.push('store_unavailable');
    } else if (health.inOutage) {
      state = 'degraded';
      reasons.push('store_unavailable_grace');
    }
    if (state !== this.lastState) {
      this.options.log[state === 'ok' ? 'info' : 'warn']({ reasons }, `charge admission ${state}`);
      this.lastState = state;
    }
    const oldest = journal?.oldestAt() ?? null;
    return {
      state,
      reasons,
      journal: journal
        ? {
            depth: journal.depth,
            oldest_entry_age_ms: oldest === null ? null : Math.max(0, this.options.now() - oldest),
            backlog: settler.backlogSize,
            writable: journal.writable,
          }
        : null,
      free_bytes: this.freeBytes,
    };
  }

  /** A store call outside admission failed (e.g. the readiness ping). */
  storeFailed(error: unknown): void {
    this.options.health.failed(error, 'read');
  }

  /** A store call outside admission succeeded (the readiness ping). */
  storeAnswered(): void {
    this.options.health.recovered('read');
  }

  /** The credit gate's admission, under the failure policy above. */
  async admit(key: KeyRecord, isPaid: boolean, estimate: Units, id?: string): Promise<Hold> {
    const { gate, health, policy } = this.options;
    if (isPaid) {
      const [blocker] = this.blockers();
      if (blocker !== undefined) {
        this.refusals?.inc({ reason: blocker });
        throw refused(blocker);
      }
      if (health.inOutage && policy.onStoreError === 'grace') return this.admitUnderGrace(key, isPaid, estimate);
    }
    try {
      return await gate.admit(key, isPaid, estimate, id);
    } catch (error) {
      // The database's failures reach `health` through the gate's store (last-known-store.ts); a Redis
      // hold-store outage is not a database outage and gets no grace here.
      if (!isStoreUnavailable(error)) throw error;
      if (policy.onStoreError !== 'grace' || !health.inOutage) throw error;
      return this.admitUnderGrace(key, isPaid, estimate);
    }
  }

  /** Last known balance minus live holds and this outage's grace exposure must cover the estimate. */
  private async admitUnderGrace(key: KeyRecord, isPaid: boolean, estimate: Units): Promise<Hold> {
    const { lastKnown, policy, gate } = this.options;
    const refuse = (reason: string): never => {
      this.refusals?.inc({ reason });
      throw refused(reason);
    };
    if (this.options.now() - (this.options.health.since ?? this.options.now()) > policy.maxDurationMs)
      refuse('grace_expired');
    const account = lastKnown.account(key.accountId);
    if (!account) return refuse('store_unavailable');
    const amount = isPaid ? estimate : 0n;
    let held: Units;
    try {
      held = await gate.held(key.accountId);
    } catch (error) {
      return refuse(sharedStoreReason(error));
    }
    let keyRoom: Units | null = null;
    if (key.limit !== null) {
      const usage = lastKnown.keyUsage(key.hash, usagePeriods(this.options.now()));
      if (!usage) return refuse('store_unavailable');
      keyRoom = key.limit - limitedUsage(key, usage);
    }
    let decision: GraceDecision;
    try {
      decision = await this.grace.reserve({
        accountId: key.accountId,
        keyHash: key.hash,
        amount,
        paid: isPaid,
        room: account.totalCredits - account.totalUsage - held,
        maxExposure: policy.maxExposure,
        keyRoom,
        ttlMs: policy.maxDurationMs,
      });
    } catch (error) {
      return refuse(sharedStoreReason(error));
    }
    if (decision !== 'admitted') refuse(decision);
    if (isPaid) this.graceAdmissions?.inc();
    // Not registered in the hold store (it may be out too): the exposure cap bounds these instead.
    return {
      id: `grace:${key.hash.slice(0, 12)}:${this.options.now()}:${Math.random().toString(36).slice(2)}`,
      accountId: key.accountId,
      keyHash: key.hash,
      amount,
      countsByok: key.includeByokInLimit,
      state: amount > 0n ? 'held' : 'done',
      live: null,
    };
  }

  private async measureDisk(): Promise<void> {
    if (this.options.dataDir === null) return;
    try {
      const stats = await statfs(this.options.dataDir);
      this.freeBytes = Number(stats.bavail) * Number(stats.bsize);
    } catch {
      this.freeBytes = null;
    }
  }

  private async probe(): Promise<void> {
    if (this.probing) return;
    this.probing = true;
    try {
      await this.measureDisk();
      const { journal, health, settler, store } = this.options;
      // A tiny synced write each tick: a full or read-only disk is noticed before a charge needs it.
      if (journal) await journal.probe().catch(() => undefined);
      if (health.inOutage && settler.backlogSize === 0) {
        // Nothing left to charge that would prove the store is back: a read and an empty write transaction do.
        try {
          await store.ping();
          await store.settle([]);
          health.recovered('write');
        } catch (error) {
          health.failed(error, 'write');
        }
      }
    } finally {
      this.probing = false;
    }
  }
}

/** The gate as the chat pipeline sees it: its `admit` goes through the failure policy above. */
export function gateWithAdmission(gate: CreditGate, admission: ChargeAdmission): CreditGate {
  const admit = (key: KeyRecord, isPaid: boolean, estimate: Units, id?: string) =>
    admission.admit(key, isPaid, estimate, id);
  return new Proxy(gate, {
    get(target, property) {
      if (property === 'admit') return admit;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
