--[[
  Removes a job's record with its listing-index entry, its expiry entry, its awaiting-callback mark
  and the claim of the Idempotency-Key it was made with (if that still names this job), in one
  step, so that no crash leaves an index entry naming a removed job. The index remembers it for a
  while, so that a client paging the list after it goes on from its place. With a cutoff (the
  retention sweep), only while its expiry is still due: a hold written meanwhile wins.

  Input:
    KEYS[1] the job's record
    KEYS[2] the workspace's image or video index
    KEYS[3] its shard's expiry index
    KEYS[4] its shard's jobs awaiting their callback (set)
    KEYS[5] the listing index's removed set (includes/list-removed)
    KEYS[6] when each of its entries was removed (includes/list-removed)
    KEYS[7] (optional) the Idempotency-Key's entry

    ARGV[1] job id
    ARGV[2] cutoff ms, or '' to remove unconditionally
    ARGV[3] how long the removed set is kept after its latest entry, ms
    ARGV[4] most entries the removed set keeps
    ARGV[5] now ms

  Output:
    1 removed
    0 left (not due any more), or gone already (another removal came first; the rest is still
      cleared, in case that one was cut short)
]]
--- @include "includes/list-removed"

if ARGV[2] ~= '' then
  local due = redis.call('ZSCORE', KEYS[3], ARGV[1])
  if due and tonumber(due) > tonumber(ARGV[2]) then return 0 end
end
local removed = redis.call('DEL', KEYS[1])
remember_removed(KEYS[2], KEYS[5], KEYS[6], ARGV[1], tonumber(ARGV[5]), tonumber(ARGV[3]), tonumber(ARGV[4]))
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('SREM', KEYS[4], ARGV[1])
if KEYS[7] then
  local claimed = redis.call('GET', KEYS[7])
  if claimed then
    local ok, held = pcall(cjson.decode, claimed)
    if ok and type(held) == 'table' and held.job_id == ARGV[1] then redis.call('DEL', KEYS[7]) end
  end
end
return removed
