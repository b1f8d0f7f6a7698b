/**
 * The one Lua script behind `RedisRateLimiter`: reads every rule's counter, admits only if all have
 * room, and then consumes from all — atomically, because Redis runs a script without interleaving.
 * It mirrors exactly two functions of `rate-limit.ts`, `admits` (used < limit for every rule) and
 * `pivotIndex`; the decision itself (remaining, resetAt, which rule) is computed in TypeScript from
 * the readings it returns, by the same `decide` the memory limiter uses.
 *
 * KEYS[i]  the counter of rule i (all under one `{subject}` hash tag, so a cluster keeps them on one slot)
 * ARGV     mode ('consume' | 'peek' | 'refund'), now (epoch ms), member (unique id for a log entry),
 *          then per rule: kind ('s' sliding log | 'd' day counter), limit, window ms (0 for 'd'), ttl ms
 * returns  consume/peek: { admitted 1|0, used_1, pivot_1|nil, used_2, pivot_2|nil, ... }; refund: {}
 *
 * Mode 'restore' puts one process's own entries back into a Redis that lost its data (KEYS[1] one
 * counter; ARGV 3 unused, 4 kind, 5 ttl ms, then (timestamp, member) pairs of a sliding log, or the
 * count of a day counter). Log entries are added by member, so they are never counted twice.
 *
 * Numbers reach Redis through Lua's "%.14g", exact for integer epoch milliseconds (13 digits).
 * TTLs are relative (PEXPIRE), computed from the caller's `now`, so they stay right whatever `now` is.
 */
export const RATE_LIMIT_LUA = `
local mode = ARGV[1]
local now = tonumber(ARGV[2])
local member = ARGV[3]

local function rule(i)
  local a = 3 + (i - 1) * 4
  return ARGV[a + 1], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])
end

if mode == 'restore' then
  if ARGV[4] == 's' then
    for i = 6, #ARGV, 2 do redis.call('ZADD', KEYS[1], 'NX', ARGV[i], ARGV[i + 1]) end
  else
    redis.call('INCRBY', KEYS[1], ARGV[6])
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  return {}
end

if mode == 'refund' then
  for i = 1, #KEYS do
    if rule(i) == 's' then
      local hit = redis.call('ZRANGEBYSCORE', KEYS[i], now, now, 'LIMIT', 0, 1)
      if hit[1] then redis.call('ZREM', KEYS[i], hit[1]) end
    elseif tonumber(redis.call('GET', KEYS[i]) or '0') > 0 then
      redis.call('DECR', KEYS[i])
    end
  end
  return {}
end

local out = { 0 }
local admitted = 1
for i = 1, #KEYS do
  local kind, limit, window = rule(i)
  local used, pivot = 0, false
  if kind == 's' then
    local since = '(' .. (now - window)
    used = redis.call('ZCOUNT', KEYS[i], since, '+inf')
    if used > 0 then
      local index = 0
      if used >= limit then index = used - limit end
      local hit = redis.call('ZRANGEBYSCORE', KEYS[i], since, '+inf', 'WITHSCORES', 'LIMIT', index, 1)
      pivot = tonumber(hit[2])
    end
  else
    used = tonumber(redis.call('GET', KEYS[i]) or '0')
  end
  if used >= limit then admitted = 0 end
  out[2 * i] = used
  out[2 * i + 1] = pivot
end

if mode == 'consume' and admitted == 1 then
  for i = 1, #KEYS do
    local kind, _, window, ttl = rule(i)
    if kind == 's' then
      redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now - window)
      redis.call('ZADD', KEYS[i], now, member)
    else
      redis.call('INCR', KEYS[i])
    end
    redis.call('PEXPIRE', KEYS[i], ttl)
  end
end
out[1] = admitted
return out
`;

/**
 * The weighted sliding log (tokens per minute) behind `RedisRateLimiter.consumeWeighted`: the same
 * rule as the unit log (admitted while the window's total is under the limit), each entry carrying
 * a weight. Running total, so a call costs O(entries leaving the window), not O(window).
 *
 * KEYS[1] ZSET  entry id → timestamp      KEYS[2] HASH  entry id → weight, and '#total'
 * ARGV    mode ('consume' | 'adjust' | 'restore'), then
 *         consume: now, entry id, limit, window ms, ttl ms, cost → { admitted 1|0, used (before), pivot|nil }
 *         adjust:  entry id, cost (0 removes the entry) → {}
 *         restore: ttl ms, then (entry id, timestamp, cost) triples: each entry not in the log is put
 *                  back (idempotent: a restore retried, or one that meets entries already there, counts
 *                  each entry once) → {}
 */
export const WEIGHTED_LUA = `
local log, weights = KEYS[1], KEYS[2]
if ARGV[1] == 'restore' then
  for i = 3, #ARGV, 3 do
    local id, at, cost = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
    if not redis.call('ZSCORE', log, id) then
      redis.call('ZADD', log, at, id)
      redis.call('HSET', weights, id, cost)
      redis.call('HINCRBY', weights, '#total', cost)
    end
  end
  redis.call('PEXPIRE', log, ARGV[2])
  redis.call('PEXPIRE', weights, ARGV[2])
  return {}
end
if ARGV[1] == 'adjust' then
  local id, cost = ARGV[2], tonumber(ARGV[3])
  local old = redis.call('HGET', weights, id)
  if not old then return {} end
  redis.call('HINCRBY', weights, '#total', cost - tonumber(old))
  if cost == 0 then
    redis.call('HDEL', weights, id)
    redis.call('ZREM', log, id)
  else
    redis.call('HSET', weights, id, cost)
  end
  return {}
end

local now, id, limit, window, ttl, cost = tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6], ARGV[7]
while true do
  local expired = redis.call('ZRANGEBYSCORE', log, '-inf', now - window, 'LIMIT', 0, 500)
  if #expired == 0 then break end
  local freed = 0
  for _, w in ipairs(redis.call('HMGET', weights, unpack(expired))) do freed = freed + tonumber(w or '0') end
  redis.call('HINCRBY', weights, '#total', -freed)
  redis.call('HDEL', weights, unpack(expired))
  redis.call('ZREM', log, unpack(expired))
end
local used = tonumber(redis.call('HGET', weights, '#total') or '0')
local pivot = false
if used > 0 then
  local need, cumulative, offset = used - limit + 1, 0, 0
  while not pivot do
    local batch = redis.call('ZRANGE', log, offset, offset + 499, 'WITHSCORES')
    if #batch == 0 then break end
    for i = 1, #batch, 2 do
      cumulative = cumulative + tonumber(redis.call('HGET', weights, batch[i]) or '0')
      if cumulative >= need then pivot = tonumber(batch[i + 1]); break end
    end
    offset = offset + 500
  end
end
local admitted = 0
if used < limit then
  admitted = 1
  redis.call('ZADD', log, now, id)
  redis.call('HSET', weights, id, cost)
  redis.call('HINCRBY', weights, '#total', cost)
end
redis.call('PEXPIRE', log, ttl)
redis.call('PEXPIRE', weights, ttl)
return { admitted, used, pivot }
`;
