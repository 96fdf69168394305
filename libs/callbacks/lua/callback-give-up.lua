--[[
  Ends a still-pending callback as failed, with its state indexes and the ladder's schedule, in one
  step, and counts that into the Overview. A callback whose delivery job BullMQ gave up on must
  still end; a delivered one stays delivered.

  Input:
    KEYS[1] the callback's record
    KEYS[2] its attempt log (not touched: the same keys as callback-record-attempt's)
    KEYS[3] the workspace's pending callbacks
    KEYS[4] the workspace's delivered callbacks
    KEYS[5] the workspace's failed callbacks
    KEYS[6] its shard's part of the ladder's schedule (the deliveries queue's)
    KEYS[7] its shard's ended callbacks (sorted set: id -> last activity ms)
    KEYS[8..] the Overview buckets of now (includes/overview-buckets)

    ARGV[1] now ms
    ARGV[2] the ladder's separator in a scheduled attempt's name (SCHEDULED_ATTEMPT_SEPARATOR)
    ARGV[3..] when each Overview bucket expires (Unix ms), in KEYS order

  Output:
    the callback as it now stands (JSON), or '' when there is no such callback
]]
--- @include "includes/callback-state-index"
--- @include "includes/callback-schedule-next"
--- @include "includes/overview-buckets"

local raw = redis.call('GET', KEYS[1])
if not raw then return '' end
local cb = cjson.decode(raw)
if cb.state ~= 'pending' then return raw end
cb.state = 'failed'
cb.next_attempt_ms = cjson.null
local out = cjson.encode(cb)
redis.call('SET', KEYS[1], out)
move_state_index('pending', cb)
schedule_next(cb, '', ARGV[1], ARGV[2])
overview_count(overview_count_given_up, overview_buckets(8, 3))
return out
