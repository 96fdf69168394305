--[[
  Stores a new callback (unless one with its id exists) and its index entries, in one step, and
  counts a new one into the Overview. The workspace and type indexes are also (re)written for an
  existing record, harmlessly; the state index only for a new one, since the record may have moved on to another state (the scripts that
  move it keep that index in step). Its job no longer awaits it: retention now reads the
  callback's own state.

  Input:
    KEYS[1] the callback's record
    KEYS[2] the workspace's callbacks (sorted set: id -> created ms)
    KEYS[3] the workspace's callbacks of its type
    KEYS[4] the workspace's callbacks in its state
    KEYS[5] its shard's jobs awaiting their callback (set)
    KEYS[6] the workspace's callbacks to its webhook endpoint (for a callback to an endpoint)
    KEYS[7] its job's callbacks beyond its own callback_url's (set; for a callback to an endpoint or the relay's listeners)
    KEYS[8..] the Overview buckets of its creation's time (includes/overview-buckets)

    ARGV[1] the record (JSON)
    ARGV[2] created ms
    ARGV[3] callback id
    ARGV[4] its job's id
    ARGV[5] '1' when it goes to a webhook endpoint (KEYS[6] is written), '' otherwise
    ARGV[6] '1' when it goes anywhere but its request's callback_url (KEYS[7] is written), '' otherwise
    ARGV[7..] when each Overview bucket expires (Unix ms), in KEYS order

  Output:
    1 created, 0 a callback with this id existed (its record is left as it was)
]]
--- @include "includes/overview-buckets"

local created = redis.call('SET', KEYS[1], ARGV[1], 'NX')
redis.call('ZADD', KEYS[2], 'NX', ARGV[2], ARGV[3])
redis.call('ZADD', KEYS[3], 'NX', ARGV[2], ARGV[3])
redis.call('SREM', KEYS[5], ARGV[4])
if ARGV[5] == '1' then redis.call('ZADD', KEYS[6], 'NX', ARGV[2], ARGV[3]) end
if ARGV[6] == '1' then redis.call('SADD', KEYS[7], ARGV[3]) end
if created then
  redis.call('ZADD', KEYS[4], 'NX', ARGV[2], ARGV[3])
  overview_count(overview_count_created, overview_buckets(8, 7))
  return 1
end
return 0
