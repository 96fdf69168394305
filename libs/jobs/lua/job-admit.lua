--[[
  Accepts a new job: the Idempotency-Key claim, the waiting-jobs cap and the stored job (record,
  listing index, intake mark, unfinished set). The same steps, in the same order, as claiming the
  key, then entering the job under the cap, then storing it; in one script so that no crash can
  fall between them.

  Input:
    KEYS[1] the job's record
    KEYS[2] the workspace's image or video index
    KEYS[3] its shard's intake set (jobs stored and not yet queued)
    KEYS[4] the workspace's unfinished jobs (set)
    KEYS[5] the workspace's limit overrides (hash)
    KEYS[6] (optional) the Idempotency-Key's entry

    ARGV[1] the record (JSON)
    ARGV[2] job id
    ARGV[3] created_ms
    ARGV[4] the waiting-jobs cap of a workspace without an override
    ARGV[5] (with KEYS[6]) the key's entry (JSON: job_id, fingerprint, claimed_ms)
    ARGV[6] (with KEYS[6]) the entry's TTL, seconds
    ARGV[7] (with KEYS[6]) '1' when the claim must exist already (the rebuild of a replayed job)

  Output:
    {1, rank}          stored
    {2, rank}          a job with this id exists
    {3, waiting, max}  the workspace is at its cap
    {4, job id}        the key names another job of the same request
    {5}                the key was used for a different request
    {6}                the claim was to be found (ARGV[7] = '1') and is gone: its job was removed
  The rank is the size of the workspace's unfinished set, the job included (its queue priority's
  input), answered here so that queueing the job costs no further round trip.
]]
if #KEYS == 6 then
  local claimed = redis.call('GET', KEYS[6])
  if not claimed then
    if ARGV[7] == '1' then return {6} end
    redis.call('SET', KEYS[6], ARGV[5], 'EX', ARGV[6])
  else
    local held = cjson.decode(claimed)
    if held.fingerprint ~= cjson.decode(ARGV[5]).fingerprint then return {5} end
    if held.job_id ~= ARGV[2] then return {4, held.job_id} end
  end
end
if redis.call('EXISTS', KEYS[1]) == 1 then return {2, redis.call('SCARD', KEYS[4])} end
if redis.call('SISMEMBER', KEYS[4], ARGV[2]) == 0 then
  local max = tonumber(redis.call('HGET', KEYS[5], 'max_waiting_jobs') or ARGV[4])
  local waiting = redis.call('SCARD', KEYS[4])
  if waiting >= max then return {3, waiting, max} end
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], 'NX', ARGV[3], ARGV[2])
redis.call('ZADD', KEYS[3], 'NX', ARGV[3], ARGV[2])
redis.call('SADD', KEYS[4], ARGV[2])
return {1, redis.call('SCARD', KEYS[4])}
