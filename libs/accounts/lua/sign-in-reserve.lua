--[[
  Takes a place for one sign-in attempt before its password is checked (a burst of parallel
  attempts cannot all read a count under the limit and all get a costly password check). Failures
  are counted per client address (spraying many accounts: a hard limit per window) and per e-mail
  and address together (guessing one account: free at first, then each attempt waits twice as long
  as the one before it). Nothing is counted per e-mail alone, so failures from one address never
  keep the owner out from another.

  Input:
    KEYS[1] the address's failures (counter, expires with its window)
    KEYS[2] the e-mail and address's failures (hash: failures, last_ms; expires with its window)

    ARGV[1] failures allowed per address in a window
    ARGV[2] the window, seconds
    ARGV[3] failures of one e-mail from one address before attempts are slowed
    ARGV[4] the first wait, ms (doubled with each further failure)
    ARGV[5] the longest wait, ms
    ARGV[6] now, ms

  Output:
    {1, 0}            go ahead (the attempt is counted as a failure until it succeeds)
    {0, retry ms}     refused: try again after that long
]]
local now = tonumber(ARGV[6])
local failures = tonumber(redis.call('HGET', KEYS[2], 'failures') or '0')
local free = tonumber(ARGV[3])
if failures >= free then
  local wait = math.min(tonumber(ARGV[5]), tonumber(ARGV[4]) * 2 ^ (failures - free))
  local last = tonumber(redis.call('HGET', KEYS[2], 'last_ms') or '0')
  if now < last + wait then return {0, math.ceil(last + wait - now)} end
end

local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('EXPIRE', KEYS[1], ARGV[2]) end
if count > tonumber(ARGV[1]) then
  redis.call('DECR', KEYS[1])
  return {0, math.max(1, redis.call('PTTL', KEYS[1]))}
end

redis.call('HINCRBY', KEYS[2], 'failures', 1)
redis.call('HSET', KEYS[2], 'last_ms', now)
redis.call('EXPIRE', KEYS[2], ARGV[2])
return {1, 0}
