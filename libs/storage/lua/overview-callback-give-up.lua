--[[
  Counts a callback ended as failed without its last attempt (nothing could ever be sent) into the
  Overview, run right after the give-up and in the same round trip. Only the give-up that ended it
  counts: that one entered the callback in the ended index at its own now.

  Input:
    KEYS[1] the callback's record
    KEYS[2] its shard's ended callbacks' index
    KEYS[3..] the Overview buckets of the give-up's time (includes/overview-buckets)

    ARGV[1] the callback's id
    ARGV[2] the give-up's now (ms)
    ARGV[3..] when each bucket expires (Unix ms), in KEYS order

  Output:
    1 counted, 0 not
]]
--- @include "includes/overview-buckets"
local ended = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not ended or tonumber(ended) ~= tonumber(ARGV[2]) then return 0 end
local raw = redis.call('GET', KEYS[1])
if not raw or cjson.decode(raw).state ~= 'failed' then return 0 end
local buckets = overview_buckets(3, 3)
overview_add(buckets, 'f', 1)
return 1
