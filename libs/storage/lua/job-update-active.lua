--[[
  Writes an unfinished job's record (progress, status). Read and write in one step: a progress
  or status write must never overwrite a finished job.

  Input:
    KEYS[1] the job's record

    ARGV[1] the new record (JSON)

  Output:
     1 written
     0 the job had finished meanwhile (nothing written)
    -1 no such job
    -2 its record cannot be decoded
]]
--- @include "includes/status-of"

local raw = redis.call('GET', KEYS[1])
if not raw then return -1 end
local status = status_of(raw)
if status == nil then return -2 end
if status == 'completed' or status == 'failed' then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
return 1
