--[[
  Counts one call in a fixed one-minute window and reads the limit it is counted against.

  A fixed window per workspace and bucket: it opens with the first call after the previous one
  expired and lasts a minute. One counter and no clock: replicas with skewed clocks still share
  it, and a burst can reach at most twice the limit across a window boundary, which is the usual
  price of a fixed window. The override is read in the same round trip.

  Input:
    KEYS[1] the workspace's limit overrides (hash: limit name -> number)
    KEYS[2] the bucket's counter (expires with its window)

    ARGV[1] the limit's name in the overrides
    ARGV[2] the limit without an override
    ARGV[3] the window, ms

  Output:
    {calls in this window, this one included; the limit; ms until the window ends}
]]
local limit = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or ARGV[2])
local count = redis.call('INCR', KEYS[2])
local ttl = redis.call('PTTL', KEYS[2])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
  ttl = tonumber(ARGV[3])
end
return {count, limit, ttl}
