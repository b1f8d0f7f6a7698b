/**
 * The hold store's Lua script: one atomic step per call. The keys of one account share a hash tag;
 * an admission also reads the fleet's epoch key (another slot: a standalone Redis, or one behind a
 * proxy, not a Redis Cluster).
 *
 *   KEYS[1] exp   ZSET  hold id → expiresAt (epoch ms)
 *   KEYS[2] hold  HASH  hold id → "<amount µUSD>:<key hash>"
 *   KEYS[3] sum   HASH  held (µUSD of live holds), kh:<key> (same per key), c / kc:<key> (charge counters, µUSD)
 *   KEYS[4] epoch STRING the fleet's epoch (redis-fleet.ts), admissions only, when the caller has seen one
 *   ARGV[1] mode, ARGV[2] now (epoch ms), ARGV[3] retention (ms), then per mode (see redis-hold-store.ts).
 *
 * Precision: Redis Lua numbers are doubles. Amounts are µUSD (1e-6 USD, not the 1e-9 units of the
 * rest of the code), so every total compared here is exact up to 2^53 µUSD ≈ 9 billion USD; the
 * caller refuses larger inputs. Writes never go through a Lua number: HINCRBY receives the decimal
 * strings the caller sent (64-bit exact in Redis) or the stored ones with a "-" in front.
 * The `held` totals are maintained incrementally, and every mode that reads them first prunes the
 * expired holds, so they always equal the sum of live holds.
 */
