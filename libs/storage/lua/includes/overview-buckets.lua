--[[
  The Overview's buckets (libs/storage/src/overview.ts, where the tiers and the reading are): one
  hash per workspace and time slot, in tiers of minutes, quarter hours and hours (days for jobs),
  each expiring when its tier's longest window no longer reaches it. An event adds to the bucket
  of its slot in every tier, so no read ever adds up finer slots or scans an index. Fields:
    c            callbacks created
    1            first attempts (attempt 1 of the ladder)
    a            attempts after the first (later automatic ones, manual ones): attempts are 1 + a
    d            callbacks delivered while pending by an attempt after the first
    ae           failed attempts
    f            callbacks that ended failed
    r            failed callbacks delivered later (a manual attempt, a recovery)
    w            pending callbacks removed with their job (a DELETE): they left pending without ending
    l<i>         deliveries that ended their callback's wait, by the latency bucket i their time
                 from the job's end fell in: one for each d, each r, and each first attempt that
                 delivered, so those are the l's less d and r, and need no field of their own
                 (the common case, a first attempt that delivers, writes two fields)
    x:<origin>   failed attempts to a destination; e:<origin> its last failure
                 ('<sent ms> <error class> <status or ->')
    nx           destinations the bucket names; past the cap the rest count under '*'
    jc, jf, usd  jobs completed, jobs failed, amount charged in micro-dollars (day buckets)
  The script that makes an event counts it, once it has written it, so only what that write did is
  counted and a re-run after a crash (which finds the write done) counts nothing twice. It names its
  buckets KEYS[first..#KEYS], and when each expires (Unix ms) in ARGV from first_expiry on, in the same
  order. A bucket gets its expiry (the same absolute time every time) whenever one of its fields is
  first written, which includes its making: each call inside a script costs, and most events only
  add to fields that exist.
]]

local function overview_buckets(first_key, first_expiry)
  local buckets = {}
  for i = first_key, #KEYS do
    buckets[#buckets + 1] = { key = KEYS[i], expires = ARGV[first_expiry + i - first_key] }
  end
  return buckets
end

local function overview_add_to(bucket, field, by)
  if redis.call('HINCRBY', bucket.key, field, by) == by then
    redis.call('PEXPIREAT', bucket.key, bucket.expires)
  end
end

local function overview_add(buckets, field, by)
  for _, bucket in ipairs(buckets) do
    overview_add_to(bucket, field, by)
  end
end

-- A bucket names at most `cap` destinations, first come: a workspace calling thousands of
-- receivers must not grow it without bound, and the ones failing most are there from their start.
local function overview_fail_at(buckets, origin, last, cap)
  for _, bucket in ipairs(buckets) do
    local name = origin
    if redis.call('HEXISTS', bucket.key, 'x:' .. name) == 0 then
      if tonumber(redis.call('HGET', bucket.key, 'nx') or '0') >= cap then
        name = '*'
      else
        overview_add_to(bucket, 'nx', 1)
      end
    end
    redis.call('HSET', bucket.key, 'e:' .. name, last)
    overview_add_to(bucket, 'x:' .. name, 1)
  end
end

-- Counts an event with `count(...)`, never failing the write it counts: an error in counting (a
-- bucket key of another type, say) leaves the Overview short and the write as it was made.
local function overview_count(count, ...)
  pcall(count, ...)
end

-- A job's finish into its day bucket: completed or failed, and what it was charged (micro-dollars).
local function overview_count_job_finished(buckets, status, micro_usd)
  if status == 'completed' then overview_add(buckets, 'jc', 1) else overview_add(buckets, 'jf', 1) end
  if micro_usd > 0 then overview_add(buckets, 'usd', micro_usd) end
end

-- A callback created.
local function overview_count_created(buckets)
  overview_add(buckets, 'c', 1)
end

-- An attempt just recorded. `first`: attempt 1 of the ladder; `ended_wait`: this delivery ended the
-- callback's wait (it was pending, or failed and so recovered); `ended_failed`: this failure ended the
-- callback as failed; `latency`: the latency bucket of a delivery, or ''; `origin`: the destination a
-- failure counts against, or ''.
local function overview_count_attempt(buckets, a)
  if a.first then
    overview_add(buckets, '1', 1)
  else
    overview_add(buckets, 'a', 1)
  end
  if not a.delivered then overview_add(buckets, 'ae', 1) end
  if a.ended_wait then
    if a.before == 'failed' then
      overview_add(buckets, 'r', 1)
    elseif not a.first then
      overview_add(buckets, 'd', 1)
    end
    if a.latency ~= '' then overview_add(buckets, 'l' .. a.latency, 1) end
  elseif a.ended_failed then
    overview_add(buckets, 'f', 1)
  end
  if a.origin ~= '' then overview_fail_at(buckets, a.origin, a.failure, a.cap) end
end

-- A pending callback removed with its job.
local function overview_count_withdrawn(buckets)
  overview_add(buckets, 'w', 1)
end

-- A callback ended as failed without its last attempt (nothing could ever be sent).
local function overview_count_given_up(buckets)
  overview_add(buckets, 'f', 1)
end
