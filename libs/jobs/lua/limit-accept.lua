--[[
  Enters a job as waiting unless its workspace is at its waiting-jobs cap. Check and entry in one
  step, so that concurrent calls cannot all pass the check at the cap. A job already entered (an
  idempotent replay) is accepted again without counting twice.

  Input:
    KEYS[1] the workspace's limit overrides (hash)
    KEYS[2] the workspace's unfinished jobs (set)

    ARGV[1] job id
    ARGV[2] the cap of a workspace without an override

  Output:
    {1 accepted or 0 refused, jobs waiting (this one included when accepted), the cap}
]]
local max = tonumber(redis.call('HGET', KEYS[1], 'max_waiting_jobs') or ARGV[2])
local waiting = redis.call('SCARD', KEYS[2])
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then return {1, waiting, max} end
if waiting >= max then return {0, waiting, max} end
redis.call('SADD', KEYS[2], ARGV[1])
return {1, waiting + 1, max}
