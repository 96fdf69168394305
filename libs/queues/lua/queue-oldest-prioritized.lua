#!lua flags=no-writes
--[[
  The prioritized job of a BullMQ queue that has waited longest. (The flags line above must stay
  the script's first: flagged no-writes, it runs, like the depth pipeline's reads, on a Redis
  paused for writes.)

  BullMQ 6 scores a prioritized job `priority * 2^32 + counter` (getPriorityScore.lua), the counter
  rising with every entry, so the set's head is the job that runs next, not the oldest one: with
  fair scheduling (generationPriority) a deep backlog's jobs wait behind younger ones of lower
  rank. The oldest is the first of its priority level (FIFO within one), so one look per level
  present finds it: O(levels x log n), where the levels are bounded by the workspaces'
  waiting-jobs caps, not by the jobs queued.

  Input:
    KEYS[1] the queue's prioritized set

    ARGV[1] the most priority levels to look at

  Output:
    the job id, or false when the set is empty
]]
local step = 0x100000000
local from = '-inf'
local oldest, oldestCounter
for _ = 1, tonumber(ARGV[1]) do
  local first = redis.call('ZRANGEBYSCORE', KEYS[1], from, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if #first == 0 then break end
  local score = tonumber(first[2])
  local priority = math.floor(score / step)
  local counter = score - priority * step
  if oldestCounter == nil or counter < oldestCounter then
    oldest, oldestCounter = first[1], counter
  end
  from = string.format('%.0f', (priority + 1) * step)
end
return oldest
