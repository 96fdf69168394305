--[[
  Finishes a job: its finished record, its charge, and its leaving the sets of unfinished work,
  then announces it (to a synchronous call waiting for it) and counts it into its workspace's Overview.

  One step, so that completion and charge go together: a job ends once, so it is charged at most
  once even when a crashed worker's job is processed again. The job leaves its workspace's
  unfinished set in the same step, so the waiting-jobs cap never counts a finished job.

  Input:
    KEYS[1] the job's record
    KEYS[2] the workspace's charge ledger (list)
    KEYS[3] the workspace's unfinished jobs (set)
    KEYS[4] its shard's intake set (jobs stored and not yet queued)
    KEYS[5] its shard's expiry index (sorted set: job id -> when its retention ends, ms)
    KEYS[6] its shard's jobs awaiting their callback (set)
    KEYS[7] the workspace's Overview bucket of the finish's day (includes/overview-buckets)

    ARGV[1] the finished record (JSON)
    ARGV[2] the charge (JSON), or '' for none
    ARGV[3] job id
    ARGV[4] the job-finished channel (PUBLISH), or '' when nobody waits for the job (not synchronous)
    ARGV[5] when its retention ends, ms, or '' for never
    ARGV[6] '1' when the job has a callback URL
    ARGV[7] 'completed' or 'failed'
    ARGV[8] the amount charged, micro-dollars (0 when none)
    ARGV[9] when the Overview bucket expires (Unix ms)

  Output:
     1 finished
     0 it had finished already (nothing written or charged again)
    -1 no such job
    -2 its record cannot be decoded
]]
--- @include "includes/status-of"
--- @include "includes/overview-buckets"

local refusal = refusal_for_unfinished(KEYS[1])
if refusal then return refusal end
redis.call('SET', KEYS[1], ARGV[1])
if ARGV[2] ~= '' then redis.call('RPUSH', KEYS[2], ARGV[2]) end
redis.call('SREM', KEYS[3], ARGV[3])
redis.call('ZREM', KEYS[4], ARGV[3])
if ARGV[5] ~= '' then redis.call('ZADD', KEYS[5], ARGV[5], ARGV[3]) end
if ARGV[6] == '1' then redis.call('SADD', KEYS[6], ARGV[3]) end
if ARGV[4] ~= '' then redis.call('PUBLISH', ARGV[4], ARGV[3]) end
overview_count(overview_count_job_finished, overview_buckets(7, 9), ARGV[7], tonumber(ARGV[8]))
return 1
