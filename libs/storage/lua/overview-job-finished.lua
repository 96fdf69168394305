--[[
  Counts a finished job, and what it was charged, into its workspace's day bucket of the Overview,
  run right after the script that finishes it and in the same round trip. Only the finish that
  wrote the record counts: a job finishes once, and a repeat leaves the first finish_ms in place.

  Input:
    KEYS[1] the job's record
    KEYS[2] the workspace's Overview bucket of the finish's day (includes/overview-buckets)

    ARGV[1] the finished_ms this finish wrote
    ARGV[2] 'completed' or 'failed'
    ARGV[3] the amount charged, micro-dollars (0 when none)
    ARGV[4] when the bucket expires (Unix ms)

  Output:
    1 counted, 0 not
]]
--- @include "includes/overview-buckets"
local raw = redis.call('GET', KEYS[1])
if not raw or not string.find(raw, '"finished_ms":' .. ARGV[1] .. '[,}]') then return 0 end
local buckets = overview_buckets(2, 4)
if ARGV[2] == 'completed' then overview_add(buckets, 'jc', 1) else overview_add(buckets, 'jf', 1) end
if tonumber(ARGV[3]) > 0 then overview_add(buckets, 'usd', tonumber(ARGV[3])) end
return 1
