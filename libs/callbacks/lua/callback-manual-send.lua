--[[
  Lets one run of a manual attempt's request send it. A request can run twice at once: a client
  repeating its Idempotency-Key queues the request again when it cannot tell that the first call
  queued it, and by then the first run may be waiting, deferred, for a slot of its destination.
  The run that asks first holds the request for the time it is given (well over what an attempt
  and its record take); another run is told how long the hold has left, and looks again until the
  attempt log says the POST was made or the hold has lapsed: a run that died holding the request
  lets it go then.

  Input:
    KEYS[1] the request's hold (string: the id of the delivery job holding it)
    KEYS[2] the callback's attempt log

    ARGV[1] the id of the delivery job asking
    ARGV[2] how long a hold lasts, ms
    ARGV[3] the request's key in the attempt log

  Output:
    -1  the attempt is in the log already: nothing to send
     0  the asking job holds the request (newly, or again after it was restarted): send
    >0  another job holds it: for this many ms more at most
]]
if redis.call('HEXISTS', KEYS[2], ARGV[3]) == 1 then return -1 end
local holder = redis.call('GET', KEYS[1])
if not holder then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 0
end
if holder == ARGV[1] then return 0 end
return math.max(1, redis.call('PTTL', KEYS[1]))
