--[[
  Claims the due entries of one shard's schedule for the promoter that runs it: answers them and
  moves each to the claim's end, so that no other promoter finds them due while this one adds their
  jobs. The promoter removes each entry once its job was added; an entry still there when the claim
  ends (its promoter died or stalled that long) is due again, and the next promoter takes it.

  Why entries are claimed rather than read: BullMQ ignores an add whose job id exists only while
  that job exists, and a delivery job is removed as soon as it completes. An attempt whose
  destination has no free slot completes within milliseconds, set aside as a job of its own; a
  second promoter adding the same entry after that would run the attempt again beside the job it
  was set aside as, and both could POST it.

  Input:
    KEYS[1] the schedule (sorted set: job id -> due ms)

    ARGV[1] now ms: entries scored up to it are due
    ARGV[2] when the claim ends, ms
    ARGV[3] most entries claimed

  Output:
    the claimed entries, earliest due first
]]
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, entry in ipairs(due) do
  redis.call('ZADD', KEYS[1], 'XX', ARGV[2], entry)
end
return due
