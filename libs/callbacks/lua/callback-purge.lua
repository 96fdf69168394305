--[[
  Removes a callback with its attempt log and every index entry, in one step; the workspace's list
  remembers it for a while, so that a client paging the list after it goes on from its place. With a cutoff (its
  own retention), only an ended one whose last activity is at or before it (a manual attempt
  meanwhile keeps it); without (its job is going), whatever its state, and with it the ladder's
  next attempt. A record that cannot be decoded is left alone with its entries.

  Input:
    KEYS[1] the callback's record
    KEYS[2] its attempt log
    KEYS[3] the workspace's pending callbacks
    KEYS[4] the workspace's delivered callbacks
    KEYS[5] the workspace's failed callbacks
    KEYS[6] the workspace's callbacks
    KEYS[7] the workspace's callbacks of its type
    KEYS[8] its shard's ended callbacks
    KEYS[9] its shard's part of the ladder's schedule
    KEYS[10] the removed set of the workspace's callbacks (includes/list-removed)
    KEYS[11] when each of its entries was removed (includes/list-removed)
    KEYS[12] the workspace's callbacks to its webhook endpoint (for a callback to an endpoint)
    KEYS[13] its job's callbacks to webhook endpoints
    KEYS[14..] the workspace's Overview buckets (includes/overview-buckets), with no cutoff: a
               pending callback removed with its job leaves pending without ending

    ARGV[1] callback id
    ARGV[2] cutoff ms, or '' to remove it whatever its state
    ARGV[3] the ladder's separator in a scheduled attempt's name (SCHEDULED_ATTEMPT_SEPARATOR)
    ARGV[4] how long the removed set is kept after its latest entry, ms
    ARGV[5] most entries the removed set keeps
    ARGV[6] now ms
    ARGV[7..] when each Overview bucket expires (Unix ms)

  Output:
    1 removed, 0 kept (or gone already), -1 its record cannot be decoded
]]
--- @include "includes/overview-buckets"
--- @include "includes/list-removed"

local withdrawn = false
local raw = redis.call('GET', KEYS[1])
if raw then
  local ok, cb = pcall(cjson.decode, raw)
  if not ok or type(cb) ~= 'table' then return -1 end
  if ARGV[2] ~= '' then
    if cb.state == 'pending' then
      redis.call('ZREM', KEYS[8], ARGV[1])
      return 0
    end
    local last = redis.call('ZSCORE', KEYS[8], ARGV[1])
    if last and tonumber(last) > tonumber(ARGV[2]) then return 0 end
  elseif cb.state == 'pending' then
    redis.call('ZREM', KEYS[9], ARGV[1] .. ARGV[3] .. (cb.ladder_attempt + 1))
    withdrawn = true
  end
else
  -- Gone already (a repeat after this step): only the ended entry can be left.
  redis.call('ZREM', KEYS[8], ARGV[1])
  return 0
end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('ZREM', KEYS[5], ARGV[1])
remember_removed(KEYS[6], KEYS[10], KEYS[11], ARGV[1], tonumber(ARGV[6]), tonumber(ARGV[4]), tonumber(ARGV[5]))
redis.call('ZREM', KEYS[6], ARGV[1])
redis.call('ZREM', KEYS[7], ARGV[1])
redis.call('ZREM', KEYS[8], ARGV[1])
redis.call('ZREM', KEYS[12], ARGV[1])
redis.call('SREM', KEYS[13], ARGV[1])
if withdrawn then overview_count(overview_count_withdrawn, overview_buckets(14, 7)) end
return 1
