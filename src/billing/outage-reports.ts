/**
 * The outage-report protocol of the credit gate (docs/architecture.md, "Redis outages"): while Redis
 * cannot be trusted, only Redis knew the other processes' holds, so each process writes its own to the
 * database as it stops trusting Redis (`begin`), and a process's first share of an account in the
 * outage waits for the other live processes' reports (`othersHeld`). The gate decides what to admit;
 * this module only says what the others held, and keeps this process's report writes in order.
 */
import type { Units } from '../core/money.js';
import type { OutageHoldStore } from '../store/types.js';

const REPORT_WAIT_MS = 3_000;
const REPORT_POLL_MS = 100;
/** Reports this much older than our own outage's start count as this outage's (processes notice it at different times). */
const REPORT_SKEW_MS = 10_000;
/** Attempts at a report the database refuses, REPORT_RETRY_MS apart, while the outage lasts. */
const REPORT_ATTEMPTS = 5;
const REPORT_RETRY_MS = 500;

export interface OutageReportsOptions {
  store: OutageHoldStore;
  /** This process's id in the reports. */
  processId: string;
  now: () => number;
  /** The live processes, this one included, as last counted by the fleet. */
  fleetSize: () => number;
  /** How long the first lookup of an outage waits for the other processes' reports (default 3 s). */
  reportWaitMs?: number;
  /** A report the database refused (it is tried again while the outage lasts, a few times). */
  onReportError: (error: unknown) => void;
}

/** A hold as reported: its amount counts for its account (`a:<id>`) and its key (`k:<hash>`). */
export interface ReportedHold {
  accountId: string;
  keyHash: string;
  amount: Units;
}

/** One Redis outage as this process sees it. */
interface Outage {
  startedAt: number;
  /** Resolves once every other live process reported, or `reportWaitMs` after the start. */
  reportsIn: Promise<void> | null;
  /** The other processes' holds per subject, one lookup per account and key. */
  lookups: Map<string, Promise<Map<string, Units>>>;
}

export class OutageReports {
  private outage: Outage | null = null;
  /** Counts outages begun and ended: an admission that saw it change while it ran is decided again. */
  private counter = 0;
  /** The last write of this process's report (`inTurn`). */
  private writing: Promise<void> = Promise.resolve();
  private reported = false;

  constructor(private readonly options: OutageReportsOptions) {}

  /** Whether this process is in an outage (it has begun one and not ended it). */
  get active(): boolean {
    return this.outage !== null;
  }

  /** Changes at each outage's start and end. */
  get epoch(): number {
    return this.counter;
  }

  /**
   * Redis stopped being trusted: `holds` (this process's live ones) go to the database for the others'
   * shares. They stay there after the outage, for a process still cut off; the next report replaces them.
   */
  begin(holds: Iterable<ReportedHold>): void {
    if (this.outage) return;
    const bySubject = new Map<string, Units>();
    const add = (subject: string, amount: Units) => bySubject.set(subject, (bySubject.get(subject) ?? 0n) + amount);
    for (const hold of holds) {
      add(`a:${hold.accountId}`, hold.amount);
      add(`k:${hold.keyHash}`, hold.amount);
    }
    const outage: Outage = { startedAt: this.options.now(), reportsIn: null, lookups: new Map() };
    this.outage = outage;
    this.counter++;
    this.reported = true;
    void this.inTurn(async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await this.options.store.report(this.options.processId, outage.startedAt, bySubject);
        } catch (error) {
          this.options.onReportError(error);
          if (this.outage !== outage || attempt >= REPORT_ATTEMPTS) return;
          await pause(REPORT_RETRY_MS);
          // The first attempt is always made (processes still cut off need these holds), a retry only
          // while the outage lasts.
          if (this.outage !== outage) return;
        }
      }
    });
  }

  /** Redis is trusted again: this process stops counting as reported (its holds still count for the others). */
  end(): void {
    if (!this.outage) return;
    this.outage = null;
    this.counter++;
    void this.inTurn(() => this.options.store.end(this.options.processId));
  }

  /**
   * The other processes' holds on this account and key when the outage started (`a:<account>`,
   * `k:<key hash>`), from their reports — waited for, the first time in an outage, until every other
   * live process reported or `reportWaitMs` passed (a process that cannot report, e.g. one that died
   * with Redis, is not waited for longer). Rejects with the store's error when the database cannot
   * tell (the next call asks again). Only during an outage (`begin`).
   */
  othersHeld(accountId: string, keyHash: string): Promise<Map<string, Units>> {
    const outage = this.outage;
    if (outage === null) return Promise.reject(new Error('othersHeld outside an outage'));
    const lookupKey = `${accountId} ${keyHash}`;
    let lookup = outage.lookups.get(lookupKey);
    if (!lookup) {
      const since = outage.startedAt - REPORT_SKEW_MS;
      if (!outage.reportsIn) {
        const reportsIn = this.awaitReports(outage, since);
        outage.reportsIn = reportsIn;
        // The database did not answer: the next lookup waits afresh.
        reportsIn.catch(() => {
          if (outage.reportsIn === reportsIn) outage.reportsIn = null;
        });
      }
      lookup = outage.reportsIn!.then(async () => {
        const others = await this.options.store.others(this.options.processId, since, [
          `a:${accountId}`,
          `k:${keyHash}`,
        ]);
        return others.held;
      });
      outage.lookups.set(lookupKey, lookup);
      lookup.catch(() => outage.lookups.delete(lookupKey));
    }
    return lookup;
  }

  private async awaitReports(outage: Outage, since: number): Promise<void> {
    const size = this.options.fleetSize();
    const deadline = outage.startedAt + (this.options.reportWaitMs ?? REPORT_WAIT_MS);
    for (;;) {
      const { reporters } = await this.options.store.others(this.options.processId, since, []);
      if (reporters >= size - 1 || this.options.now() >= deadline) return;
      await pause(REPORT_POLL_MS);
    }
  }

  /** Resolves once this process's report, if it made one, is withdrawn (it is closing: its holds end with it). */
  close(): Promise<void> {
    this.outage = null;
    return this.reported ? this.inTurn(() => this.options.store.withdraw(this.options.processId)) : Promise.resolve();
  }

  /** This process's report writes (report, end, withdrawal) one at a time: an earlier one never lands after a later one. */
  private inTurn(operation: () => Promise<void>): Promise<void> {
    this.writing = this.writing.then(operation).catch(() => undefined);
    return this.writing;
  }
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