export const HOLD_LUA = `
local exp, holds, sums = KEYS[1], KEYS[2], KEYS[3]
local mode, now, retention = ARGV[1], tonumber(ARGV[2]), ARGV[3]

local function drop(id)
  local v = redis.call('HGET', holds, id)
  redis.call('ZREM', exp, id)
  if not v then return end
  local sep = string.find(v, ':', 1, true)
  local amount = string.sub(v, 1, sep - 1)
  local keyField = 'kh:' .. string.sub(v, sep + 1)
  redis.call('HINCRBY', sums, 'held', '-' .. amount)
  if redis.call('HINCRBY', sums, keyField, '-' .. amount) == 0 then redis.call('HDEL', sums, keyField) end
  redis.call('HDEL', holds, id)
end

local function prune()
  local expired = redis.call('ZRANGEBYSCORE', exp, '-inf', now)
  for _, id in ipairs(expired) do drop(id) end
end

local function keep()
  redis.call('PEXPIRE', exp, retention)
  redis.call('PEXPIRE', holds, retention)
  redis.call('PEXPIRE', sums, retention)
end

-- Field ep of the sums: the newest fleet epoch (a timestamp) of a process that wrote holds here.
local function newerEpoch(mine)
  local ep = redis.call('HGET', sums, 'ep')
  return mine ~= '' and ep ~= false and tonumber(ep) > tonumber(mine)
end

local function markEpoch(mine)
  if mine == '' then return end
  local ep = redis.call('HGET', sums, 'ep')
  if not ep or tonumber(ep) < tonumber(mine) then redis.call('HSET', sums, 'ep', mine) end
end

local function since(counter, mark)
  if counter < mark then return counter end
  return counter - mark
end

if mode == 'admit' then
  -- ARGV: 4 id, 5 key, 6 amount, 7 paid (1/0), 8 balance, 9 account mark, 10 key remaining ('' = no limit), 11 key mark, 12 expiresAt, 13 epoch ('' = none),
  -- 14 / 15 what the caller's process holds live on the account / the key (µUSD, rounded down)
  local id, key, amount = ARGV[4], ARGV[5], ARGV[6]
  prune()
  local s = redis.call('HMGET', sums, 'held', 'c', 'kh:' .. key, 'kc:' .. key)
  local held, charged = tonumber(s[1] or '0'), tonumber(s[2] or '0')
  local keyHeld, keyCharged = tonumber(s[3] or '0'), tonumber(s[4] or '0')
  -- Charge counters only grow: one below the caller's mark means Redis lost its data since the mark was
  -- read (FLUSHALL, eviction, a failover) — and with it the live holds: nothing is decided from it. So
  -- does an epoch mark newer than the caller's (ARGV[13]): another process saw Redis come back empty.
  if charged < tonumber(ARGV[9]) or (ARGV[10] ~= '' and keyCharged < tonumber(ARGV[11])) then
    return {0, 3, 0, held}
  end
  if newerEpoch(ARGV[13]) then return {0, 3, 0, held} end
  -- So does a fleet epoch other than the one the caller last saw, or none: Redis lost its data (the
  -- epoch key with it) since the caller's last heartbeat, whatever this account's keys still tell —
  -- an account with no charge since the snapshot and no hold of the caller's has nothing else to show.
  if ARGV[13] ~= '' and KEYS[4] ~= nil and redis.call('GET', KEYS[4]) ~= ARGV[13] then return {0, 3, 0, held} end
  -- So does holding less than the caller's own live holds: a live hold leaves only when its process
  -- settles, releases or stops renewing it. (After FLUSHALL with no charge since the caller's snapshot
  -- there is no counter to miss, and no epoch mark survives: the holds are what is left to tell.)
  if held < tonumber(ARGV[14] or '0') or keyHeld < tonumber(ARGV[15] or '0') then return {0, 3, 0, held} end
  local balance = tonumber(ARGV[8]) - since(charged, tonumber(ARGV[9]))
  if balance < 0 or (ARGV[7] == '1' and balance - held <= 0) then return {0, 1, balance, held} end
  if ARGV[10] ~= '' and tonumber(ARGV[10]) - since(keyCharged, tonumber(ARGV[11])) - keyHeld <= 0 then
    return {0, 2, balance, keyHeld}
  end
  if amount ~= '0' and redis.call('HSETNX', holds, id, amount .. ':' .. key) == 1 then
    redis.call('ZADD', exp, ARGV[12], id)
    redis.call('HINCRBY', sums, 'held', amount)
    redis.call('HINCRBY', sums, 'kh:' .. key, amount)
    markEpoch(ARGV[13])
    keep()
  end
  return {1, 0, balance, held}
elseif mode == 'settle' then
  -- ARGV: 4 id, 5 key, 6 account charge, 7 key charge
  drop(ARGV[4])
  if ARGV[6] ~= '0' then redis.call('HINCRBY', sums, 'c', ARGV[6]) end
  if ARGV[7] ~= '0' then redis.call('HINCRBY', sums, 'kc:' .. ARGV[5], ARGV[7]) end
  keep()
  return 1
elseif mode == 'release' then
  -- ARGV: 4 id
  drop(ARGV[4])
  return 1
elseif mode == 'renew' then
  -- ARGV: 4 new expiresAt, 5.. ids. Only later: a hold kept for its journaled charge is not shortened
  -- by the periodic renewal.
  for i = 5, #ARGV do
    local score = redis.call('ZSCORE', exp, ARGV[i])
    if score and tonumber(score) > now and tonumber(score) < tonumber(ARGV[4]) then
      redis.call('ZADD', exp, ARGV[4], ARGV[i])
    end
  end
  keep()
  return 1
elseif mode == 'restore' then
  -- ARGV: 4 new expiresAt, 5 epoch ('' = none), then (id, amount, key) per hold. Pruned first, so a
  -- lapsed hold is dropped and added back with the totals kept equal to the live holds.
  prune()
  markEpoch(ARGV[5])
  for i = 6, #ARGV, 3 do
    local id, amount, key = ARGV[i], ARGV[i + 1], ARGV[i + 2]
    if redis.call('HSETNX', holds, id, amount .. ':' .. key) == 1 then
      redis.call('HINCRBY', sums, 'held', amount)
      redis.call('HINCRBY', sums, 'kh:' .. key, amount)
      redis.call('ZADD', exp, ARGV[4], id)
    else
      local score = tonumber(redis.call('ZSCORE', exp, id))
      if not score or score < tonumber(ARGV[4]) then redis.call('ZADD', exp, ARGV[4], id) end
    end
  end
  keep()
  return 1
elseif mode == 'marks' then
  -- ARGV: 4 key ('' = account only). Reading a mark extends the counters' life, so they cannot
  -- expire (and restart at 0) while a snapshot that refers to them is in use.
  local s = redis.call('HMGET', sums, 'c', 'kc:' .. ARGV[4])
  if s[1] or s[2] then redis.call('PEXPIRE', sums, retention) end
  return {s[1] or '0', s[2] or '0'}
elseif mode == 'held' then
  prune()
  return redis.call('HGET', sums, 'held') or '0'
end
return redis.error_reply('unknown mode ' .. tostring(mode))
`;
