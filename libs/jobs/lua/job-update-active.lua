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

local refusal = refusal_for_unfinished(KEYS[1])
if refusal then return refusal end
redis.call('SET', KEYS[1], ARGV[1])
return 1
