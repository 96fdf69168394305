--[[
  Records one attempt of a callback and moves the callback's state, its state indexes and its
  place in the ladder's schedule, and counts it into the Overview. In one step, so that a re-run of
  the same attempt (a worker killed after recording) neither counts twice nor moves the ladder again.

  Input:
    KEYS[1] the callback's record
    KEYS[2] its attempt log (hash: attempt key -> stored attempt)
    KEYS[3] the workspace's pending callbacks
    KEYS[4] the workspace's delivered callbacks
    KEYS[5] the workspace's failed callbacks
    KEYS[6] its shard's part of the ladder's schedule (the deliveries queue's)
    KEYS[7] its shard's ended callbacks (sorted set: id -> last activity ms)
    KEYS[8..] the Overview buckets of now (includes/overview-buckets)

    ARGV[1] the attempt's key in the log
    ARGV[2] the attempt in its stored form, without its number (a JSON array starting '[')
    ARGV[3] the automatic attempt it was (1-6), or 0 for a manual one
    ARGV[4] '1' if it delivered
    ARGV[5] when the next automatic attempt is due, ms, or '' when none is left (the ladder's last
            attempt failed: the callback ends failed)
    ARGV[6] now ms
    ARGV[7] when the attempt was sent, ms
    ARGV[8] the ladder's separator in a scheduled attempt's name (SCHEDULED_ATTEMPT_SEPARATOR)
    ARGV[9] the latency bucket of a delivery (index), or ''
    ARGV[10] the destination's origin when a failure counts against it, or ''
    ARGV[11] the failure as buckets keep it: '<sent ms> <error class> <status or ->'
    ARGV[12] most destinations one bucket names
    ARGV[13..] when each Overview bucket expires (Unix ms), in KEYS order

  Output:
    {1, record}   recorded; the callback as it now stands (JSON)
    {0, record}   recorded before (nothing changed)
    {-1, ''}      no such callback
]]
--- @include "includes/callback-state-index"
--- @include "includes/callback-schedule-next"
--- @include "includes/overview-buckets"

local raw = redis.call('GET', KEYS[1])
if not raw then return {-1, ''} end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then return {0, raw} end
local cb = cjson.decode(raw)
local before = cb.state
cb.attempt_count = cb.attempt_count + 1
-- The stored form is a JSON array whose first element is the attempt's number (see encodeAttempt).
redis.call('HSET', KEYS[2], ARGV[1], '[' .. cb.attempt_count .. ',' .. string.sub(ARGV[2], 2))
cb.last_attempt_ms = tonumber(ARGV[7])
local ladder = tonumber(ARGV[3])
local delivered = ARGV[4] == '1'
if ladder > cb.ladder_attempt then cb.ladder_attempt = ladder end
if delivered then
  if cb.state ~= 'delivered' then cb.delivered_ms = tonumber(ARGV[6]) end
  cb.state = 'delivered'
  cb.next_attempt_ms = cjson.null
elseif ladder > 0 and cb.state == 'pending' then
  if ARGV[5] == '' then
    cb.state = 'failed'
    cb.next_attempt_ms = cjson.null
  else
    cb.next_attempt_ms = tonumber(ARGV[5])
  end
end
local out = cjson.encode(cb)
redis.call('SET', KEYS[1], out)
move_state_index(before, cb)
-- A manual attempt that failed leaves the ladder, and its schedule, as they were.
if ladder > 0 or cb.state ~= 'pending' then schedule_next(cb, ARGV[5], ARGV[6], ARGV[8]) end
overview_count(overview_count_attempt, overview_buckets(8, 13), {
  first = ladder == 1,
  delivered = delivered,
  before = before,
  -- delivered_ms is written only by the delivery that ends the callback's wait: this one, if the
  -- callback was not delivered before it.
  ended_wait = delivered and before ~= 'delivered',
  ended_failed = not delivered and before == 'pending' and cb.state == 'failed',
  latency = ARGV[9],
  origin = ARGV[10],
  failure = ARGV[11],
  cap = tonumber(ARGV[12]),
})
return {1, out}
