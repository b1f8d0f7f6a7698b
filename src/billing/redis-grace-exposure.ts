/**
 * The grace exposure shared by a fleet through Redis (billing/grace-exposure.ts): one hash per
 * account, `<prefix>{<account>}:grace` — field `a` the account's total, `k:<key hash>` each limited
 * key's — checked and increased by one Lua call, so concurrent admissions on any process never pass
 * the bound together. Amounts are µUSD, as in the hold store (redis-hold-store.ts): the request's
 * amount rounded up, the room, cap and key room rounded down, so rounding only ever refuses.
 */
import { UNITS_PER_USD } from '../core/money.js';
import type { GraceDecision, GraceExposure, GraceRequest } from './grace-exposure.js';
import { ceilMicros, floorMicros } from './redis-hold-store.js';
import { RedisScriptClient, type RedisConnectionOptions } from '../store/redis-script-client.js';

/**
 * ARGV: 1 amount, 2 paid (1/0), 3 room, 4 cap, 5 key field, 6 key room ('' = no limit), 7 ttl ms. → 0
 * admitted, 1 not covered, 2 exposure. Every call renews the hash's life, a refusal too: only a process
 * still within its own grace asks, so the count lives while any process of the fleet may still admit
 * (one that saw the outage later than the others included), and lapses `ttl` after the last asked.
 */
const GRACE_LUA = `
local h = KEYS[1]
local amount, room, cap = tonumber(ARGV[1]), tonumber(ARGV[3]), tonumber(ARGV[4])
local used = tonumber(redis.call('HGET', h, 'a') or '0')
local decision = 0
if room - used - amount < 0 or (ARGV[2] == '1' and room - used <= 0) then decision = 1
elseif used + amount > cap then decision = 2
elseif ARGV[6] ~= '' and tonumber(ARGV[6]) - tonumber(redis.call('HGET', h, ARGV[5]) or '0') - amount < 0 then decision = 1
else
  redis.call('HINCRBY', h, 'a', ARGV[1])
  if ARGV[6] ~= '' then redis.call('HINCRBY', h, ARGV[5], ARGV[1]) end
end
if decision == 0 or redis.call('EXISTS', h) == 1 then redis.call('PEXPIRE', h, ARGV[7]) end
return decision
`;

const DECISIONS: GraceDecision[] = ['admitted', 'grace_not_covered', 'grace_exposure'];

export type RedisGraceExposureOptions = RedisConnectionOptions & {
  /** Every key starts with it (main.ts: `limits.redis_prefix` + `grace:`). */
  keyPrefix: string;
};

export class RedisGraceExposure implements GraceExposure {
  private readonly client: RedisScriptClient;

  constructor(private readonly options: RedisGraceExposureOptions) {
    this.client = new RedisScriptClient({
      ...options,
      lua: GRACE_LUA,
      commandName: 'tollgateGraceV1',
      unavailableMessage: 'The grace exposure store (Redis) is unavailable',
    });
  }

  /** The account's hash (public so tests can find it). */
  key(accountId: string): string {
    return `${this.options.keyPrefix}{${accountId}}:grace`;
  }

  async reserve(request: GraceRequest): Promise<GraceDecision> {
    // Past the cap plus this request a room decides nothing (what was admitted never exceeds the cap),
    // so a balance of billions stays within the doubles' exact range.
    const enough = request.maxExposure + request.amount + UNITS_PER_USD;
    const room = request.room < enough ? request.room : enough;
    const keyRoom = request.keyRoom === null || request.keyRoom < enough ? request.keyRoom : enough;
    const reply = await this.client.run(
      [this.key(request.accountId)],
      [
        ceilMicros(request.amount).toString(),
        request.paid ? '1' : '0',
        floorMicros(room).toString(),
        floorMicros(request.maxExposure).toString(),
        `k:${request.keyHash}`,
        keyRoom === null ? '' : floorMicros(keyRoom).toString(),
        Math.max(1, Math.ceil(request.ttlMs)),
      ],
    );
    const decision = DECISIONS[Number(reply)];
    if (decision === undefined) throw new Error('grace script returned a bad decision');
    return decision;
  }

  ended(): void {
    // The fleet's counters lapse `ttlMs` after the last grace request: another process may still be in its outage.
  }

  close(): Promise<void> {
    return this.client.close();
  }
}
