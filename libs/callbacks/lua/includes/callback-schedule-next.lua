--[[
  Keeps a callback's one future automatic attempt in the deliveries queue's schedule (see
  QUEUE_SCHEDULES): entered with the failed attempt that makes it due, removed when the callback
  ends, in the same step as the state, so no crash can leave a pending callback without its next
  attempt or an ended one with an attempt still to come. The entry names the callback's next
  automatic attempt as the retry ladder does (scheduledAttemptId in libs/domain/src/callbacks.ts:
  the callback's id, the separator, the attempt's number); the schedule turns it back into the job.

  An ended callback enters the ended index in the same step, at its latest activity (GT: a manual
  attempt on an ended callback keeps it longer, never shorter), so the retention sweep finds every
  ended callback and never a pending one.

  The including script names KEYS[6], the schedule (sorted set: entry -> due ms), and KEYS[7], the
  ended index (sorted set: callback id -> last activity ms).
  next_ms: when the next attempt is due ('' = none), a string passed through as the score.
  separator: the ladder's SCHEDULED_ATTEMPT_SEPARATOR, which the caller passes in ARGV.
]]
local function schedule_next(cb, next_ms, now_ms, separator)
  local entry = cb.id .. separator .. (cb.ladder_attempt + 1)
  if cb.state == 'pending' then
    if next_ms ~= '' then redis.call('ZADD', KEYS[6], next_ms, entry) end
  else
    redis.call('ZREM', KEYS[6], entry)
    redis.call('ZADD', KEYS[7], 'GT', now_ms, cb.id)
  end
end
