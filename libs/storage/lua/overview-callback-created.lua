--[[
  Counts a callback into the Overview once it is created, run right after the script that creates
  it and in the same round trip. A replayed creation (the callback existed) counts nothing: the
  state index holds the callback at its first creation's time, not this one's.

  Input:
    KEYS[1] the workspace's index of callbacks in the new callback's state
    KEYS[2..] the Overview buckets of the creation's time (includes/overview-buckets)

    ARGV[1] the callback's id
    ARGV[2] its created_ms, as this creation wrote it
    ARGV[3..] when each bucket expires (Unix ms), in KEYS order

  Output:
    1 counted, 0 not (an earlier creation made it)
]]
--- @include "includes/overview-buckets"
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) ~= tonumber(ARGV[2]) then return 0 end
local buckets = overview_buckets(2, 3)
overview_add(buckets, 'c', 1)
return 1
