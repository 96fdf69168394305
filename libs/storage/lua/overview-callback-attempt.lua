--[[
  Counts an attempt into the Overview once it is recorded, run right after the script that records
  it and in the same round trip. It counts only if the attempt log holds this very attempt: a re-run
  after a crash finds the first run's attempt there (another send time) and counts nothing, and so
  does a record that did not happen.

  Input:
    KEYS[1] the callback's record
    KEYS[2] its attempt log
    KEYS[3..] the Overview buckets of the record's time (includes/overview-buckets)

    ARGV[1] the attempt's field in the log
    ARGV[2] the start of the attempt as the record stores it, without its number ('[' and what follows the number)
    ARGV[3] the record's now (ms), which a delivery writes as delivered_ms
    ARGV[4] '1' if the attempt delivered
    ARGV[5] its automatic attempt (1-6), 0 for a manual one
    ARGV[6] '1' if it was the ladder's last automatic attempt (none follows a failure)
    ARGV[7] the callback's state before the attempt, as the caller read it
    ARGV[8] the latency bucket of a delivery (index), or ''
    ARGV[9] the destination's origin when the failure counts against it, or ''
    ARGV[10] the failure as buckets keep it: '<sent ms> <error class> <status or ->'
    ARGV[11] most destinations one bucket names
    ARGV[12..] when each bucket expires (Unix ms), in KEYS order

  Output:
    1 counted, 0 not
]]
--- @include "includes/overview-buckets"
local stored = redis.call('HGET', KEYS[2], ARGV[1])
if not stored then return 0 end
local comma = string.find(stored, ',', 1, true)
if not comma or string.sub(stored, comma + 1, comma + #ARGV[2] - 1) ~= string.sub(ARGV[2], 2) then return 0 end
local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local cb = cjson.decode(raw)

local buckets = overview_buckets(3, 12)
local delivered = ARGV[4] == '1'
local first = tonumber(ARGV[5]) == 1
if first then
  overview_add(buckets, '1', 1)
  -- Attempt 1 is made only while the callback is pending: its delivery ends the callback's wait.
  if delivered then overview_add(buckets, '1d', 1) end
else
  overview_add(buckets, 'a', 1)
end
if not delivered then overview_add(buckets, 'ae', 1) end
-- delivered_ms is written only by the delivery that ends the callback's wait: this one, if it is now.
if delivered and tonumber(cb.delivered_ms) == tonumber(ARGV[3]) then
  if ARGV[7] == 'failed' then
    overview_add(buckets, 'r', 1)
  elseif not first then
    overview_add(buckets, 'd', 1)
  end
  if ARGV[8] ~= '' then overview_add(buckets, 'l' .. ARGV[8], 1) end
elseif not delivered and tonumber(ARGV[5]) > 0 and ARGV[6] == '1' and ARGV[7] == 'pending' and cb.state == 'failed' then
  overview_add(buckets, 'f', 1)
end
if ARGV[9] ~= '' then overview_fail_at(buckets, ARGV[9], ARGV[10], tonumber(ARGV[11])) end
return 1
