/**
 * What accounts were admitted under `billing.on_store_error: grace` while the database is out
 * (billing/charge-admission.ts): the *exposure*, the amount the store did not vouch for.
 *
 * In one process (`LocalGraceExposure`) it lasts the outage as this process sees it. A fleet sharing
 * Redis keeps it there (`RedisGraceExposure`), so the bound holds for the fleet, not per process: the
 * counters live `grace.max_duration_ms` past an account's last grace request, admitted or refused (no
 * process serves grace longer than that in one outage, and only a process within its grace asks), so
 * a process that saw the outage later than the others finds the count they left, and an outage that
 * follows within that time continues it.
 */
import type { Units } from '../core/money.js';

export interface GraceRequest {
  accountId: string;
  keyHash: string;
  /** The request's hold estimate (0 for a free request). */
  amount: Units;
  paid: boolean;
  /** The account's last known balance less its live holds. */
  room: Units;
  /** `grace.max_exposure_usd`. */
  maxExposure: Units;
  /** The key's last known remaining limit; null: the key has no limit. */
  keyRoom: Units | null;
  /** How long a shared counter outlives the last request that asked (`grace.max_duration_ms`). */
  ttlMs: number;
}

export type GraceDecision = 'admitted' | 'grace_not_covered' | 'grace_exposure';

export interface GraceExposure {
  /** Checks the request against what the account (and key) were already admitted; adds it if admitted. */
  reserve(request: GraceRequest): Promise<GraceDecision>;
  /** The outage is over as this process sees it (shared counters lapse by themselves). */
  ended(): void;
}

/**
 * The rules, given what was admitted under grace so far (`used`, and `keyUsed` for a key with a
 * limit): the room must cover what was admitted plus this request (and, for a paid request, leave
 * something), and the account's total may not pass the cap. redis-grace-exposure.ts runs the same.
 */
export function decideGrace(request: GraceRequest, used: Units, keyUsed: Units): GraceDecision {
  const { amount, room } = request;
  if (room - used - amount < 0n || (request.paid && room - used <= 0n)) return 'grace_not_covered';
  if (used + amount > request.maxExposure) return 'grace_exposure';
  if (request.keyRoom !== null && request.keyRoom - keyUsed - amount < 0n) return 'grace_not_covered';
  return 'admitted';
}

/** This process's own count: the embedded deployment, or a fleet without Redis. */
export class LocalGraceExposure implements GraceExposure {
  private readonly accounts = new Map<string, Units>();
  private readonly keys = new Map<string, Units>();

  reserve(request: GraceRequest): Promise<GraceDecision> {
    const used = this.accounts.get(request.accountId) ?? 0n;
    const keyUsed = this.keys.get(request.keyHash) ?? 0n;
    const decision = decideGrace(request, used, keyUsed);
    if (decision === 'admitted') {
      this.accounts.set(request.accountId, used + request.amount);
      if (request.keyRoom !== null) this.keys.set(request.keyHash, keyUsed + request.amount);
    }
    return Promise.resolve(decision);
  }

  ended(): void {
    this.accounts.clear();
    this.keys.clear();
  }
}
